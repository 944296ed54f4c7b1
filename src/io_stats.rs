//! Per-operation I/O statistics: the object-store requests and bytes one scan, search, take
//! or prewarm caused (index files counted apart), and the index-cache hits and misses of its
//! plan — attributable to that operation even while others run concurrently on other threads.
//!
//! Each operation runs on its own view of the pinned dataset whose object store is wrapped by
//! a private counter; caches and the session stay shared.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use lance::dataset::scanner::Scanner;
use lance::Dataset;
use lance_io::object_store::{StorageOptionsAccessor, WrappingObjectStore};
use object_store::list::PaginatedListStore;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result as OSResult,
};

use crate::datacache::{Credential, DataCache, Observer};
use crate::snapshot::Snapshot;

/// A point-in-time copy of an operation's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Read requests sent to the object store (GET, range GET, HEAD).
    pub read_requests: u64,
    /// Bytes those requests returned.
    pub read_bytes: u64,
    /// The part of `read_requests` that read index files (`_indices/`).
    pub index_read_requests: u64,
    /// The part of `read_bytes` that came from index files.
    pub index_read_bytes: u64,
    /// Index-cache lookups of the operation's plan that hit (final once a stream has ended).
    pub index_cache_hits: u64,
    /// Index-cache lookups of the operation's plan that missed and went to storage.
    pub index_cache_misses: u64,
    /// Data-cache blocks the operation's reads found in the cache (memory or disk tier).
    pub data_cache_hits: u64,
    /// Data-cache blocks the operation's reads had to fetch from storage.
    pub data_cache_misses: u64,
    /// Bytes of the operation's reads served from the data cache.
    pub data_cache_hit_bytes: u64,
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    index_requests: AtomicU64,
    index_bytes: AtomicU64,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    data_hits: AtomicU64,
    data_misses: AtomicU64,
    data_hit_bytes: AtomicU64,
}

impl Observer for Counters {
    fn storage_read(&self, path: &Path, bytes: u64) {
        self.record_read(path, bytes);
    }

    fn cache_hit(&self, blocks: u64, bytes: u64) {
        self.data_hits.fetch_add(blocks, Ordering::Relaxed);
        self.data_hit_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn cache_miss(&self, blocks: u64) {
        self.data_misses.fetch_add(blocks, Ordering::Relaxed);
    }
}

impl Counters {
    fn record_read(&self, path: &Path, bytes: u64) {
        crate::metrics::object_store_read(bytes);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if path.as_ref().contains("_indices/") {
            self.index_requests.fetch_add(1, Ordering::Relaxed);
            self.index_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

/// The live counters of one operation.
#[derive(Debug, Clone, Default)]
pub struct OpStats {
    counters: Arc<Counters>,
}

impl OpStats {
    /// The snapshot's dataset with this operation's counter (and the session's data cache)
    /// around its object store. Local tables are returned as they are: Lance reads their files
    /// directly, not through the object store, so a counter there would see only a few
    /// incidental calls — local tables report 0 requests instead of an incomplete count, and
    /// the data cache (which would only copy the page cache) is not used for them.
    pub fn dataset(&self, snapshot: &Snapshot) -> Arc<Dataset> {
        if snapshot.is_local() {
            return snapshot.dataset.clone();
        }
        let wrapper: Arc<dyn WrappingObjectStore> = Arc::new(CountingWrapper {
            counters: self.counters.clone(),
            cache: crate::session::global()
                .ok()
                .and_then(|s| s.data_cache.clone())
                .filter(|_| crate::datacache::table_uses_cache(&snapshot.storage_options).unwrap_or(true)),
            endpoint: store_identity(&snapshot.storage_options),
            credential: CredentialSource::of(snapshot),
        });
        Arc::new(snapshot.dataset.with_object_store_wrappers([wrapper]))
    }

    /// `dataset`, counted but never through the data cache: for blob payloads, read by range
    /// (a cache block would turn a small range read into a whole-block request).
    pub fn dataset_uncached(&self, snapshot: &Snapshot) -> Arc<Dataset> {
        if snapshot.is_local() {
            return snapshot.dataset.clone();
        }
        let wrapper: Arc<dyn WrappingObjectStore> = Arc::new(CountingWrapper {
            counters: self.counters.clone(),
            cache: None,
            endpoint: store_identity(&snapshot.storage_options),
            credential: CredentialSource::of(snapshot),
        });
        Arc::new(snapshot.dataset.with_object_store_wrappers([wrapper]))
    }

    /// Collect the plan's index-cache counters when the scanner's stream finishes.
    pub fn attach(&self, scanner: &mut Scanner) {
        scanner.scan_stats_callback(self.callback());
    }

    /// The counters of several finished operations added up (e.g. the inputs of a merge).
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a OpStats>) -> OpStats {
        let total = OpStats::default();
        for p in parts {
            let s = p.snapshot();
            let c = &total.counters;
            c.requests.fetch_add(s.read_requests, Ordering::Relaxed);
            c.bytes.fetch_add(s.read_bytes, Ordering::Relaxed);
            c.index_requests.fetch_add(s.index_read_requests, Ordering::Relaxed);
            c.index_bytes.fetch_add(s.index_read_bytes, Ordering::Relaxed);
            c.cache_hits.fetch_add(s.index_cache_hits, Ordering::Relaxed);
            c.cache_misses.fetch_add(s.index_cache_misses, Ordering::Relaxed);
            c.data_hits.fetch_add(s.data_cache_hits, Ordering::Relaxed);
            c.data_misses.fetch_add(s.data_cache_misses, Ordering::Relaxed);
            c.data_hit_bytes.fetch_add(s.data_cache_hit_bytes, Ordering::Relaxed);
        }
        total
    }

    /// The callback that collects a plan's index-cache counters (for plans run without a
    /// scanner's stream).
    pub fn callback(&self) -> lance_datafusion::exec::ExecutionStatsCallback {
        let c = self.counters.clone();
        Arc::new(move |counts| {
            c.cache_hits.fetch_add(counts.index_cache_hits() as u64, Ordering::Relaxed);
            c.cache_misses.fetch_add(counts.index_cache_misses() as u64, Ordering::Relaxed);
        })
    }

    /// Add index-cache lookups counted by a plan executed without a scanner.
    pub fn add_index_cache(&self, hits: u64, misses: u64) {
        self.counters.cache_hits.fetch_add(hits, Ordering::Relaxed);
        self.counters.cache_misses.fetch_add(misses, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> IoStats {
        let c = &self.counters;
        IoStats {
            read_requests: c.requests.load(Ordering::Relaxed),
            read_bytes: c.bytes.load(Ordering::Relaxed),
            index_read_requests: c.index_requests.load(Ordering::Relaxed),
            index_read_bytes: c.index_bytes.load(Ordering::Relaxed),
            index_cache_hits: c.cache_hits.load(Ordering::Relaxed),
            index_cache_misses: c.cache_misses.load(Ordering::Relaxed),
            data_cache_hits: c.data_hits.load(Ordering::Relaxed),
            data_cache_misses: c.data_misses.load(Ordering::Relaxed),
            data_cache_hit_bytes: c.data_hit_bytes.load(Ordering::Relaxed),
        }
    }
}

#[derive(Debug)]
struct CountingWrapper {
    counters: Arc<Counters>,
    cache: Option<Arc<DataCache>>,
    /// The storage options that tell which server the store's prefix (scheme and bucket)
    /// lives on: two S3-compatible servers may have buckets of the same name.
    endpoint: String,
    /// The credential the store reads with: a cached block is served to it only once storage
    /// accepted it for that object (see `datacache::grants`).
    credential: CredentialSource,
}

/// Where the credential of a store's reads comes from.
#[derive(Debug, Clone)]
enum CredentialSource {
    /// The snapshot's options, which do not change; `expires_at`: when they say they expire.
    Fixed { credential: Credential, expires_at: Option<u64> },
    /// Options a catalog vended and refreshes (`snapshot::credentials`): the current ones.
    Refreshing(Arc<StorageOptionsAccessor>),
}

impl CredentialSource {
    fn of(snapshot: &Snapshot) -> CredentialSource {
        match snapshot.dataset.storage_options_accessor().filter(|a| a.has_provider()) {
            Some(accessor) => CredentialSource::Refreshing(accessor),
            None => CredentialSource::Fixed {
                credential: Credential::of(&snapshot.storage_options),
                expires_at: crate::snapshot::credentials::expires_at(&snapshot.storage_options),
            },
        }
    }

    /// The credential reads are made with now; None once it has expired (no grant covers it).
    /// A refresh that fails (the namespace revoked the table's access) fails the read.
    async fn current(&self) -> OSResult<Option<Credential>> {
        match self {
            CredentialSource::Fixed { credential, expires_at } => {
                let now = crate::snapshot::credentials::now_ms();
                Ok(if expires_at.is_some_and(|t| t <= now) { None } else { Some(*credential) })
            }
            CredentialSource::Refreshing(accessor) => {
                let options = accessor.get_storage_options().await.map_err(|e| object_store::Error::Generic {
                    store: "lance-host data cache",
                    source: Box::new(e),
                })?;
                Ok((!crate::snapshot::credentials::expired(&options.0)).then(|| Credential::of(&options.0)))
            }
        }
    }
}

/// The storage options that select the server (endpoints, account names), sorted, as one
/// string: with Lance's store prefix (scheme and bucket) it identifies the store in the data
/// cache's keys.
fn store_identity(options: &std::collections::HashMap<String, String>) -> String {
    let mut parts: Vec<String> = options
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k.contains("endpoint") || k.contains("account_name") || k == "aws_virtual_hosted_style_request"
        })
        .map(|(k, v)| format!("{}={v}", k.to_ascii_lowercase()))
        .collect();
    parts.sort();
    parts.join(",")
}

impl WrappingObjectStore for CountingWrapper {
    fn wrap(&self, prefix: &str, original: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(CountingStore {
            inner: original,
            counters: self.counters.clone(),
            cache: self.cache.clone(),
            root: format!("{prefix}|{}", self.endpoint),
            credential: self.credential.clone(),
        })
    }

    fn wrap_paginated(
        &self,
        _prefix: &str,
        original: Arc<dyn PaginatedListStore>,
    ) -> Option<Arc<dyn PaginatedListStore>> {
        Some(original)
    }
}

/// Delegates every call; counts reads; serves reads of immutable files through the data cache
/// when the session has one.
#[derive(Debug)]
struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<Counters>,
    cache: Option<Arc<DataCache>>,
    /// The store's identity (scheme and bucket), part of the data cache's keys.
    root: String,
    credential: CredentialSource,
}

impl CountingStore {
    fn observer(&self) -> Arc<dyn Observer> {
        self.counters.clone()
    }
}

impl std::fmt::Display for CountingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CountingStore({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> OSResult<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> OSResult<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> OSResult<GetResult> {
        if let Some(cache) = &self.cache {
            let credential = self.credential.current().await?;
            return cache
                .get_opts_as(&self.inner, &self.root, credential, location, options, &self.observer())
                .await;
        }
        crate::datacache::passthrough(&self.inner, location, options, &self.observer()).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> OSResult<Vec<Bytes>> {
        if let Some(cache) = &self.cache {
            let credential = self.credential.current().await?;
            return cache
                .get_ranges_as(&self.inner, &self.root, credential, location, ranges, &self.observer())
                .await;
        }
        let result = self.inner.get_ranges(location, ranges).await;
        if let Ok(r) = &result {
            self.counters
                .record_read(location, r.iter().map(|b| b.len() as u64).sum());
        }
        result
    }

    fn delete_stream(&self, locations: BoxStream<'static, OSResult<Path>>) -> BoxStream<'static, OSResult<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, OSResult<ObjectMeta>> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, OSResult<ObjectMeta>> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> OSResult<ListResult> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, opts: CopyOptions) -> OSResult<()> {
        self.inner.copy_opts(from, to, opts).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, opts: RenameOptions) -> OSResult<()> {
        self.inner.rename_opts(from, to, opts).await
    }
}
