//! C ABI of the global session.

use std::ffi::{c_char, c_void};

use crate::datacache::DataCacheConfig;
use crate::error::Result;
use crate::session::{self, SessionConfig, SessionStats};

use super::sized::{init_out, read_in, required_out, Extensible, Layout};
use super::{guard_code, out_arg};

/// Settings of the process-wide session. Fill with
/// `lance_session_options_default_v2(&o, sizeof o)` first, then change what you need.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceSessionOptions {
    /// `sizeof(LanceSessionOptions)` as the caller compiled it; set by
    /// `lance_session_options_default_v2` (see "ABI compatibility" in the README).
    pub struct_size: usize,
    /// Budget of the index cache in bytes (shared by every table and handle).
    pub index_cache_bytes: u64,
    /// Budget of the metadata cache in bytes (manifests, file metadata).
    pub metadata_cache_bytes: u64,
    /// Worker threads of the async runtime; at least 1, at most 1024. The same number (at
    /// least 2) also caps the threads that run blocking work such as local file reads.
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
    /// Memory tier of the data cache in bytes: blocks of data, deletion and index files of
    /// tables on object storage (never manifests; local tables do not use it). 0 = the default,
    /// 256 MiB; at least four blocks otherwise. `data_cache_disabled` turns it off. (Since 0.3.)
    pub data_cache_memory_bytes: u64,
    /// Disk tier budget in bytes: the files in `data_cache_disk_dir` never grow beyond it.
    /// 0 = the default, 1 GiB, when a directory is given; at least 64 blocks. (Since 0.3.)
    pub data_cache_disk_bytes: u64,
    /// Block size of the data cache: reads are cached and fetched in aligned blocks of this
    /// size; a power of two from 4 KiB to 16 MiB. 0 = the default, 64 KiB. (Since 0.3.)
    pub data_cache_block_bytes: u64,
    /// Directory of the disk tier (UTF-8, created if missing), or NULL for none (the default).
    /// Its contents survive a restart and are verified (checksums) before use. Only one process
    /// at a time uses a directory: another process configured with the same directory runs the
    /// data cache in memory only (a warning goes to the log callback and its
    /// `LanceSessionStats::data_cache_disk_enabled` is 0). The string is copied; it may be
    /// freed after `lance_session_configure_v2` returns. (Since 0.3.)
    pub data_cache_disk_dir: *const c_char,
    /// Non-zero: no data cache at all (every read goes to storage). Default 0. (Since 0.3.)
    pub data_cache_disabled: u32,
}

/// Cache statistics of the process-wide session. Set `struct_size = sizeof(LanceSessionStats)`
/// before passing it to `lance_session_stats_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceSessionStats {
    /// `sizeof(LanceSessionStats)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    pub index_hits: u64,
    pub index_misses: u64,
    pub index_entries: u64,
    pub index_bytes: u64,
    pub metadata_hits: u64,
    pub metadata_misses: u64,
    pub metadata_entries: u64,
    pub metadata_bytes: u64,
    /// Data cache (since 0.3): blocks served from either tier.
    pub data_cache_hits: u64,
    /// Blocks that were not cached and were read from storage.
    pub data_cache_misses: u64,
    /// Bytes of reads served from cached blocks.
    pub data_cache_hit_bytes: u64,
    /// Requests the data cache sent to storage (one per run of missing blocks).
    pub data_cache_storage_requests: u64,
    /// Bytes those requests returned.
    pub data_cache_storage_bytes: u64,
    /// Blocks evicted from the memory tier to stay within its budget.
    pub data_cache_evictions: u64,
    /// Disk-tier entries found damaged or unreadable by this library's checks, dropped and
    /// read again from storage, plus disk-tier I/O errors (entries the disk engine's own
    /// checksum rejects count as misses, not here).
    pub data_cache_errors: u64,
    /// Bytes the memory tier holds now (block bytes plus per-entry overhead).
    pub data_cache_memory_bytes: u64,
    /// Bytes the disk tier's files occupy on disk now.
    pub data_cache_disk_bytes: u64,
    /// The memory budget in effect (0 = data cache off).
    pub data_cache_memory_capacity: u64,
    /// The disk budget in effect (0 = no disk tier in this process).
    pub data_cache_disk_capacity: u64,
    /// 1 when this process uses the disk tier, 0 otherwise.
    pub data_cache_disk_enabled: u64,
    /// Blocks the disk tier did not write because its write queue was full: they stay in the
    /// memory tier, but a restarted process reads them from storage again.
    pub data_cache_disk_write_drops: u64,
    /// Full-text search (since 0.8): unindexed fragments of full-text columns found already
    /// tokenized in the index cache (each is tokenized once per process and table state, then
    /// shared by the statistics pass and the flat splits of every query).
    pub text_tail_hits: u64,
    /// Unindexed fragments tokenized because they were not cached (their entries count in
    /// `index_entries` and `index_bytes`, within the index cache's budget).
    pub text_tail_misses: u64,
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields and one pointer (an
// all-zero value is NULL); 0.1 layout 40 bytes.
unsafe impl Extensible for LanceSessionOptions {
    const NAME: &'static str = "LanceSessionOptions";
    const MIN_SIZE: usize = 48;
    const V0_SIZE: usize = 40;
    fn initial() -> Self {
        SessionConfig::default().into()
    }
}

impl Default for LanceSessionStats {
    fn default() -> Self {
        SessionStats::default().into()
    }
}

// SAFETY: repr(C), leading struct_size, all u64; 0.1 layout 64 bytes.
unsafe impl Extensible for LanceSessionStats {
    const NAME: &'static str = "LanceSessionStats";
    const MIN_SIZE: usize = 72;
    const V0_SIZE: usize = 64;
    fn initial() -> Self {
        Self::default()
    }
}

impl From<SessionConfig> for LanceSessionOptions {
    fn from(c: SessionConfig) -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            index_cache_bytes: c.index_cache_bytes,
            metadata_cache_bytes: c.metadata_cache_bytes,
            worker_threads: c.worker_threads,
            scan_batch_readahead: c.scan_batch_readahead,
            scan_fragment_readahead: c.scan_fragment_readahead,
            scan_io_buffer_bytes: c.scan_io_buffer_bytes,
            data_cache_memory_bytes: c.data_cache.memory_bytes,
            data_cache_disk_bytes: c.data_cache.disk_bytes,
            data_cache_block_bytes: c.data_cache.block_bytes,
            data_cache_disk_dir: std::ptr::null(),
            data_cache_disabled: (c.data_cache.memory_bytes == 0) as u32,
        }
    }
}

impl From<SessionStats> for LanceSessionStats {
    fn from(s: SessionStats) -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            index_hits: s.index_hits,
            index_misses: s.index_misses,
            index_entries: s.index_entries,
            index_bytes: s.index_bytes,
            metadata_hits: s.metadata_hits,
            metadata_misses: s.metadata_misses,
            metadata_entries: s.metadata_entries,
            metadata_bytes: s.metadata_bytes,
            data_cache_hits: s.data_cache.hits,
            data_cache_misses: s.data_cache.misses,
            data_cache_hit_bytes: s.data_cache.hit_bytes,
            data_cache_storage_requests: s.data_cache.storage_requests,
            data_cache_storage_bytes: s.data_cache.storage_bytes,
            data_cache_evictions: s.data_cache.evictions,
            data_cache_errors: s.data_cache.errors,
            data_cache_memory_bytes: s.data_cache.memory_bytes,
            data_cache_disk_bytes: s.data_cache.disk_bytes,
            data_cache_memory_capacity: s.data_cache.memory_capacity,
            data_cache_disk_capacity: s.data_cache.disk_capacity,
            data_cache_disk_enabled: s.data_cache.disk_enabled as u64,
            data_cache_disk_write_drops: s.data_cache.disk_write_drops,
            text_tail_hits: s.text_tail_hits,
            text_tail_misses: s.text_tail_misses,
        }
    }
}

/// Fill `out` with the default settings (1 GiB index cache, 256 MiB metadata cache, one worker
/// thread per core; scans: automatic memory bounds — 64 MiB I/O buffer and 2 fragments read
/// concurrently for local tables, Lance's defaults for object stores — and one batch decoded
/// ahead per core; data cache: 256 MiB memory tier, 64 KiB blocks, no disk tier).
///
/// `out` is a caller's struct of `struct_size` bytes (pass `sizeof *out`); `out->struct_size`
/// is set.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is
/// smaller than the first sized `LanceSessionOptions`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_session_options_default_v2(out: *mut LanceSessionOptions, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Set the settings of the process-wide session. Allowed only before the first call that uses
/// the session (opening a table, a catalog, reading stats); a repeated call with identical
/// values succeeds. That first call starts the session and fails with
/// LANCE_ERR_INVALID_ARGUMENT, naming the variable, when one of Lance's environment settings
/// holds a value Lance cannot use (`LANCE_MAX_IOP_SIZE` "16MiB", `LANCE_CPU_THREADS` 0, ...;
/// docs/operations.md lists them); nothing starts, and a call after the variable is corrected
/// starts the session with these settings.
///
/// Borrows `options` for the duration of the call. Thread-safe.
/// Errors: LANCE_ERR_INVALID_ARGUMENT for NULL or invalid values (0 or more than 1024 worker
/// threads, sizes beyond the address space, a data cache block size that is not a power of two
/// in 4 KiB..16 MiB, a memory tier below four blocks, a disk directory without a disk budget or
/// the reverse, a disk budget below the minimum, a directory that is not UTF-8) — nothing is
/// recorded, a corrected call may
/// follow; LANCE_ERR_FAILED_PRECONDITION after first use or when different values were
/// already configured — the running session is unaffected.
#[no_mangle]
pub extern "C" fn lance_session_configure_v2(options: *const LanceSessionOptions) -> i32 {
    session_configure(options, Layout::Sized)
}

pub(crate) fn session_configure(options: *const LanceSessionOptions, layout: Layout) -> i32 {
    guard_code(|| {
        let options = read_in(options, layout, "options")?
            .ok_or_else(|| crate::error::HostError::invalid("options is NULL"))?;
        let disk_dir = super::opt_str_arg(options.data_cache_disk_dir, "data_cache_disk_dir")?;
        session::configure(SessionConfig {
            data_cache: DataCacheConfig::from_options(
                options.data_cache_disabled != 0,
                options.data_cache_memory_bytes,
                disk_dir.map(std::path::PathBuf::from),
                options.data_cache_disk_bytes,
                options.data_cache_block_bytes,
            ),
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
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or its `struct_size` is too
/// small; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_session_stats_v2(out: *mut LanceSessionStats) -> i32 {
    session_stats(out, Layout::Sized)
}

pub(crate) fn session_stats(out: *mut LanceSessionStats, layout: Layout) -> i32 {
    guard_code(|| {
        let out = required_out(out, layout, "out")?;
        let stats: Result<SessionStats> = session::stats();
        out.write(&stats?.into());
        Ok(())
    })
}

/// Wait until the blocks the data cache took in since the last flush are on its disk tier,
/// writing again those the tier skipped while its write queue was full (they are still in the
/// memory tier); returns at once without a disk tier. Call it before a planned shutdown so the
/// next process finds the newest blocks too (without it the tier stays consistent, it may only
/// lack the last blocks).
///
/// Thread-safe; starts the session if it has not started. Errors: what starting the session
/// can fail with (LANCE_ERR_INVALID_ARGUMENT for a disk directory that cannot be created or a
/// Lance environment setting Lance cannot use).
#[no_mangle]
pub extern "C" fn lance_session_flush_data_cache() -> i32 {
    guard_code(session::flush_data_cache)
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

/// Receives one progress report of a long call (index builds, writes, compaction, cleanup): the
/// stage's name (an index build's are Lance's, e.g. "train_ivf", "train_pq", "shuffle",
/// "load_data"; then "write", "compact", "cleanup"; valid only during the call), units `done`
/// of `total` (0 = unknown), what a unit is ("rows", "partitions", "batches", ...; valid only
/// during the call), and the `user_data` given to `lance_call_context_set_progress`.
pub type LanceProgressCallback = Option<
    unsafe extern "C" fn(stage: *const c_char, done: u64, total: u64, unit: *const c_char, user_data: *mut c_void),
>;

/// Send the progress reports of calls bound to `context` to `callback`; NULL stops them. Index
/// builds report training, shuffling, writing and merging, each with done / total; one-call and
/// staged writes and merge-inserts (their source) report stage "write": rows taken from the
/// host's stream so far, every 65,536 rows, with total 0 until the stream ends (then done =
/// total = its rows; a failed stream never reports its end); compaction reports "compact",
/// rewrite tasks done of all (none when there is nothing to do); cleanup reports "cleanup", 3
/// steps (old versions and their files, statement records, staging manifests). Each stage
/// reports done = 0 when it starts and done = total when it ends. Reports come from library
/// threads one at a time (never concurrently for one context), while the call runs; the
/// callback must not call into this library and should return quickly. `user_data` must stay
/// valid until the context is freed or the callback replaced.
///
/// Thread-safe. Returns LANCE_OK, or LANCE_ERR_INVALID_ARGUMENT for a NULL context. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_call_context_set_progress(
    context: *const LanceCallContext,
    callback: LanceProgressCallback,
    user_data: *mut c_void,
) -> i32 {
    super::guard_code(|| {
        let token = &super::handle_ref(context, "context")?.token;
        let reporter: Option<crate::cancel::Reporter> = callback.map(|cb| {
            let data = UserData(user_data);
            let r: crate::cancel::Reporter = std::sync::Arc::new(move |p: &crate::cancel::Progress| {
                let stage = super::owned_cstring(p.stage);
                let unit = super::owned_cstring(p.unit);
                let data = &data;
                // SAFETY: a host callback registered for exactly this call shape.
                unsafe { cb(stage.as_ptr(), p.done, p.total, unit.as_ptr(), data.0) }
            });
            r
        });
        token.set_progress(reporter);
        Ok(())
    })
}

/// Free a call context. NULL is ignored. Threads it is bound to keep it until they unbind it.
/// Call once; not concurrently with `lance_call_context_cancel` on the same handle.
#[no_mangle]
pub extern "C" fn lance_call_context_free(context: *mut LanceCallContext) {
    super::guard_free(|| super::free_handle(context))
}

/// Log levels of `lance_log_set_callback`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum LanceLogLevel {
    LANCE_LOG_OFF = 0,
    LANCE_LOG_ERROR = 1,
    LANCE_LOG_WARN = 2,
    LANCE_LOG_INFO = 3,
    LANCE_LOG_DEBUG = 4,
    LANCE_LOG_TRACE = 5,
}

/// Receives one log record: its `LanceLogLevel`, its target (the Lance module, e.g.
/// "lance::dataset::scanner") and its message — both valid only during the call — and the
/// `user_data` given at registration.
pub type LanceLogCallback = Option<
    unsafe extern "C" fn(level: i32, target: *const c_char, message: *const c_char, user_data: *mut c_void),
>;

struct UserData(*mut c_void);
// SAFETY: the host promises (header) that its callback and user data may be used from any
// thread; the library only passes the pointer back.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

/// Route the log records of the library and of Lance (object-store retries, slow requests,
/// index loading, cache activity, ...) at `level` or more severe to `callback`; NULL (or
/// LANCE_LOG_OFF) stops logging. Without a callback nothing is logged anywhere: the library
/// never writes to stdout or stderr by itself.
///
/// The callback runs on whatever thread logs (host threads and the runtime's workers), possibly
/// concurrently, and must be thread-safe; it must not call `lance_log_set_callback`. Thread-safe.
/// Returns LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for an unknown level;
/// LANCE_ERR_FAILED_PRECONDITION if another logger already owns the process's Rust `log`
/// facade (then records cannot be routed).
#[no_mangle]
pub extern "C" fn lance_log_set_callback(callback: LanceLogCallback, user_data: *mut c_void, level: i32) -> i32 {
    super::guard_code(|| {
        let filter = match level {
            0 => log::LevelFilter::Off,
            1 => log::LevelFilter::Error,
            2 => log::LevelFilter::Warn,
            3 => log::LevelFilter::Info,
            4 => log::LevelFilter::Debug,
            5 => log::LevelFilter::Trace,
            other => return Err(crate::error::HostError::invalid(format!("unknown log level {other}"))),
        };
        let sink: Option<crate::logging::Sink> = match callback {
            Some(cb) if filter != log::LevelFilter::Off => {
                let data = UserData(user_data);
                Some(Box::new(move |lvl: log::Level, target: &str, message: &str| {
                    let level = match lvl {
                        log::Level::Error => 1,
                        log::Level::Warn => 2,
                        log::Level::Info => 3,
                        log::Level::Debug => 4,
                        log::Level::Trace => 5,
                    };
                    let target = super::owned_cstring(target);
                    let message = super::owned_cstring(message);
                    let data = &data;
                    // SAFETY: a host callback registered for exactly this call shape.
                    unsafe { cb(level, target.as_ptr(), message.as_ptr(), data.0) }
                }))
            }
            _ => None,
        };
        crate::logging::set_sink(sink, filter)
    })
}

/// Number of session-level counters (see `lance_metric`). Thread-safe.
#[no_mangle]
pub extern "C" fn lance_metric_count() -> usize {
    super::guard_value(0, || Ok(crate::metrics::snapshot().len()))
}

/// Read counter `index` (0 <= index < `lance_metric_count()`): `*name` receives its stable
/// name (static storage; do not free), `*value` its current value. Counters only grow:
/// "ops.open", "ops.plan", "ops.scan", "ops.search", "ops.take", "ops.refine", "ops.merge",
/// "ops.prewarm", "ops.count", "ops.statistics" (calls started), "stream.rows",
/// "stream.batches", "stream.bytes" (what streams handed to the host), "object_store.requests",
/// "object_store.bytes" (reads from object stores; local files are not counted),
/// "index_cache.hits", "index_cache.misses", "metadata_cache.hits", "metadata_cache.misses".
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT for NULL outputs or an index out of range;
/// outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_metric(index: usize, name: *mut *const c_char, value: *mut u64) -> i32 {
    super::guard_code(|| {
        let name = out_arg(name, "name")?;
        let value = out_arg(value, "value")?;
        let all = crate::metrics::snapshot();
        let (n, v) = super::item_at(&all, index, "metric")?;
        *name = metric_name(n);
        *value = *v;
        Ok(())
    })
}

/// The static C string of a metric name.
fn metric_name(name: &str) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<(&'static str, std::ffi::CString)>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        crate::metrics::snapshot()
            .into_iter()
            .map(|(n, _)| (n, super::owned_cstring(n)))
            .collect()
    });
    names
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| c.as_ptr())
        .unwrap_or(std::ptr::null())
}
