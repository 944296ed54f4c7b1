//! The one integration test binary of lance-host. Every test calls the exported C functions.

mod common;
mod dataset;
mod catalog;
mod errors;
mod header;
mod scan;
mod session;
mod vector;
