//! C ABI of the global session.

use crate::error::Result;
use crate::session::{self, SessionConfig, SessionStats};

use super::{guard_code, out_arg};

/// Settings of the process-wide session. Fill with `lance_session_options_default` first, then
/// change what you need.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceSessionOptions {
    /// Budget of the index cache in bytes (shared by every table and handle).
    pub index_cache_bytes: u64,
    /// Budget of the metadata cache in bytes (manifests, file metadata).
    pub metadata_cache_bytes: u64,
    /// Worker threads of the async runtime; at least 1, at most 1024.
    pub worker_threads: u32,
    /// Batches each scan decodes ahead unless its options say otherwise; 0 = Lance's
    /// default (one per core).
    pub scan_batch_readahead: u32,
    /// Fragments each scan reads concurrently unless its options say otherwise; 0 = automatic:
    /// 2 for local tables, Lance's default for object stores (deeper read-ahead hides request
    /// latency).
    pub scan_fragment_readahead: u32,
    /// Bytes of reads each scan may queue ahead of decoding unless its options say
    /// otherwise; 0 = automatic: 64 MiB for local tables, Lance's default for object stores
    /// (32 MiB per I/O thread).
    pub scan_io_buffer_bytes: u64,
}

/// Cache statistics of the process-wide session.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct LanceSessionStats {
    pub index_hits: u64,
    pub index_misses: u64,
    pub index_entries: u64,
    pub index_bytes: u64,
    pub metadata_hits: u64,
    pub metadata_misses: u64,
    pub metadata_entries: u64,
    pub metadata_bytes: u64,
}

impl From<SessionConfig> for LanceSessionOptions {
    fn from(c: SessionConfig) -> Self {
        Self {
            index_cache_bytes: c.index_cache_bytes,
            metadata_cache_bytes: c.metadata_cache_bytes,
            worker_threads: c.worker_threads,
            scan_batch_readahead: c.scan_batch_readahead,
            scan_fragment_readahead: c.scan_fragment_readahead,
            scan_io_buffer_bytes: c.scan_io_buffer_bytes,
        }
    }
}

impl From<SessionStats> for LanceSessionStats {
    fn from(s: SessionStats) -> Self {
        Self {
            index_hits: s.index_hits,
            index_misses: s.index_misses,
            index_entries: s.index_entries,
            index_bytes: s.index_bytes,
            metadata_hits: s.metadata_hits,
            metadata_misses: s.metadata_misses,
            metadata_entries: s.metadata_entries,
            metadata_bytes: s.metadata_bytes,
        }
    }
}

/// Fill `out` with the default settings (1 GiB index cache, 256 MiB metadata cache, one worker
/// thread per core; scans: automatic memory bounds — 64 MiB I/O buffer and 2 fragments read
/// concurrently for local tables, Lance's defaults for object stores — and one batch decoded
/// ahead per core).
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL.
#[no_mangle]
pub extern "C" fn lance_session_options_default(out: *mut LanceSessionOptions) -> i32 {
    guard_code(|| {
        let out = out_arg(out, "out")?;
        *out = SessionConfig::default().into();
        Ok(())
    })
}

/// Set the settings of the process-wide session. Allowed only before the first call that uses
/// the session (opening a table, a catalog, reading stats); a repeated call with identical
/// values succeeds.
///
/// Borrows `options` for the duration of the call. Thread-safe.
/// Errors: LANCE_ERR_INVALID_ARGUMENT for NULL or invalid values (0 or more than 1024 worker
/// threads, sizes beyond the address space) — nothing is recorded, a corrected call may
/// follow; LANCE_ERR_FAILED_PRECONDITION after first use or when different values were
/// already configured — the running session is unaffected.
#[no_mangle]
pub extern "C" fn lance_session_configure(options: *const LanceSessionOptions) -> i32 {
    guard_code(|| {
        let options = super::handle_ref(options, "options")?;
        session::configure(SessionConfig {
            index_cache_bytes: options.index_cache_bytes,
            metadata_cache_bytes: options.metadata_cache_bytes,
            worker_threads: options.worker_threads,
            scan_io_buffer_bytes: options.scan_io_buffer_bytes,
            scan_batch_readahead: options.scan_batch_readahead,
            scan_fragment_readahead: options.scan_fragment_readahead,
        })
    })
}

/// Write the cache statistics of the process-wide session into `out` (starting the session if
/// it has not started yet).
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL; `out` is not written on
/// failure.
#[no_mangle]
pub extern "C" fn lance_session_stats(out: *mut LanceSessionStats) -> i32 {
    guard_code(|| {
        let out = out_arg(out, "out")?;
        let stats: Result<SessionStats> = session::stats();
        *out = stats?.into();
        Ok(())
    })
}

/// A call context: a cancellation handle with an optional deadline that a host binds to a
/// thread. Opaque; create with `lance_call_context_new`, free with `lance_call_context_free`.
pub struct LanceCallContext {
    token: crate::cancel::Token,
}

/// Create a call context whose deadline is `timeout_ms` milliseconds from now (0 = none).
///
/// Caller owns the result; free it with `lance_call_context_free`. Thread-safe. Never fails
/// for valid input; returns NULL (and sets the last error) only for an out-of-range timeout.
#[no_mangle]
pub extern "C" fn lance_call_context_new(timeout_ms: u64) -> *mut LanceCallContext {
    super::guard_ptr(|| {
        let timeout = (timeout_ms > 0).then(|| std::time::Duration::from_millis(timeout_ms));
        Ok(super::into_handle(LanceCallContext {
            token: crate::cancel::Token::new(timeout),
        }))
    })
}

/// Bind `context` to the calling thread (NULL unbinds). While bound, every blocking call of
/// this library on this thread — open, catalog calls, planning, take, refine, prewarm, count,
/// statistics, starting a scan or search — fails with LANCE_ERR_CANCELLED once the context is
/// cancelled and with LANCE_ERR_TIMEOUT once its deadline passes, and stops its work. Streams
/// created while it is bound observe it for their whole life: their `get_next` then returns
/// ECANCELED (125) or ETIMEDOUT (110). The binding keeps the context alive, so it may be freed
/// while bound; binding another context replaces it.
///
/// Thread-safe (affects only the calling thread). Returns LANCE_OK, or LANCE_ERR_INVALID_ARGUMENT
/// for a context that is not valid.
#[no_mangle]
pub extern "C" fn lance_call_context_enter(context: *const LanceCallContext) -> i32 {
    super::guard_code(|| {
        let token = if context.is_null() {
            None
        } else {
            Some(super::handle_ref(context, "context")?.token.clone())
        };
        crate::cancel::set_current(token);
        Ok(())
    })
}

/// Cancel `context`: calls bound to it on any thread stop with LANCE_ERR_CANCELLED, its
/// streams' `get_next` with ECANCELED. Idempotent.
///
/// Thread-safe: may be called from any thread while others are blocked in calls bound to it.
/// Returns LANCE_OK, or LANCE_ERR_INVALID_ARGUMENT for NULL.
#[no_mangle]
pub extern "C" fn lance_call_context_cancel(context: *const LanceCallContext) -> i32 {
    super::guard_code(|| {
        super::handle_ref(context, "context")?.token.cancel();
        Ok(())
    })
}

/// Free a call context. NULL is ignored. Threads it is bound to keep it until they unbind it.
/// Call once; not concurrently with `lance_call_context_cancel` on the same handle.
#[no_mangle]
pub extern "C" fn lance_call_context_free(context: *mut LanceCallContext) {
    super::guard_free(|| super::free_handle(context))
}
