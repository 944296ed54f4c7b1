//! lance-host: read Lance tables from C and C++ database engines.
//!
//! The safe Rust layer (`session`, `snapshot`, `scan`, ...) holds all logic; `ffi` is the C ABI
//! on top of it. See `include/lance_host.h` for the C API.

pub mod catalog;
pub mod error;
pub mod ffi;
pub mod index;
pub mod merge;
pub mod plan;
pub mod prewarm;
pub mod scan;
pub mod redact;
pub mod refine;
pub mod runtime;
pub mod session;
pub mod search;
pub mod snapshot;
pub mod stats;
pub mod take;

pub use error::{HostError, LanceErrorCode, Result};

/// Rust allocations of the library go through mimalloc when built with the `mimalloc` feature.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
