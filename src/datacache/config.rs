//! The data cache's settings (sizes, budgets, the disk tier's directory), their checks, the
//! per-table switch, and the figures the cache reports.

use std::path::PathBuf;

use crate::error::{HostError, Result};

/// Memory tier budget unless configured: 256 MiB.
pub const LANCE_DEFAULT_DATA_CACHE_MEMORY_BYTES: u64 = 256 << 20;
/// Block size unless configured: 64 KiB.
pub const LANCE_DEFAULT_DATA_CACHE_BLOCK_BYTES: u64 = 64 << 10;
/// Smallest block size accepted: 4 KiB.
pub const LANCE_MIN_DATA_CACHE_BLOCK_BYTES: u64 = 4 << 10;
/// Largest block size accepted: 16 MiB.
pub const LANCE_MAX_DATA_CACHE_BLOCK_BYTES: u64 = 16 << 20;
/// Disk tier budget when a directory is given without one: 1 GiB.
pub const LANCE_DEFAULT_DATA_CACHE_DISK_BYTES: u64 = 1 << 30;
/// Name of the lock file in the disk tier's directory.
pub const LOCK_FILE: &str = "lance-host-data-cache.lock";

/// The storage option that keeps one table's reads out of the data cache.
pub const TABLE_OPTION: &str = "lance_host.data_cache";

/// Whether reads of a table opened with these storage options go through the data cache:
/// `lance_host.data_cache` = `true` (the default) or `false`. Lance ignores the key.
pub fn table_uses_cache(options: &std::collections::HashMap<String, String>) -> Result<bool> {
    match options.get(TABLE_OPTION).map(|v| v.to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) if v == "true" => Ok(true),
        Some(v) if v == "false" => Ok(false),
        Some(v) => Err(HostError::invalid(format!("storage option {TABLE_OPTION} must be true or false, not '{v}'"))),
    }
}

/// Settings of the data cache (part of the session's settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataCacheConfig {
    /// Memory tier budget; 0 turns the whole cache off.
    pub memory_bytes: u64,
    /// Disk tier directory; `None` = no disk tier.
    pub disk_dir: Option<PathBuf>,
    /// Disk tier budget (required with a directory).
    pub disk_bytes: u64,
    /// Block size: a power of two between 4 KiB and 16 MiB.
    pub block_bytes: u64,
}

impl Default for DataCacheConfig {
    fn default() -> Self {
        Self {
            memory_bytes: LANCE_DEFAULT_DATA_CACHE_MEMORY_BYTES,
            disk_dir: None,
            disk_bytes: 0,
            block_bytes: LANCE_DEFAULT_DATA_CACHE_BLOCK_BYTES,
        }
    }
}

impl DataCacheConfig {
    /// The settings as the C options give them: 0 = the default for each size.
    pub fn from_options(disabled: bool, memory: u64, disk_dir: Option<PathBuf>, disk: u64, block: u64) -> Self {
        let or = |v: u64, d: u64| if v == 0 { d } else { v };
        Self {
            memory_bytes: if disabled { 0 } else { or(memory, LANCE_DEFAULT_DATA_CACHE_MEMORY_BYTES) },
            disk_bytes: if disk_dir.is_some() { or(disk, LANCE_DEFAULT_DATA_CACHE_DISK_BYTES) } else { disk },
            disk_dir,
            block_bytes: or(block, LANCE_DEFAULT_DATA_CACHE_BLOCK_BYTES),
        }
    }

    /// Size of the disk engine's own blocks (the unit it writes and evicts): 1/64 of the disk
    /// budget, at least four cache blocks, at most 16 MiB (or four cache blocks if larger).
    pub(super) fn engine_block_bytes(&self) -> u64 {
        let min = self.block_bytes * 4;
        let max = (16u64 << 20).max(min);
        ((self.disk_bytes / 64) & !4095).clamp(min, max)
    }

    /// Write buffer of the disk tier: 1/16 of its budget, between 16 and 64 MiB.
    pub(super) fn write_buffer_bytes(&self) -> u64 {
        (self.disk_bytes / 16).clamp(16 << 20, 64 << 20)
    }

    /// Smallest disk budget accepted for this block size: 64 blocks (16 engine blocks).
    pub fn min_disk_bytes(&self) -> u64 {
        self.block_bytes * 64
    }

    pub fn validate(&self) -> Result<()> {
        let b = self.block_bytes;
        if !(LANCE_MIN_DATA_CACHE_BLOCK_BYTES..=LANCE_MAX_DATA_CACHE_BLOCK_BYTES).contains(&b) || !b.is_power_of_two() {
            return Err(HostError::invalid(format!(
                "data_cache_block_bytes {b} must be a power of two between {LANCE_MIN_DATA_CACHE_BLOCK_BYTES} and \
                 {LANCE_MAX_DATA_CACHE_BLOCK_BYTES}"
            )));
        }
        if self.memory_bytes > isize::MAX as u64 || self.disk_bytes > isize::MAX as u64 {
            return Err(HostError::invalid("a data cache budget does not fit in this platform's address space"));
        }
        if self.memory_bytes != 0 && self.memory_bytes < b * 4 {
            return Err(HostError::invalid(format!(
                "data_cache_memory_bytes {} is below four blocks ({}); use 0 to turn the data cache off",
                self.memory_bytes,
                b * 4
            )));
        }
        match &self.disk_dir {
            None if self.disk_bytes != 0 => Err(HostError::invalid(
                "data_cache_disk_bytes is set but data_cache_disk_dir is not",
            )),
            Some(_) if self.memory_bytes == 0 => Err(HostError::invalid(
                "the disk tier needs the memory tier: data_cache_memory_bytes is 0",
            )),
            Some(dir) if dir.as_os_str().is_empty() => Err(HostError::invalid("data_cache_disk_dir is empty")),
            Some(_) if self.disk_bytes < self.min_disk_bytes() => Err(HostError::invalid(format!(
                "data_cache_disk_bytes {} is below the minimum of {} for {}-byte blocks",
                self.disk_bytes,
                self.min_disk_bytes(),
                b
            ))),
            _ => Ok(()),
        }
    }
}

/// A point-in-time copy of the data cache's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataCacheStats {
    /// Blocks served from the cache (either tier).
    pub hits: u64,
    /// Blocks not in the cache (read from storage).
    pub misses: u64,
    /// Bytes of reads served from cached blocks.
    pub hit_bytes: u64,
    /// Requests the cache sent to storage to fill missing blocks.
    pub storage_requests: u64,
    /// Bytes those requests returned.
    pub storage_bytes: u64,
    /// Blocks evicted from the memory tier to stay within its budget.
    pub evictions: u64,
    /// Damaged or unreadable disk-tier entries that were dropped and re-read from storage, and
    /// disk-tier I/O errors.
    pub errors: u64,
    /// Blocks the disk tier did not write because its write queue was full (they stay in the
    /// memory tier; a restarted process reads them from storage).
    pub disk_write_drops: u64,
    /// Bytes held by the memory tier now (weighted: block bytes plus per-entry overhead).
    pub memory_bytes: u64,
    /// Bytes the disk tier's files occupy on disk now.
    pub disk_bytes: u64,
    /// Memory budget (0 = cache off).
    pub memory_capacity: u64,
    /// Disk budget (0 = no disk tier in use).
    pub disk_capacity: u64,
    /// Block size.
    pub block_bytes: u64,
    /// 1 when this process uses the disk tier.
    pub disk_enabled: bool,
}
