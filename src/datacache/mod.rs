//! The process-wide data cache: blocks of immutable object-store files (data files, deletion
//! files, index files) kept in memory and, once a directory is configured, on local disk, so
//! repeated reads of the same bytes do not go back to object storage — also after a restart.
//!
//! - What is cached: only files Lance never rewrites in place (`data/`, `_deletions/`,
//!   `_indices/` of a table; UUID-named). Manifests, `_latest` pointers, transaction files and
//!   everything else pass through. Local tables never reach this layer (see `io_stats`).
//! - Keys: store root + object path + block number; each block also carries the object's size,
//!   e-tag and modification time as storage reported them. A miss that finds a different e-tag
//!   than the cached blocks of the same read drops those blocks and serves the read from storage,
//!   so a path rewritten in place cannot mix old and new bytes within one read.
//! - Reads are cut into aligned blocks. Cached blocks are served from the cache; each run of
//!   consecutive missing blocks is one ranged request; a block that another read is already
//!   fetching is waited for, not requested again. A failed request inserts nothing.
//! - Tiers: a memory tier (its budget counts keys and block bytes) and an optional disk tier in
//!   a directory. Disk entries carry checksums (the disk engine's over key and value, plus this
//!   module's CRC-32 over the block); a damaged entry is dropped and read again from storage. The
//!   directory is locked by one process at a time: a second process configured with the same
//!   directory runs with the memory tier only and says so in the log and in its session stats.
//!
//! - Credentials: a cached block is served only to a caller whose credentials storage accepted
//!   for that object recently (`grants`); otherwise one HEAD with them comes first.
//!
//! Here: the cache and its read path; `config`: its settings and the figures it reports;
//! `grants`: which credentials storage accepted for which objects;
//! `tiers`: the memory and disk tiers; `block`: a block and its disk encoding; `counters`: the
//! counters behind its figures; `tests`: its unit tests.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use foyer::HybridCache;
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{Attributes, GetOptions, GetRange, GetResult, GetResultPayload, ObjectMeta, ObjectStore, ObjectStoreExt};


mod block;
mod config;
mod counters;
mod grants;
mod tiers;

use block::Block;
pub use grants::{Credential, GRANT_TTL};
use counters::Counters;
pub use config::{
    table_uses_cache, DataCacheConfig, DataCacheStats, LANCE_DEFAULT_DATA_CACHE_BLOCK_BYTES,
    LANCE_DEFAULT_DATA_CACHE_DISK_BYTES, LANCE_DEFAULT_DATA_CACHE_MEMORY_BYTES,
    LANCE_MAX_DATA_CACHE_BLOCK_BYTES, LANCE_MIN_DATA_CACHE_BLOCK_BYTES, LOCK_FILE, TABLE_OPTION,
};

/// Claimed blocks at most this many blocks apart are fetched with one request.
const MAX_GAP_BLOCKS: u64 = 16;

/// What an operation learns from the cache (per-operation I/O stats).
pub trait Observer: Send + Sync {
    /// A request sent to storage and the bytes it returned.
    fn storage_read(&self, path: &Path, bytes: u64);
    /// Blocks served from the cache and the bytes of the read they covered.
    fn cache_hit(&self, blocks: u64, bytes: u64);
    /// Blocks that had to be read from storage.
    fn cache_miss(&self, blocks: u64);
}

/// An observer that notes whether a read reached storage, passing everything on.
struct Watch {
    inner: Arc<dyn Observer>,
    reached_storage: std::sync::atomic::AtomicBool,
}

impl Observer for Watch {
    fn storage_read(&self, path: &Path, bytes: u64) {
        self.reached_storage.store(true, Ordering::Relaxed);
        self.inner.storage_read(path, bytes);
    }

    fn cache_hit(&self, blocks: u64, bytes: u64) {
        self.inner.cache_hit(blocks, bytes);
    }

    fn cache_miss(&self, blocks: u64) {
        self.inner.cache_miss(blocks);
    }
}

type Inflight = Shared<BoxFuture<'static, std::result::Result<Block, String>>>;

/// The data cache of the session.
pub struct DataCache {
    cache: HybridCache<String, Block>,
    config: DataCacheConfig,
    block: u64,
    counters: Arc<Counters>,
    inflight: Mutex<HashMap<String, Inflight>>,
    /// With a disk tier: keys inserted since the last flush (at most as many as the tier holds
    /// blocks; the oldest half is forgotten beyond that). `flush` checks they reached the disk.
    unflushed: Mutex<std::collections::VecDeque<String>>,
    /// Held across every write to the hybrid cache (insert, remove). The disk tier numbers an
    /// entry (one sequence for the whole tier) and then queues it to its writer, in two steps
    /// that two threads can interleave: entries then reach the disk in another order than their
    /// numbers. At the next start the tier's recovery stops reading an engine block at the first
    /// entry numbered lower than the one before it (its way of finding where a reused block's
    /// old contents begin), so one such swap lost the rest of that block after a restart although
    /// `flush` had seen every entry on disk (issue 26). With the lock, numbers follow queue order.
    writes: Mutex<()>,
    disk_dir: Option<PathBuf>,
    /// The credentials storage accepted for which objects (see `grants`).
    grants: grants::Grants,
    /// Held for the life of the process: the disk tier's directory lock.
    _lock: Option<std::fs::File>,
}

impl std::fmt::Debug for DataCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataCache").field("config", &self.config).finish()
    }
}

impl DataCache {
    /// Whether reads of `location` may be cached: files Lance never rewrites in place.
    pub fn cacheable(location: &Path) -> bool {
        let parts: Vec<_> = location.parts().collect();
        if parts.len() < 2 {
            return false;
        }
        let dir = parts[..parts.len() - 1].iter().rev();
        let mut immutable = false;
        for p in dir {
            match p.as_ref() {
                "data" | "_deletions" | "_indices" => immutable = true,
                "_versions" | "_transactions" | "_refs" => return false,
                _ => {}
            }
        }
        immutable
    }

    fn key(root: &str, location: &Path, block: u64) -> String {
        format!("{root}\u{1}{location}\u{1}{block}")
    }

    fn meta_key(root: &str, location: &Path) -> String {
        format!("{root}\u{1}{location}\u{1}meta")
    }

    /// The expected length of block `b` of an object of `size` bytes.
    fn block_len(&self, b: u64, size: u64) -> u64 {
        size.saturating_sub(b * self.block).min(self.block)
    }

    /// Serve `options` for `location` through the cache. `root` identifies the store.
    pub async fn get_opts(
        self: &Arc<Self>,
        inner: &Arc<dyn ObjectStore>,
        root: &str,
        location: &Path,
        options: GetOptions,
        obs: &Arc<dyn Observer>,
    ) -> object_store::Result<GetResult> {
        let conditional = options.if_match.is_some()
            || options.if_none_match.is_some()
            || options.if_modified_since.is_some()
            || options.if_unmodified_since.is_some()
            || options.version.is_some();
        if conditional || !Self::cacheable(location) {
            return passthrough(inner, location, options, obs).await;
        }
        let meta_key = Self::meta_key(root, location);
        if options.head {
            if let Some(m) = self.lookup(&meta_key).await {
                self.count_hit(obs, 0);
                return Ok(result_of(m.meta(location), 0..m.size, Bytes::new()));
            }
            let r = passthrough(inner, location, options, obs).await?;
            self.insert(meta_key, Block::from_meta(&r.meta, Bytes::new()));
            return Ok(r);
        }
        let range = match options.range.clone() {
            Some(GetRange::Bounded(r)) => Some(r),
            other => match self.lookup(&meta_key).await {
                Some(m) => match other {
                    None => Some(0..m.size),
                    Some(GetRange::Offset(o)) if o < m.size => Some(o..m.size),
                    Some(GetRange::Suffix(n)) => Some(m.size.saturating_sub(n)..m.size),
                    _ => None,
                },
                None => None,
            },
        };
        let Some(range) = range.filter(|r| r.start < r.end) else {
            // Unknown size: read from storage once, keep what came back.
            let r = passthrough(inner, location, options, obs).await?;
            let meta = r.meta.clone();
            let got = r.range.clone();
            let bytes = r.bytes().await?;
            self.insert(meta_key, Block::from_meta(&meta, Bytes::new()));
            self.insert_aligned(root, location, &meta, got.start, &bytes);
            return Ok(result_of(meta, got, bytes));
        };
        let (meta, bytes, got) = self.read_range(inner, root, location, range, obs).await?;
        if !self.cache.contains(&meta_key) {
            self.insert(meta_key, Block::from_meta(&meta, Bytes::new()));
        }
        Ok(result_of(meta, got, bytes))
    }

    /// `get_opts` for a caller holding `credential`: a read that the cache served without
    /// storage having accepted this credential for the object within `GRANT_TTL` first asks
    /// storage for the object's metadata with it (one HEAD, counted as a read request) and fails
    /// as storage fails it. A read that reached storage records the grant. `None`: credentials
    /// past their expiry, which no grant covers (every served read asks storage first).
    pub async fn get_opts_as(
        self: &Arc<Self>,
        inner: &Arc<dyn ObjectStore>,
        root: &str,
        credential: Option<Credential>,
        location: &Path,
        options: GetOptions,
        obs: &Arc<dyn Observer>,
    ) -> object_store::Result<GetResult> {
        if !Self::cacheable(location) {
            return self.get_opts(inner, root, location, options, obs).await;
        }
        let watch = Arc::new(Watch { inner: obs.clone(), reached_storage: Default::default() });
        let watching: Arc<dyn Observer> = watch.clone();
        let result = self.get_opts(inner, root, location, options, &watching).await?;
        self.authorize(inner, root, credential, location, &watch, obs).await?;
        Ok(result)
    }

    /// The ranges of one object for a caller holding `credential`, each through the cache, with
    /// one grant check for them all (see `get_opts_as`).
    pub async fn get_ranges_as(
        self: &Arc<Self>,
        inner: &Arc<dyn ObjectStore>,
        root: &str,
        credential: Option<Credential>,
        location: &Path,
        ranges: &[Range<u64>],
        obs: &Arc<dyn Observer>,
    ) -> object_store::Result<Vec<Bytes>> {
        let watch = Arc::new(Watch { inner: obs.clone(), reached_storage: Default::default() });
        let watching: Arc<dyn Observer> = watch.clone();
        let reads = ranges.iter().map(|r| {
            let opts = GetOptions { range: Some(r.clone().into()), ..Default::default() };
            let obs = watching.clone();
            async move { self.get_opts(inner, root, location, opts, &obs).await?.bytes().await }
        });
        let out = futures::future::try_join_all(reads).await?;
        if Self::cacheable(location) {
            self.authorize(inner, root, credential, location, &watch, obs).await?;
        }
        Ok(out)
    }

    /// The grant check of `get_opts_as`, once a read of `location` has been served.
    async fn authorize(
        &self,
        inner: &Arc<dyn ObjectStore>,
        root: &str,
        credential: Option<Credential>,
        location: &Path,
        watch: &Watch,
        obs: &Arc<dyn Observer>,
    ) -> object_store::Result<()> {
        let at = location.as_ref();
        let Some(credential) = credential else {
            // expired credentials: storage decides, every time, and nothing is recorded
            if !watch.reached_storage.load(Ordering::Relaxed) {
                inner.head(location).await?;
                obs.storage_read(location, 0);
            }
            return Ok(());
        };
        if watch.reached_storage.load(Ordering::Relaxed) {
            self.grants.record(credential, root, at);
            return Ok(());
        }
        if self.grants.fresh(credential, root, at) {
            return Ok(());
        }
        inner.head(location).await?;
        obs.storage_read(location, 0);
        self.grants.record(credential, root, at);
        Ok(())
    }

    fn count_hit(&self, obs: &Arc<dyn Observer>, bytes: u64) {
        self.counters.hits.fetch_add(1, Ordering::Relaxed);
        self.counters.hit_bytes.fetch_add(bytes, Ordering::Relaxed);
        obs.cache_hit(1, bytes);
    }

    /// Insert the whole blocks of `bytes` (which start at `start` of the object), and its last
    /// block when the bytes end at the object's end.
    fn insert_aligned(&self, root: &str, location: &Path, meta: &ObjectMeta, start: u64, bytes: &Bytes) {
        let end = start + bytes.len() as u64;
        let mut b = start.div_ceil(self.block);
        while b * self.block < end {
            let from = b * self.block;
            let to = (from + self.block).min(meta.size);
            if to > end || to <= from {
                break;
            }
            let slice = bytes.slice((from - start) as usize..(to - start) as usize);
            self.insert(Self::key(root, location, b), Block::from_meta(meta, slice));
            b += 1;
        }
    }

    /// Read `range` of `location` block by block: cached blocks from the cache, each run of
    /// missing blocks with one request (or by waiting for a read of them already under way).
    async fn read_range(
        self: &Arc<Self>,
        inner: &Arc<dyn ObjectStore>,
        root: &str,
        location: &Path,
        range: Range<u64>,
        obs: &Arc<dyn Observer>,
    ) -> object_store::Result<(ObjectMeta, Bytes, Range<u64>)> {
        let bs = self.block;
        let first = range.start / bs;
        let last = (range.end - 1) / bs;
        let keys: Vec<String> = (first..=last).map(|b| Self::key(root, location, b)).collect();
        let found = futures::future::join_all(keys.iter().map(|k| self.lookup(k))).await;
        let mut blocks: Vec<Option<Block>> = Vec::with_capacity(found.len());
        // A cached block must agree with the others on the object and have its full length.
        let reference = found.iter().flatten().next().cloned();
        for (i, f) in found.into_iter().enumerate() {
            let b = first + i as u64;
            blocks.push(f.filter(|blk| {
                reference.as_ref().is_some_and(|r| r.same_object(blk))
                    && blk.data.len() as u64 == self.block_len(b, blk.size)
                    && blk.data.len() as u64 > 0
            }));
        }
        let mut keys = keys;
        let mut last = last;
        if let Some(r) = &reference {
            if range.start >= r.size {
                // Out of range: let storage answer with its own error.
                return passthrough_range(inner, location, range, obs).await;
            }
            // Blocks past the object's end do not exist.
            last = last.min((r.size - 1) / bs);
            let n = (last - first + 1) as usize;
            keys.truncate(n);
            blocks.truncate(n);
        }

        // Claim the missing blocks nobody is fetching; wait for the others.
        let was_hit: Vec<bool> = blocks.iter().map(Option::is_some).collect();
        let missing: Vec<u64> = (first..=last).filter(|b| !was_hit[(b - first) as usize]).collect();
        let mut waits = Vec::new();
        let mut mine = Vec::new();
        if !missing.is_empty() {
            let mut map = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
            for b in &missing {
                let k = &keys[(b - first) as usize];
                if let Some(f) = map.get(k) {
                    waits.push((*b, f.clone()));
                } else {
                    let (tx, rx) = futures::channel::oneshot::channel::<std::result::Result<Block, String>>();
                    let fut: BoxFuture<'static, std::result::Result<Block, String>> = async move {
                        rx.await.unwrap_or_else(|_| Err("the read that was filling this block was dropped".into()))
                    }
                    .boxed();
                    map.insert(k.clone(), fut.shared());
                    mine.push((*b, tx));
                }
            }
        }
        let hits = (blocks.len() - missing.len()) as u64;
        if !missing.is_empty() {
            self.counters.misses.fetch_add(missing.len() as u64, Ordering::Relaxed);
            obs.cache_miss(missing.len() as u64);
        }

        // Runs of claimed blocks: one request each. Claimed blocks at most MAX_GAP_BLOCKS
        // apart share a request: the blocks between them (cached, or being fetched by another
        // read) are fetched again rather than splitting the read into more requests, since a
        // request costs more than the bytes of a few blocks.
        let mut runs: Vec<Vec<(u64, futures::channel::oneshot::Sender<std::result::Result<Block, String>>)>> = Vec::new();
        for (b, tx) in mine {
            match runs.last_mut() {
                Some(run) if run.last().is_some_and(|(lb, _)| b - lb <= MAX_GAP_BLOCKS + 1) => run.push((b, tx)),
                _ => runs.push(vec![(b, tx)]),
            }
        }
        let fetches = runs.into_iter().map(|run| {
            let this = self.clone();
            let inner = inner.clone();
            let obs = obs.clone();
            let keys: Vec<String> = run.iter().map(|(b, _)| Self::key(root, location, *b)).collect();
            let location = location.clone();
            async move {
                // Unregisters the run's blocks however this future ends (also when dropped).
                let _registered = InflightGuard { cache: this.clone(), keys: keys.clone() };
                let (b0, b1) = (run[0].0, run[run.len() - 1].0);
                let result = this.fetch_run(&inner, &location, b0, b1, &obs).await;
                match &result {
                    Ok(fetched) => {
                        for ((b, tx), k) in run.into_iter().zip(keys.iter()) {
                            let blk = &fetched[(b - b0) as usize];
                            if !blk.data.is_empty() {
                                this.insert(k.clone(), blk.clone());
                            }
                            let _ = tx.send(Ok(blk.clone()));
                        }
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        for (_, tx) in run {
                            let _ = tx.send(Err(msg.clone()));
                        }
                    }
                }
                result.map(|list| list.into_iter().enumerate().map(|(i, blk)| (b0 + i as u64, blk)).collect::<Vec<_>>())
            }
        });
        let fetched = futures::future::join_all(fetches).await;
        let mut first_error = None;
        for f in fetched {
            match f {
                Ok(list) => {
                    for (b, blk) in list {
                        let slot = &mut blocks[(b - first) as usize];
                        if slot.is_none() {
                            *slot = Some(blk);
                        }
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        for (b, w) in waits {
            if blocks[(b - first) as usize].is_some() {
                continue; // fetched with one of this read's own runs
            }
            // The read that was filling the block failed or went away: read it here.
            let blk = match w.await {
                Ok(blk) => blk,
                Err(_) => self.fetch_run(inner, location, b, b, obs).await?.remove(0),
            };
            blocks[(b - first) as usize] = Some(blk);
        }

        // All blocks must describe the same object; otherwise storage changed under the cache.
        let all: Vec<&Block> = blocks.iter().flatten().collect();
        let consistent = all.len() == blocks.len() && all.windows(2).all(|w| w[0].same_object(w[1]));
        if !consistent {
            for k in &keys {
                self.forget(k);
            }
            log::warn!("data cache: '{location}' changed in storage; its cached blocks were dropped");
            return passthrough_range(inner, location, range, obs).await;
        }
        let size = all[0].size;
        let end = range.end.min(size);
        if range.start >= end {
            return passthrough_range(inner, location, range, obs).await;
        }
        let meta = all[0].meta(location);
        let hit_bytes: u64 = (first..=last)
            .zip(&was_hit)
            .filter(|(_, h)| **h)
            .map(|(b, _)| overlap(b * bs..b * bs + bs, &range))
            .sum();
        if hits > 0 {
            self.counters.hits.fetch_add(hits, Ordering::Relaxed);
            self.counters.hit_bytes.fetch_add(hit_bytes, Ordering::Relaxed);
            obs.cache_hit(hits, hit_bytes);
        }
        let bytes = if first == last {
            let blk = &all[0];
            let from = (range.start - first * bs) as usize;
            let to = (end - first * bs) as usize;
            if to > blk.data.len() {
                return Err(generic("a cached block is shorter than its object"));
            }
            blk.data.slice(from..to)
        } else {
            let mut out = BytesMut::with_capacity((end - range.start) as usize);
            for (i, blk) in all.iter().enumerate() {
                let b = first + i as u64;
                let bstart = b * bs;
                let from = range.start.max(bstart) - bstart;
                let to = end.min(bstart + blk.data.len() as u64);
                if to <= bstart + from {
                    continue;
                }
                out.extend_from_slice(&blk.data[from as usize..(to - bstart) as usize]);
            }
            if out.len() as u64 != end - range.start {
                return Err(generic("cached blocks do not cover the read"));
            }
            out.freeze()
        };
        Ok((meta, bytes, range.start..end))
    }

    /// One ranged request for blocks `b0..=b1`; returns one block per number (the last may be
    /// short at the object's end; blocks past the end come back empty).
    async fn fetch_run(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        b0: u64,
        b1: u64,
        obs: &Arc<dyn Observer>,
    ) -> object_store::Result<Vec<Block>> {
        let bs = self.block;
        let start = b0 * bs;
        let opts = GetOptions { range: Some(GetRange::Bounded(start..(b1 + 1) * bs)), ..Default::default() };
        let r = inner.get_opts(location, opts).await?;
        let meta = r.meta.clone();
        let got = r.range.clone();
        let bytes = r.bytes().await?;
        obs.storage_read(location, bytes.len() as u64);
        self.counters.storage_requests.fetch_add(1, Ordering::Relaxed);
        self.counters.storage_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if got.start != start || got.end - got.start != bytes.len() as u64 {
            return Err(generic("storage returned another range than the one asked for"));
        }
        let mut out = Vec::with_capacity((b1 - b0 + 1) as usize);
        for b in b0..=b1 {
            let from = (b * bs).min(got.end) - start;
            let to = ((b + 1) * bs).min(got.end) - start;
            out.push(Block::from_meta(&meta, bytes.slice(from as usize..to as usize)));
        }
        Ok(out)
    }
}

/// Removes a fetch's blocks from the in-flight map when the fetch ends or is dropped.
struct InflightGuard {
    cache: Arc<DataCache>,
    keys: Vec<String>,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        let mut map = self.cache.inflight.lock().unwrap_or_else(|e| e.into_inner());
        for k in &self.keys {
            map.remove(k);
        }
    }
}

fn overlap(a: Range<u64>, b: &Range<u64>) -> u64 {
    a.end.min(b.end).saturating_sub(a.start.max(b.start))
}

fn generic(msg: &str) -> object_store::Error {
    object_store::Error::Generic { store: "lance-host data cache", source: msg.to_string().into() }
}

fn result_of(meta: ObjectMeta, range: Range<u64>, bytes: Bytes) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(futures::future::ready(Ok(bytes))).boxed()),
        meta,
        range,
        attributes: Attributes::default(),
        extensions: Default::default(),
    }
}

/// A read straight from storage, counted (also the read path of operations without the cache).
pub(crate) async fn passthrough(
    inner: &Arc<dyn ObjectStore>,
    location: &Path,
    options: GetOptions,
    obs: &Arc<dyn Observer>,
) -> object_store::Result<GetResult> {
    let head = options.head;
    let r = inner.get_opts(location, options).await?;
    obs.storage_read(location, if head { 0 } else { r.range.end - r.range.start });
    Ok(r)
}

async fn passthrough_range(
    inner: &Arc<dyn ObjectStore>,
    location: &Path,
    range: Range<u64>,
    obs: &Arc<dyn Observer>,
) -> object_store::Result<(ObjectMeta, Bytes, Range<u64>)> {
    let opts = GetOptions { range: Some(GetRange::Bounded(range)), ..Default::default() };
    let r = passthrough(inner, location, opts, obs).await?;
    let meta = r.meta.clone();
    let got = r.range.clone();
    Ok((meta, r.bytes().await?, got))
}

#[cfg(test)]
mod tests;
