//! The one process-wide session: Lance caches (index + metadata) and the async runtime that
//! every call of the library shares.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use lance::session::Session;
use lance_core::cache::{CacheBackend, LanceCache, QuickCacheBackend, QuickCacheShardPolicy};
use lance_io::object_store::ObjectStoreRegistry;

use crate::datacache::{DataCache, DataCacheConfig, DataCacheStats};
use crate::error::{HostError, Result};

/// Default index cache budget: 1 GiB.
pub const LANCE_DEFAULT_INDEX_CACHE_BYTES: u64 = 1 << 30;
/// Default metadata cache budget: 256 MiB.
pub const LANCE_DEFAULT_METADATA_CACHE_BYTES: u64 = 256 << 20;
/// I/O buffer of a scan of a local table unless configured: 64 MiB (see the
/// memory/throughput curve in bench/REPORT.md).
pub const LANCE_DEFAULT_SCAN_IO_BUFFER_BYTES: u64 = 64 << 20;
/// Fragments a scan of a local table reads concurrently unless configured.
pub const LANCE_DEFAULT_SCAN_FRAGMENT_READAHEAD: u32 = 2;
/// Upper bound for runtime worker threads.
pub const LANCE_MAX_WORKER_THREADS: u32 = 1024;

/// Settings of the global session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    pub index_cache_bytes: u64,
    pub metadata_cache_bytes: u64,
    /// Worker threads of the async runtime.
    pub worker_threads: u32,
    /// Default I/O buffer of each scan in bytes (reads queued but not yet decoded); a scan's
    /// own `io_buffer_bytes` overrides it. 0 = automatic (64 MiB for local tables, Lance's
    /// default for object stores).
    pub scan_io_buffer_bytes: u64,
    /// Default number of batches each scan decodes ahead; 0 = Lance's default (one per core).
    pub scan_batch_readahead: u32,
    /// Default number of fragments each scan reads concurrently; 0 = automatic (2 for local
    /// tables, Lance's default for object stores).
    pub scan_fragment_readahead: u32,
    /// The data cache of object-store reads (see `datacache`).
    pub data_cache: DataCacheConfig,
}

impl Default for SessionConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Self {
            index_cache_bytes: LANCE_DEFAULT_INDEX_CACHE_BYTES,
            metadata_cache_bytes: LANCE_DEFAULT_METADATA_CACHE_BYTES,
            worker_threads: cores.clamp(1, LANCE_MAX_WORKER_THREADS as usize) as u32,
            scan_io_buffer_bytes: 0,
            scan_batch_readahead: 0,
            scan_fragment_readahead: 0,
            data_cache: DataCacheConfig::default(),
        }
    }
}

impl SessionConfig {
    pub fn validate(&self) -> Result<()> {
        if self.worker_threads == 0 {
            return Err(HostError::invalid("worker_threads must be at least 1"));
        }
        if self.worker_threads > LANCE_MAX_WORKER_THREADS {
            return Err(HostError::invalid(format!(
                "worker_threads {} exceeds the maximum of {LANCE_MAX_WORKER_THREADS}",
                self.worker_threads
            )));
        }
        let limit = isize::MAX as u64;
        if self.index_cache_bytes > limit {
            return Err(HostError::invalid(format!(
                "index_cache_bytes {} does not fit in this platform's address space",
                self.index_cache_bytes
            )));
        }
        if self.metadata_cache_bytes > limit {
            return Err(HostError::invalid(format!(
                "metadata_cache_bytes {} does not fit in this platform's address space",
                self.metadata_cache_bytes
            )));
        }
        if self.scan_io_buffer_bytes > limit {
            return Err(HostError::invalid(format!(
                "scan_io_buffer_bytes {} does not fit in this platform's address space",
                self.scan_io_buffer_bytes
            )));
        }
        self.data_cache.validate()
    }
}

/// The running session: Lance session plus the runtime that drives it.
pub struct HostSession {
    pub config: SessionConfig,
    pub lance: Arc<Session>,
    /// A second handle on the backend of Lance's index cache (same entries, same budget), for
    /// the entries prewarm loads that Lance only builds inside a search (see `prewarm`).
    pub index_cache: LanceCache,
    /// A third handle on the same backend (same budget) for the tokenized unindexed fragments
    /// of full-text columns (see `fts::tail`); its own hit and miss counts.
    pub text_tail_cache: LanceCache,
    /// The data cache of object-store reads; `None` when configured off.
    pub data_cache: Option<Arc<DataCache>>,
    pub runtime: tokio::runtime::Runtime,
    /// The process that started the session: its runtime's threads do not survive a fork().
    pub pid: u32,
}

static PENDING_CONFIG: Mutex<Option<SessionConfig>> = Mutex::new(None);
static SESSION: OnceLock<HostSession> = OnceLock::new();

/// Record the settings used when the session starts. Allowed only before first use; a second
/// call must repeat the same values.
pub fn configure(config: SessionConfig) -> Result<()> {
    config.validate()?;
    let mut pending = PENDING_CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(running) = SESSION.get() {
        return Err(HostError::precondition(format!(
            "the session is already running (worker_threads={}, index_cache_bytes={}, \
             metadata_cache_bytes={}); configure must be called before first use",
            running.config.worker_threads,
            running.config.index_cache_bytes,
            running.config.metadata_cache_bytes
        )));
    }
    match &*pending {
        Some(existing) if *existing != config => Err(HostError::precondition(
            "the session was already configured with different values",
        )),
        _ => {
            *pending = Some(config);
            Ok(())
        }
    }
}

/// A child forked (without exec) from a process that started the session cannot use it: the
/// runtime's worker threads, which every call waits on, exist only in the parent. Such a call
/// fails at once instead of waiting forever.
fn same_process(s: &'static HostSession) -> Result<&'static HostSession> {
    let pid = std::process::id();
    if pid != s.pid {
        return Err(HostError::precondition(format!(
            "lance-host was started in process {} and this is process {pid}, forked from it \
             without exec: a forked child cannot use the library (its runtime threads did not \
             survive the fork). Use lance-host in the parent only, fork before its first use, or \
             exec a new program in the child",
            s.pid
        )));
    }
    Ok(s)
}

/// The global session, created on first use with the configured or default settings.
pub fn global() -> Result<&'static HostSession> {
    if let Some(s) = SESSION.get() {
        return same_process(s);
    }
    // Hold the config lock while creating so `configure` cannot race with start-up.
    let pending = PENDING_CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = SESSION.get() {
        return same_process(s);
    }
    // Lance's own environment settings, before any Lance code reads (and would panic on) them.
    crate::lance_env::check()?;
    let config = pending.clone().unwrap_or_default();
    let runtime = crate::runtime::build(config.worker_threads)?;
    let data_cache = crate::runtime::block_on(&runtime, DataCache::build(&config.data_cache))??;
    // The index cache Lance's `Session::new` builds (one weight budget for every entry), created
    // here so the library keeps a handle on the same backend.
    let backend: Arc<dyn CacheBackend> = Arc::new(QuickCacheBackend::with_shard_policy(
        config.index_cache_bytes as usize,
        QuickCacheShardPolicy::Single,
    ));
    let lance = Arc::new(Session::with_index_cache_backend(
        backend.clone(),
        config.metadata_cache_bytes as usize,
        Arc::new(ObjectStoreRegistry::default()),
    ));
    let _ = SESSION.set(HostSession {
        config,
        lance,
        index_cache: LanceCache::with_backend(backend.clone()),
        text_tail_cache: LanceCache::with_backend(backend),
        data_cache,
        runtime,
        pid: std::process::id(),
    });
    drop(pending);
    Ok(SESSION.get().expect("session was just set"))
}

/// Run a future to completion on the global runtime (see `runtime::block_on`).
pub fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    crate::runtime::block_on(&global()?.runtime, fut)
}

/// Run a future as a task on a worker of the global runtime and wait for it (see
/// `runtime::run_on_worker`): for calls that drain a plan to its end.
pub fn run_on_worker<F>(fut: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::runtime::run_on_worker(&global()?.runtime, fut)
}

/// Cache statistics of the global session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    pub index_hits: u64,
    pub index_misses: u64,
    pub index_entries: u64,
    pub index_bytes: u64,
    pub metadata_hits: u64,
    pub metadata_misses: u64,
    pub metadata_entries: u64,
    pub metadata_bytes: u64,
    /// The data cache's figures (all 0 when it is off).
    pub data_cache: DataCacheStats,
    /// Unindexed fragments of full-text columns found tokenized in the index cache, and those
    /// tokenized because they were not (their entries count in `index_entries`/`index_bytes`).
    pub text_tail_hits: u64,
    pub text_tail_misses: u64,
}

pub fn stats() -> Result<SessionStats> {
    let session = global()?;
    let lance = session.lance.clone();
    let tail = session.text_tail_cache.clone();
    let data_cache = session.data_cache.as_ref().map(|c| c.stats()).unwrap_or_default();
    block_on(async move {
        let index = lance.index_cache_stats().await;
        let meta = lance.metadata_cache_stats().await;
        let tail = tail.stats().await;
        SessionStats {
            index_hits: index.hits,
            index_misses: index.misses,
            index_entries: index.num_entries as u64,
            index_bytes: index.size_bytes as u64,
            metadata_hits: meta.hits,
            metadata_misses: meta.misses,
            metadata_entries: meta.num_entries as u64,
            metadata_bytes: meta.size_bytes as u64,
            data_cache,
            text_tail_hits: tail.hits,
            text_tail_misses: tail.misses,
        }
    })
}

/// Wait until every block the data cache holds so far is written to its disk tier (nothing to
/// do without one). For a planned shutdown: a process that exits right after its last read may
/// otherwise leave the newest blocks unwritten (the tier stays consistent either way).
pub fn flush_data_cache() -> Result<()> {
    let session = global()?;
    match session.data_cache.clone() {
        Some(c) => block_on(async move { c.flush().await }),
        None => Ok(()),
    }
}
