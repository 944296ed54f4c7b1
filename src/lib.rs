//! lance-host: read, write and index Lance tables from C and C++ database engines.
//!
//! The safe Rust layer (`session`, `snapshot`, `scan`, ...) holds all logic; `ffi` is the C ABI
//! on top of it. See `include/lance_host.h` for the C API.

pub mod aggregate;
pub mod blob;
pub mod build_info;
pub(crate) mod bytes;
pub mod cancel;
pub mod columns;
pub mod datacache;
pub mod decode;
pub mod branch;
pub mod catalog;
pub mod changes;
pub mod count;
pub mod dynamic_filter;
pub mod error;
pub mod fts;
pub mod ffi;
pub mod index;
pub mod index_build;
pub mod key_filter;
pub(crate) mod lance_env;
pub mod logging;
pub mod merge;
pub mod metrics;
pub mod split;
pub mod prewarm;
pub mod read_split;
pub mod scan;
pub mod redact;
pub mod refine;
pub mod runtime;
pub mod session;
pub mod search;
pub mod snapshot;
pub mod sql_text;
pub mod table_statistics;
pub mod io_stats;
pub mod storage;
pub mod stream;
pub mod take;
pub mod wake;
pub mod write;

pub use error::{HostError, LanceErrorCode, Result};

/// Rust allocations of the library go through mimalloc when built with the `mimalloc` feature.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc commits its arenas eagerly by default and then never returns their freed pages to
/// the OS: a take of 1,000 rows peaked at 280 MiB RSS instead of 70 MiB (bench). Committing on
/// demand lets freed memory be purged. Set at load time, before the first allocation, by an
/// initializer placed beside the allocator (so the linker keeps it wherever it keeps that).
#[cfg(all(feature = "mimalloc", target_os = "linux"))]
mod mimalloc_options {
    extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    /// `mi_option_arena_eager_commit` in mimalloc's option enum.
    const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

    extern "C" fn configure() {
        // SAFETY: mi_option_set only stores an option value; it allocates nothing.
        unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) };
    }

    #[used]
    #[link_section = ".init_array"]
    static CONFIGURE: extern "C" fn() = configure;
}
