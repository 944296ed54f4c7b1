//! The one integration test binary of lance-host. Every test calls the exported C functions.

mod common;
mod datacache;
mod edges;
mod dataset;
mod engine;
mod blob;
mod catalog;
mod errors;
mod fts;
mod fuzz;
mod header;
mod index_build;
mod index_distributed;
mod prewarm;
mod s3;
mod scan;
mod session;
mod vector;
mod write;
mod aggregate;
mod commit_checks;
mod write_s3;

#[global_allocator]
static ALLOC: common::CountingAlloc = common::CountingAlloc;
