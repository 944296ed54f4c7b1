//! Executing vector-search splits (index segments and flat fragments) as Arrow record batch readers.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, Float16Array, Float32Array, Float64Array, Int8Array, UInt8Array,
};

use crate::error::{HostError, Result};
use crate::index::Metric;
use crate::split::{vector_column, Split, SplitKind};
use crate::scan::{self, BatchReader, ROW_ID};
use crate::snapshot::Snapshot;
use crate::io_stats::OpStats;

/// Query vector values in one of the supported element types.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryVector {
    /// IEEE half floats given as raw bits.
    F16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    U8(Vec<u8>),
    I8(Vec<i8>),
}

impl QueryVector {
    /// Position of the first NaN or infinite value (floating-point queries only).
    pub fn first_non_finite(&self) -> Option<usize> {
        match self {
            QueryVector::F16(v) => v.iter().position(|b| b & 0x7c00 == 0x7c00),
            QueryVector::F32(v) => v.iter().position(|x| !x.is_finite()),
            QueryVector::F64(v) => v.iter().position(|x| !x.is_finite()),
            QueryVector::U8(_) | QueryVector::I8(_) => None,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            QueryVector::F16(v) => v.len(),
            QueryVector::F32(v) => v.len(),
            QueryVector::F64(v) => v.len(),
            QueryVector::U8(v) => v.len(),
            QueryVector::I8(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn to_array(&self) -> ArrayRef {
        match self {
            QueryVector::F16(v) => Arc::new(Float16Array::from(
                v.iter().map(|b| half::f16::from_bits(*b)).collect::<Vec<_>>(),
            )),
            QueryVector::F32(v) => Arc::new(Float32Array::from(v.clone())),
            QueryVector::F64(v) => Arc::new(Float64Array::from(v.clone())),
            QueryVector::U8(v) => Arc::new(UInt8Array::from(v.clone())),
            QueryVector::I8(v) => Arc::new(Int8Array::from(v.clone())),
        }
    }
}

/// A vector query executed against one split.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorQuery {
    pub column: String,
    pub vector: QueryVector,
    pub k: u64,
    /// None = the metric the plan chose (or L2).
    pub metric: Option<Metric>,
    pub nprobes: Option<u32>,
    pub refine_factor: Option<u32>,
    pub ef: Option<u32>,
    /// SQL filter applied before candidates are generated.
    pub prefilter: Option<String>,
    /// Columns to return besides `_distance` (empty = every column).
    pub columns: Vec<String>,
    pub with_row_id: bool,
    /// INDEX_SEGMENT splits return `k * refine_factor` approximate candidates (index
    /// distances, not re-ranked) for one global `refine::refine_candidates` after the merge.
    pub defer_refine: bool,
    /// Only neighbours with `lower <= _distance < upper` (exact distances), applied before each
    /// split's top k; None = unbounded on that side.
    pub distance_lower: Option<f32>,
    pub distance_upper: Option<f32>,
    /// Query vectors in `vector` (each of the column's dimension, one after the other); more
    /// than 1 is a batch search: the output gains `query_index` (int32) and k applies per query.
    pub num_queries: usize,
}

impl VectorQuery {
    /// The distance range is well formed: finite bounds, lower not above upper.
    pub fn check_distance_range(&self) -> Result<()> {
        for (name, v) in [("lower", self.distance_lower), ("upper", self.distance_upper)] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(HostError::invalid(format!("the distance range's {name} bound is not a finite number")));
            }
        }
        if let (Some(l), Some(u)) = (self.distance_lower, self.distance_upper) {
            if l > u {
                return Err(HostError::invalid(format!(
                    "the distance range is inverted: lower bound {l} is above upper bound {u}"
                )));
            }
        }
        Ok(())
    }

    /// Whether an exact distance lies in the range.
    pub fn in_distance_range(&self, d: f32) -> bool {
        self.distance_lower.is_none_or(|l| d >= l) && self.distance_upper.is_none_or(|u| d < u)
    }
}

/// Cast the query to the column's element type after checking its dimension; a batch of
/// queries becomes a fixed-size list array with one vector per query.
pub(crate) fn query_array(snapshot: &Snapshot, q: &VectorQuery) -> Result<ArrayRef> {
    let (dim, element) = vector_column(snapshot, &q.column)?;
    if q.vector.is_empty() {
        return Err(HostError::invalid("query vector is empty"));
    }
    if q.num_queries == 0 {
        return Err(HostError::invalid("a batch of 0 queries"));
    }
    if q.num_queries > MAX_BATCH {
        return Err(HostError::invalid(format!("a batch of {} queries exceeds the maximum {MAX_BATCH}", q.num_queries)));
    }
    let want = (dim as usize).checked_mul(q.num_queries).unwrap_or(usize::MAX);
    if q.vector.len() != want {
        return Err(HostError::invalid(if q.num_queries == 1 {
            format!(
                "query vector has dimension {} but column '{}' has dimension {dim}",
                q.vector.len(),
                q.column
            )
        } else {
            format!(
                "a batch of {} queries for column '{}' of dimension {dim} needs {want} values, got {}",
                q.num_queries,
                q.column,
                q.vector.len()
            )
        }));
    }
    if let Some(at) = q.vector.first_non_finite() {
        let d = dim as usize;
        return Err(HostError::invalid(if q.num_queries == 1 {
            format!("query vector value {at} is NaN or infinite")
        } else {
            format!("query vector {} of the batch has a NaN or infinite value at position {}", at / d, at % d)
        }));
    }
    let array = q.vector.to_array();
    let array = if array.data_type() == &element {
        array
    } else {
        arrow::compute::cast(&array, &element).map_err(|e| {
            HostError::invalid(format!(
                "query element type {} cannot be used with column '{}' of {element}: {e}",
                array.data_type(),
                q.column
            ))
        })?
    };
    // One vector, or a batch of queries — or, for a multivector column, the vectors of one
    // multivector query (always a list, as Lance expects).
    let multivector = crate::split::is_multivector(snapshot, &q.column);
    if q.num_queries == 1 && !multivector {
        return Ok(array);
    }
    let item = Arc::new(arrow_schema::Field::new("item", element.clone(), true));
    Ok(Arc::new(
        arrow::array::FixedSizeListArray::try_new(item, dim, array, None)
            .map_err(|e| HostError::internal(format!("cannot build the batch of queries: {e}")))?,
    ))
}

/// Largest batch of queries one call accepts.
pub const MAX_BATCH: usize = 1 << 16;

/// Execute a vector-search split: an INDEX_SEGMENT split searches only its segment, a FLAT
/// split brute-forces its fragment. Output: the projected columns, `_distance` (float32) and
/// `_rowid` when asked.
pub fn search_split(snapshot: &Snapshot, split: &Split, q: &VectorQuery) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Search);
    let start = || {
        let (scanner, stats) = prepared_search(snapshot, split, q)?;
        Ok(BatchReader::start(scanner, "vector search failed")?.with_stats(stats).reading(snapshot))
    };
    start().map_err(|e: HostError| e.with_local_paths(snapshot.uri()))
}

/// The plan Lance would run for this split search (index segment or flat pass, prefilter,
/// re-rank), as Lance's own plan text; nothing is read.
pub fn explain_search(snapshot: &Snapshot, split: &Split, q: &VectorQuery) -> Result<String> {
    let (scanner, _) = prepared_search(snapshot, split, q)?;
    Ok(crate::error::local_paths(snapshot.uri(), &scan::explain(scanner)?))
}

fn prepared_search(
    snapshot: &Snapshot,
    split: &Split,
    q: &VectorQuery,
) -> Result<(lance::dataset::scanner::Scanner, OpStats)> {
    split.check_snapshot(snapshot)?;
    match split.kind {
        SplitKind::Scan => {
            return Err(HostError::invalid(
                "a scan split cannot run a vector search; plan with the vector planner",
            ))
        }
        SplitKind::TextSegment | SplitKind::TextFlat => {
            return Err(HostError::invalid(
                "a full-text split cannot run a vector search; use the full-text search of splits",
            ))
        }
        SplitKind::Changes => {
            return Err(HostError::invalid(
                "a changes split cannot run a vector search; read it with the scan of splits",
            ))
        }
        SplitKind::IndexSegment | SplitKind::Flat => {}
    }
    if q.column != split.column {
        return Err(HostError::invalid(format!(
            "query column '{}' differs from the split's column '{}'",
            q.column, split.column
        )));
    }
    if q.k == 0 {
        return Err(HostError::invalid("k must be at least 1"));
    }
    q.check_distance_range()?;
    if q.defer_refine && crate::split::is_multivector(snapshot, &q.column) {
        return Err(HostError::not_supported(
            "defer_refine is not supported on a multivector column (its segments re-rank themselves)",
        ));
    }
    if q.num_queries > 1 && q.defer_refine {
        return Err(HostError::not_supported(
            "defer_refine is not supported for a batch of queries (re-rank each query's split results instead)",
        ));
    }
    // A split cannot return more rows than it covers: bounding k (and k * refine) by the
    // split's rows changes no result and keeps huge values from reaching Lance's allocations.
    let rows = split.row_count.max(1);
    let k = usize::try_from(q.k.min(rows)).map_err(|_| HostError::invalid("k is too large"))?;
    // A split of several segments (`split::combine`) searches them in one plan, which merges
    // their candidates before the re-rank; it re-ranks `segments` times as many candidates, as
    // many as the segments' own splits would re-rank between them. A deferred re-rank needs
    // no more: the best k * refine of the merged candidates are the best of the segments'.
    let per_segments = if split.kind == SplitKind::IndexSegment && !q.defer_refine {
        u64::try_from(split.segments.len().max(1)).unwrap_or(u64::MAX)
    } else {
        1
    };
    let refine = match (q.refine_factor, per_segments) {
        (None, 1) => None,
        (r, n) => Some(
            u64::from(r.unwrap_or(1))
                .saturating_mul(n)
                .min(rows.div_ceil(k as u64))
                .clamp(1, u64::from(u32::MAX)) as u32,
        ),
    };
    let metric = match (q.metric, split.metric) {
        (Some(m), Some(planned)) if split.kind == SplitKind::IndexSegment && m != planned => {
            return Err(HostError::invalid(format!(
                "metric {} does not match the metric {} of index '{}' this split searches",
                m.name(),
                planned.name(),
                split.index_name
            )))
        }
        (Some(m), _) => m,
        (None, Some(planned)) => planned,
        (None, None) => Metric::L2,
    };
    let query = query_array(snapshot, q)?;
    let lance_err = |e| HostError::from_lance("invalid vector query", e);
    let stats = OpStats::default();
    let mut scanner = stats.dataset(snapshot).scan();
    scan::project(snapshot, &mut scanner, &q.columns)?;
    if q.with_row_id || q.columns.iter().any(|c| c == ROW_ID) {
        scanner.with_row_id();
    }
    scanner.prefilter(true);
    if let Some(f) = &q.prefilter {
        if f.trim().is_empty() {
            return Err(HostError::invalid("prefilter is empty"));
        }
        scan::check_sql_filter(snapshot, f)?;
        scanner.filter(f).map_err(lance_err)?;
    }
    match split.kind {
        SplitKind::Flat => {
            let frags = scan::resolve_fragments(snapshot, &split.fragment_ids)?;
            scanner.with_fragments(frags);
            scanner.nearest(&q.column, query.as_ref(), k).map_err(lance_err)?;
            scanner.use_index(false);
        }
        SplitKind::IndexSegment => {
            let candidates = if q.defer_refine {
                k.saturating_mul(refine.unwrap_or(1) as usize).min(rows as usize)
            } else {
                k
            };
            scanner.nearest(&q.column, query.as_ref(), candidates).map_err(lance_err)?;
            scanner.with_index_segments(split.segments.clone()).map_err(lance_err)?;
        }
        SplitKind::Scan | SplitKind::TextSegment | SplitKind::TextFlat | SplitKind::Changes => unreachable!(),
    }
    scanner.distance_metric(metric.to_lance());
    // The range applies to exact distances: index segments that defer their re-rank return
    // approximate ones, so there the range is applied by the global refine instead.
    let deferred = split.kind == SplitKind::IndexSegment && q.defer_refine;
    if !deferred && (q.distance_lower.is_some() || q.distance_upper.is_some()) {
        scanner.distance_range(q.distance_lower, q.distance_upper);
    }
    if let Some(n) = q.nprobes {
        scanner.nprobes(n as usize);
    }
    // Index segments re-rank their candidates with exact distances (refine factor 1 unless the
    // host asks for more), so `_distance` means the same thing in every split's output and a
    // global merge across segments and flat splits compares like with like.
    // With `defer_refine` they return approximate candidates instead and the host refines
    // them once, globally, after merging (`refine::refine_candidates`).
    match (split.kind, refine) {
        (SplitKind::IndexSegment, _) if q.defer_refine => {}
        (_, Some(r)) => {
            scanner.refine(r);
        }
        (SplitKind::IndexSegment, None) => {
            scanner.refine(1);
        }
        _ => {}
    }
    if let Some(ef) = q.ef {
        scanner.ef(ef as usize);
    }
    stats.attach(&mut scanner);
    Ok((scanner, stats))
}
