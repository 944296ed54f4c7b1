//! The cache's two tiers: building them (the memory tier, and the disk tier in a directory
//! locked by one process), the one place entries enter and leave them, flushing the disk tier,
//! and the figures they report.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use foyer::{
    BlockEngineConfig, DeviceBuilder, FsDeviceBuilder, HybridCacheBuilder, HybridCachePolicy,
    PsyncIoEngineConfig, RecoverMode,
};

use super::block::Block;
use super::counters::{Counters, EvictionCounter, Registry};
use super::{DataCache, DataCacheConfig, DataCacheStats, LOCK_FILE};
use crate::error::{HostError, Result};

/// Try to take the directory's lock; `None` when another process holds it.
fn lock_dir(dir: &std::path::Path) -> Result<Option<std::fs::File>> {
    std::fs::create_dir_all(dir).map_err(|e| {
        HostError::invalid(format!("cannot create data cache directory '{}': {e}", dir.display()))
    })?;
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| HostError::invalid(format!("cannot open data cache lock '{}': {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(HostError::invalid(format!(
            "cannot lock data cache directory '{}': {e}",
            dir.display()
        ))),
    }
}

impl DataCache {
    /// Build the cache (on the session's runtime). `None` when the configuration turns it off.
    pub async fn build(config: &DataCacheConfig) -> Result<Option<Arc<DataCache>>> {
        if config.memory_bytes == 0 {
            return Ok(None);
        }
        let counters = Arc::new(Counters::default());
        let (lock, disk_dir) = match &config.disk_dir {
            None => (None, None),
            Some(dir) => match lock_dir(dir)? {
                Some(lock) => (Some(lock), Some(dir.clone())),
                None => {
                    log::warn!(
                        "data cache directory '{}' is in use by another process; this process runs the data \
                         cache in memory only",
                        dir.display()
                    );
                    (None, None)
                }
            },
        };
        let builder = HybridCacheBuilder::new()
            .with_name("lance-host-data")
            .with_metrics_registry(Box::new(Registry(counters.foyer.clone())))
            .with_policy(HybridCachePolicy::WriteOnInsertion)
            .with_event_listener(Arc::new(EvictionCounter(counters.clone())))
            .memory(config.memory_bytes as usize)
            // Each shard holds at least 16 blocks, so no block outweighs its shard.
            .with_shards((config.memory_bytes / (config.block_bytes * 16)).clamp(1, 8) as usize)
            .with_weighter(|k: &String, v: &Block| k.len() + v.weight())
            .storage();
        let builder = match &disk_dir {
            None => builder,
            Some(dir) => {
                let device = FsDeviceBuilder::new(dir)
                    .with_capacity(config.disk_bytes as usize)
                    .build()
                    .map_err(|e| HostError::invalid(format!("cannot use data cache directory '{}': {e}", dir.display())))?;
                builder
                    .with_io_engine_config(PsyncIoEngineConfig::new())
                    .with_engine_config(
                        BlockEngineConfig::new(device)
                            .with_block_size(config.engine_block_bytes() as usize)
                            // Room for bursts (a scan inserts blocks faster than one write
                            // completes): what does not fit is not written to disk.
                            .with_buffer_pool_size(config.write_buffer_bytes() as usize)
                            .with_submit_queue_size_threshold(config.write_buffer_bytes() as usize * 4)
                            .with_tombstone_log(true),
                    )
                    .with_recover_mode(RecoverMode::Quiet)
            }
        };
        let cache = builder
            .build()
            .await
            .map_err(|e| HostError::internal(format!("cannot start the data cache: {e}")))?;
        Ok(Some(Arc::new(DataCache {
            cache,
            block: config.block_bytes,
            config: config.clone(),
            counters,
            inflight: Mutex::new(HashMap::new()),
            unflushed: Mutex::new(std::collections::VecDeque::new()),
            writes: Mutex::new(()),
            disk_dir,
            grants: Default::default(),
            _lock: lock,
        })))
    }

    pub fn stats(&self) -> DataCacheStats {
        let c = &self.counters;
        let disk_bytes = self.disk_dir.as_ref().map_or(0, |d| dir_usage(d));
        DataCacheStats {
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            hit_bytes: c.hit_bytes.load(Ordering::Relaxed),
            storage_requests: c.storage_requests.load(Ordering::Relaxed),
            storage_bytes: c.storage_bytes.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed) + c.foyer.disk_errors.load(Ordering::Relaxed),
            disk_write_drops: c.foyer.write_drops.load(Ordering::Relaxed),
            memory_bytes: self.cache.memory().usage() as u64,
            disk_bytes,
            memory_capacity: self.config.memory_bytes,
            disk_capacity: if self.disk_dir.is_some() { self.config.disk_bytes } else { 0 },
            block_bytes: self.block,
            disk_enabled: self.disk_dir.is_some(),
        }
    }

    /// Insert a block (or meta entry); with a disk tier, remember it for `flush`.
    pub(super) fn insert(&self, key: String, value: Block) {
        if self.disk_dir.is_some() {
            let cap = (self.config.disk_bytes / self.block).max(1024) as usize;
            let mut keys = self.unflushed.lock().unwrap_or_else(|e| e.into_inner());
            if keys.len() >= cap {
                keys.drain(..cap / 2);
            }
            keys.push_back(key.clone());
        }
        self.put(key, value);
    }

    /// The one place entries enter the hybrid cache (see `writes`).
    pub(super) fn put(&self, key: String, value: Block) {
        let _ordered = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        self.cache.insert(key, value);
    }

    /// The one place entries leave the hybrid cache (see `writes`): a removal is numbered in the
    /// same sequence, and must not overtake an insert of the same key queued before it.
    pub(super) fn forget(&self, key: &str) {
        let _ordered = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        self.cache.remove(key);
    }

    /// Wait until the blocks inserted since the last flush are on the disk tier. The disk tier
    /// writes in the background and skips blocks when its write queue is full (a burst of
    /// inserts); those still in the memory tier are written again here, until all are on disk.
    pub async fn flush(&self) {
        if self.disk_dir.is_none() {
            return;
        }
        let storage = self.cache.storage();
        storage.wait().await;
        let mut pending: Vec<String> = {
            let mut keys = self.unflushed.lock().unwrap_or_else(|e| e.into_inner());
            keys.drain(..).collect()
        };
        for _round in 0..8 {
            pending.retain(|k| !storage.may_contains(k));
            if pending.is_empty() {
                break;
            }
            let mut rewritten = 0;
            for (i, k) in pending.iter().enumerate() {
                if let Some(entry) = self.cache.memory().get(k) {
                    self.put(k.clone(), entry.value().clone());
                    rewritten += 1;
                }
                // Let the writer drain between chunks instead of overflowing its queue again.
                if i % 256 == 255 {
                    storage.wait().await;
                }
            }
            storage.wait().await;
            if rewritten == 0 {
                break;
            }
            log::info!("data cache: wrote {rewritten} skipped blocks to the disk tier on flush");
        }
    }

    pub(super) async fn lookup(&self, key: &str) -> Option<Block> {
        match self.cache.get(key).await {
            Ok(Some(entry)) => Some(entry.value().clone()),
            Ok(None) => None,
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                log::warn!("data cache: dropping an unreadable entry: {e}");
                self.forget(key);
                None
            }
        }
    }

}

/// Bytes the files under `dir` occupy on disk (allocated blocks, so sparse files count what
/// they use).
fn dir_usage(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    total
}
