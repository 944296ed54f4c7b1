//! Per-operation I/O statistics: the object-store requests and bytes one scan, search, take
//! or prewarm caused, and the index-cache hits and misses of its plan — attributable to that
//! operation even while others run concurrently on other threads.
//!
//! Each operation runs on its own view of the pinned dataset whose object store is wrapped by
//! a private counter; caches and the session stay shared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lance::dataset::scanner::Scanner;
use lance::Dataset;
use lance_io::object_store::WrappingObjectStore;
use lance_io::utils::tracking_store::IOTracker;

use crate::snapshot::Snapshot;

/// A point-in-time copy of an operation's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Read requests sent to the object store (GET / range GET / HEAD).
    pub read_requests: u64,
    /// Bytes those requests returned.
    pub read_bytes: u64,
    /// Index-cache lookups of the operation's plan that hit (final once a stream has ended).
    pub index_cache_hits: u64,
    /// Index-cache lookups of the operation's plan that missed and went to storage.
    pub index_cache_misses: u64,
}

/// The live counters of one operation.
#[derive(Debug, Clone, Default)]
pub struct OpStats {
    tracker: IOTracker,
    index_hits: Arc<AtomicU64>,
    index_misses: Arc<AtomicU64>,
}

impl OpStats {
    /// The snapshot's dataset with this operation's counter around its object store.
    pub fn dataset(&self, snapshot: &Snapshot) -> Arc<Dataset> {
        let wrapper: Arc<dyn WrappingObjectStore> = Arc::new(self.tracker.clone());
        Arc::new(snapshot.dataset.with_object_store_wrappers([wrapper]))
    }

    /// Collect the plan's index-cache counters when the scanner's stream finishes.
    pub fn attach(&self, scanner: &mut Scanner) {
        let hits = self.index_hits.clone();
        let misses = self.index_misses.clone();
        scanner.scan_stats_callback(Arc::new(move |counts| {
            hits.fetch_add(counts.index_cache_hits() as u64, Ordering::Relaxed);
            misses.fetch_add(counts.index_cache_misses() as u64, Ordering::Relaxed);
        }));
    }

    pub fn add_index_cache(&self, hits: u64, misses: u64) {
        self.index_hits.fetch_add(hits, Ordering::Relaxed);
        self.index_misses.fetch_add(misses, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> IoStats {
        let io = self.tracker.stats();
        IoStats {
            read_requests: io.read_iops,
            read_bytes: io.read_bytes,
            index_cache_hits: self.index_hits.load(Ordering::Relaxed),
            index_cache_misses: self.index_misses.load(Ordering::Relaxed),
        }
    }
}
