//! Session-level counters a host polls for its metrics page: operations by kind, rows, batches
//! and bytes returned by streams, object-store requests and bytes (object stores only), and the
//! session's cache hits and misses. Counters only grow; a host computes rates from two reads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Operation kinds counted.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    Open,
    Plan,
    Scan,
    Search,
    Take,
    Refine,
    Merge,
    Prewarm,
    Count,
    Statistics,
    /// A write committed in one call, or a staged write (a worker's share).
    Write,
    /// A commit of staged writes, or a row-level change (delete).
    Commit,
    /// Partial states of a split or a table, or their merge.
    Aggregate,
}

const OPS: [(&str, Op); 13] = [
    ("ops.open", Op::Open),
    ("ops.plan", Op::Plan),
    ("ops.scan", Op::Scan),
    ("ops.search", Op::Search),
    ("ops.take", Op::Take),
    ("ops.refine", Op::Refine),
    ("ops.merge", Op::Merge),
    ("ops.prewarm", Op::Prewarm),
    ("ops.count", Op::Count),
    ("ops.statistics", Op::Statistics),
    ("ops.write", Op::Write),
    ("ops.commit", Op::Commit),
    ("ops.aggregate", Op::Aggregate),
];

static OP_COUNTS: [AtomicU64; 13] = [const { AtomicU64::new(0) }; 13];
static ROWS: AtomicU64 = AtomicU64::new(0);
static BATCHES: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static REQUESTS: AtomicU64 = AtomicU64::new(0);
static REQUEST_BYTES: AtomicU64 = AtomicU64::new(0);
static OWN_DECODER: AtomicU64 = AtomicU64::new(0);
static LANCE_DECODER: AtomicU64 = AtomicU64::new(0);
static SCAN_OWN_DECODER: AtomicU64 = AtomicU64::new(0);
static GROUPED_HERE: AtomicU64 = AtomicU64::new(0);

/// An aggregate's partial states computed by the library's own grouping (`aggregate::fused`)
/// rather than DataFusion's aggregate.
pub fn aggregate_grouped_here() {
    GROUPED_HERE.fetch_add(1, Ordering::Relaxed);
}

/// A local scan, filtered or not (`scan::own_scan`), read by the library's own decoder, or not.
pub fn scan_read(own_decoder: bool) {
    if own_decoder {
        SCAN_OWN_DECODER.fetch_add(1, Ordering::Relaxed);
    }
}

/// An aggregate's read of a table or split: by the library's own decoder (`crate::decode`) or by
/// Lance's scanner.
pub fn aggregate_read(own_decoder: bool) {
    if own_decoder { &OWN_DECODER } else { &LANCE_DECODER }.fetch_add(1, Ordering::Relaxed);
}

pub fn op(kind: Op) {
    OP_COUNTS[kind as usize].fetch_add(1, Ordering::Relaxed);
}

pub fn batch_returned(rows: usize, bytes: usize) {
    BATCHES.fetch_add(1, Ordering::Relaxed);
    ROWS.fetch_add(rows as u64, Ordering::Relaxed);
    BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

pub fn object_store_read(bytes: u64) {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
    REQUEST_BYTES.fetch_add(bytes, Ordering::Relaxed);
}

/// Every counter as (name, value), in a fixed order (names are stable).
pub fn snapshot() -> Vec<(&'static str, u64)> {
    let mut out: Vec<(&'static str, u64)> = OPS
        .iter()
        .map(|(name, kind)| (*name, OP_COUNTS[*kind as usize].load(Ordering::Relaxed)))
        .collect();
    out.push(("stream.rows", ROWS.load(Ordering::Relaxed)));
    out.push(("stream.batches", BATCHES.load(Ordering::Relaxed)));
    out.push(("stream.bytes", BYTES.load(Ordering::Relaxed)));
    out.push(("object_store.requests", REQUESTS.load(Ordering::Relaxed)));
    out.push(("object_store.bytes", REQUEST_BYTES.load(Ordering::Relaxed)));
    out.push(("aggregate.reads_own_decoder", OWN_DECODER.load(Ordering::Relaxed)));
    out.push(("aggregate.reads_lance_decoder", LANCE_DECODER.load(Ordering::Relaxed)));
    out.push(("scan.reads_own_decoder", SCAN_OWN_DECODER.load(Ordering::Relaxed)));
    out.push(("aggregate.grouped_by_library", GROUPED_HERE.load(Ordering::Relaxed)));
    let cache = crate::session::stats().unwrap_or_default();
    out.push(("index_cache.hits", cache.index_hits));
    out.push(("index_cache.misses", cache.index_misses));
    out.push(("metadata_cache.hits", cache.metadata_hits));
    out.push(("metadata_cache.misses", cache.metadata_misses));
    let d = cache.data_cache;
    out.push(("data_cache.hits", d.hits));
    out.push(("data_cache.misses", d.misses));
    out.push(("data_cache.hit_bytes", d.hit_bytes));
    out.push(("data_cache.storage_requests", d.storage_requests));
    out.push(("data_cache.storage_bytes", d.storage_bytes));
    out.push(("data_cache.evictions", d.evictions));
    out.push(("data_cache.errors", d.errors));
    out.push(("data_cache.disk_write_drops", d.disk_write_drops));
    out.push(("data_cache.memory_bytes", d.memory_bytes));
    out.push(("data_cache.disk_bytes", d.disk_bytes));
    out
}
