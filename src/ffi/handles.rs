//! The boundary types several C ABI areas share — the dataset and split handles, the split plan
//! and the per-operation I/O statistics — in one home, so the area files (dataset, plan, scan,
//! search, fts, ...) depend on this module instead of on each other.

use std::ffi::CString;

use crate::split::{Split, SplitPlan};
use crate::error::Result;
use crate::split::scope::Scope;
use crate::snapshot::Snapshot;
use crate::io_stats::IoStats;

use super::owned_cstring;
use super::sized::Extensible;

/// A table pinned at one version. Opaque; create with `lance_dataset_open`, free with
/// `lance_dataset_free`.
pub struct LanceDataset {
    /// Reached through `table`, `split_table` or `pinned`, which ask the scope first.
    snapshot: Snapshot,
    scope: Scope,
    pub(crate) uri: CString,
    pub(crate) storage_format: CString,
    /// The branch the handle is on ("main" for the default branch).
    pub(crate) branch: CString,
}

impl LanceDataset {
    pub(crate) fn new(snapshot: Snapshot) -> Self {
        Self::with_scope(snapshot, Scope::Whole)
    }

    /// A handle of a snapshot token, with the reach the token gives.
    pub(crate) fn with_scope(snapshot: Snapshot, scope: Scope) -> Self {
        let uri = owned_cstring(snapshot.uri());
        let storage_format = owned_cstring(&snapshot.storage_format());
        let branch = owned_cstring(crate::branch::branch_of(&snapshot).as_deref().unwrap_or(crate::branch::MAIN));
        Self {
            snapshot,
            scope,
            uri,
            storage_format,
            branch,
        }
    }

    /// The snapshot for work on the whole table (or on any part the caller names other than
    /// through a split): refused on a handle of a split-scoped token.
    pub(crate) fn table(&self) -> Result<&Snapshot> {
        self.scope.check_whole()?;
        Ok(&self.snapshot)
    }

    /// The snapshot for work on `split`.
    pub(crate) fn split_table(&self, split: &Split) -> Result<&Snapshot> {
        self.scope.check_split(split)?;
        Ok(&self.snapshot)
    }

    /// The snapshot for what every handle answers whatever its reach: its table, version,
    /// schema and storage format.
    pub(crate) fn pinned(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The handle's reach.
    pub(crate) fn scope(&self) -> &Scope {
        &self.scope
    }
}

/// A planned set of splits. Opaque; read with the `lance_split_plan_*` functions, free with
/// `lance_split_plan_free`.
pub struct LanceSplitPlan {
    pub(crate) plan: SplitPlan,
    pub(crate) index_name: Option<CString>,
    pub(crate) reason: CString,
}

/// One split: a unit of work on one pinned snapshot. Opaque; free with `lance_split_free`.
pub struct LanceSplit {
    pub(crate) split: Split,
    pub(crate) uri: CString,
    /// The segments' UUIDs back to back, 16 bytes each (what `lance_split_segment_uuids` lends).
    pub(crate) segment_bytes: Vec<u8>,
}

impl LanceSplit {
    pub(crate) fn new(split: Split) -> Self {
        let uri = owned_cstring(&split.uri);
        let segment_bytes = split.segments.iter().flat_map(|u| *u.as_bytes()).collect();
        Self { split, uri, segment_bytes }
    }
}

/// I/O statistics of one operation (a scan, split search, take or prewarm). Set
/// `struct_size = sizeof(LanceIoStats)` before passing it to a function that fills it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceIoStats {
    /// `sizeof(LanceIoStats)` as the caller compiled it (set by the caller; see "ABI
    /// compatibility" in the README).
    pub struct_size: usize,
    /// Read requests the operation sent to the object store.
    pub read_requests: u64,
    /// Bytes those requests returned.
    pub read_bytes: u64,
    /// The part of `read_requests` that read index files.
    pub index_read_requests: u64,
    /// The part of `read_bytes` that came from index files.
    pub index_read_bytes: u64,
    /// Index-cache lookups of the operation's plan that hit (final once the stream ended).
    pub index_cache_hits: u64,
    /// Index-cache lookups of the operation's plan that missed and read storage.
    pub index_cache_misses: u64,
    /// Data-cache blocks the operation's reads found cached (memory or disk tier; since 0.3).
    pub data_cache_hits: u64,
    /// Data-cache blocks the operation's reads fetched from storage (since 0.3).
    pub data_cache_misses: u64,
    /// Bytes of the operation's reads served from the data cache (since 0.3).
    pub data_cache_hit_bytes: u64,
}

impl Default for LanceIoStats {
    fn default() -> Self {
        IoStats::default().into()
    }
}

// SAFETY: repr(C), leading struct_size, all u64; the 0.1 layout is the six counters.
unsafe impl Extensible for LanceIoStats {
    const NAME: &'static str = "LanceIoStats";
    const MIN_SIZE: usize = 56;
    const V0_SIZE: usize = 48;
    fn initial() -> Self {
        Self::default()
    }
}

impl From<IoStats> for LanceIoStats {
    fn from(s: IoStats) -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            read_requests: s.read_requests,
            read_bytes: s.read_bytes,
            index_read_requests: s.index_read_requests,
            index_read_bytes: s.index_read_bytes,
            index_cache_hits: s.index_cache_hits,
            index_cache_misses: s.index_cache_misses,
            data_cache_hits: s.data_cache_hits,
            data_cache_misses: s.data_cache_misses,
            data_cache_hit_bytes: s.data_cache_hit_bytes,
        }
    }
}

