//! C ABI of per-split vector search and the top-K merge helper.

use std::ffi::c_char;

use arrow::array::RecordBatchReader;
use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::error::{HostError, Result};
use crate::merge;
use crate::search::{self, QueryVector, VectorQuery};

use super::handles::LanceDataset;
use super::handles::LanceSplit;
use super::split::metric_arg;
use super::scan::{export_stream, import_stream};
use crate::io_stats::OpStats;
use super::sized::{init_out, read_in, Extensible, Layout};
use super::{guard_code, handle_ref, opt_str_arg, out_arg, slice_arg, str_arg, str_list_arg};

/// Element types of a query vector.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceElementType {
    /// IEEE 754 half precision, given as raw `uint16_t` bits.
    LANCE_ELEMENT_F16 = 1,
    LANCE_ELEMENT_F32 = 2,
    LANCE_ELEMENT_F64 = 3,
    LANCE_ELEMENT_U8 = 4,
    LANCE_ELEMENT_I8 = 5,
}

/// A vector query. Initialise with `lance_vector_query_init_v2(&q, sizeof q)`, then set what
/// you need. Every pointer inside is borrowed for the duration of the call that receives the
/// query.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceVectorQuery {
    /// `sizeof(LanceVectorQuery)` as the caller compiled it; set by `lance_vector_query_init_v2`
    /// (see "ABI compatibility" in the README).
    pub struct_size: usize,
    /// The vector column; must be the column the split was planned for.
    pub column: *const c_char,
    /// `dimension` elements of type `element_type`; the dimension must equal the column's.
    pub vector: *const core::ffi::c_void,
    pub dimension: usize,
    /// A `LanceElementType` value. The query is cast to the column's element type.
    pub element_type: i32,
    /// Results per split (at least 1).
    pub k: u64,
    /// A `LanceMetric` value; LANCE_METRIC_DEFAULT = the plan's metric.
    pub metric: i32,
    /// IVF partitions to probe; 0 = Lance's default, adaptive probing: at least 1 partition,
    /// more as Lance's default search effort (0.5) decides. Set it for predictable recall.
    pub nprobes: u32,
    /// Index segment splits re-rank the index's `k * refine_factor` best candidates by exact
    /// distance; 0 = 1. The `_distance` of every returned row is then exact, so merges compare
    /// like with like, but the candidates themselves come from the index: with a quantizing
    /// index (IVF_PQ, IVF_SQ) and refine_factor 1, true neighbours the quantizer ranks below k
    /// can be lost (the test `refine_factor_trades_reads_for_recall_on_ivf_pq` measures
    /// recall@10 0.95 with 1 and 1.00 with 5 on its table). Use 5 or more with IVF_PQ when
    /// recall matters.
    pub refine_factor: u32,
    /// HNSW search breadth; 0 = default.
    pub ef: u32,
    /// SQL filter applied before candidates are generated; NULL = none.
    pub prefilter_sql: *const c_char,
    /// Columns to return besides `_distance` (`_rowid` allowed); 0 = every column.
    pub columns: *const *const c_char,
    pub num_columns: usize,
    /// Append `_rowid` (needed by `lance_topk_merge` and `lance_dataset_take_rows`).
    pub with_row_id: bool,
    /// LANCE_SPLIT_INDEX_SEGMENT splits skip their own re-rank and return `k * refine_factor`
    /// candidates with the index's approximate `_distance`; the host merges them
    /// (`lance_topk_merge` with `k * refine_factor`) and re-ranks the merged candidates once
    /// with `lance_dataset_refine_v2` — one batched read of candidate vectors per query instead of
    /// one per segment. FLAT splits are exact either way. false = each segment re-ranks.
    pub defer_refine: bool,
    /// Batch search (since 0.4): `vector` holds this many query vectors of `dimension`
    /// elements each, one after the other; 0 or 1 = one query. With more, every split searches
    /// all of them in one call, k applies per query, the output gains `query_index` (int32, the
    /// query's position) and `lance_topk_merge` merges per query. Not with `defer_refine`. On a
    /// multivector column (a list of vectors per row) the vectors are instead the one
    /// multivector query, scored by Lance's multivector distance (no `query_index`).
    pub num_queries: u64,
    /// Distance range (since 0.4): only neighbours with `distance_lower <= _distance <
    /// distance_upper`, applied before each split's top k; every returned row is in range by
    /// exact distance. Flat splits apply it to exact distances; an index segment passes it to
    /// Lance, which applies it to the index's approximate distances and again after the
    /// re-rank (a row can be missed near a bound, as in Lance's own search); with
    /// `defer_refine`, index segments leave it to `lance_dataset_refine_v2`, which applies it to
    /// exact distances. A bound is used only when its bit of `distance_bounds` is set.
    pub distance_lower: f32,
    pub distance_upper: f32,
    /// Bit 0: `distance_lower` is set; bit 1: `distance_upper` is set; 0 = no range.
    pub distance_bounds: u32,
}

impl Default for LanceVectorQuery {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            column: std::ptr::null(),
            vector: std::ptr::null(),
            dimension: 0,
            element_type: LanceElementType::LANCE_ELEMENT_F32 as i32,
            k: 10,
            metric: 0,
            nprobes: 0,
            refine_factor: 0,
            ef: 0,
            prefilter_sql: std::ptr::null(),
            columns: std::ptr::null(),
            num_columns: 0,
            with_row_id: true,
            defer_refine: false,
            num_queries: 0,
            distance_lower: 0.0,
            distance_upper: 0.0,
            distance_bounds: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, fields valid for any C value; the 0.1
// layout (the same fields without struct_size) is 88 bytes.
unsafe impl Extensible for LanceVectorQuery {
    const NAME: &'static str = "LanceVectorQuery";
    const MIN_SIZE: usize = 96;
    const V0_SIZE: usize = 88;
    fn initial() -> Self {
        Self::default()
    }
}

fn query_arg(q: *const LanceVectorQuery, layout: Layout) -> Result<VectorQuery> {
    let q = &read_in(q, layout, "query")?.ok_or_else(|| HostError::invalid("query is NULL"))?;
    if q.distance_bounds & !3 != 0 {
        return Err(HostError::invalid(format!(
            "query.distance_bounds {} has bits other than 1 (lower) and 2 (upper)",
            q.distance_bounds
        )));
    }
    let column = str_arg(q.column, "query.column")?.to_string();
    if q.dimension == 0 {
        return Err(HostError::invalid("query.dimension is 0"));
    }
    let num_queries = usize::try_from(q.num_queries.max(1)).map_err(|_| HostError::invalid("query.num_queries is too large"))?;
    if num_queries > crate::search::MAX_BATCH {
        return Err(HostError::invalid(format!(
            "query.num_queries {num_queries} exceeds the maximum {}",
            crate::search::MAX_BATCH
        )));
    }
    let n = q.dimension.checked_mul(num_queries).ok_or_else(|| HostError::invalid("query.dimension * num_queries overflows"))?;
    let vector = match q.element_type {
        1 => QueryVector::F16(slice_arg(q.vector as *const u16, n, "query.vector")?.to_vec()),
        2 => QueryVector::F32(slice_arg(q.vector as *const f32, n, "query.vector")?.to_vec()),
        3 => QueryVector::F64(slice_arg(q.vector as *const f64, n, "query.vector")?.to_vec()),
        4 => QueryVector::U8(slice_arg(q.vector as *const u8, n, "query.vector")?.to_vec()),
        5 => QueryVector::I8(slice_arg(q.vector as *const i8, n, "query.vector")?.to_vec()),
        other => {
            return Err(HostError::invalid(format!(
                "query.element_type {other} is not a LanceElementType value"
            )))
        }
    };
    Ok(VectorQuery {
        column,
        vector,
        k: q.k,
        metric: metric_arg(q.metric)?,
        nprobes: (q.nprobes > 0).then_some(q.nprobes),
        refine_factor: (q.refine_factor > 0).then_some(q.refine_factor),
        ef: (q.ef > 0).then_some(q.ef),
        prefilter: opt_str_arg(q.prefilter_sql, "query.prefilter_sql")?.map(str::to_string),
        columns: str_list_arg(q.columns, q.num_columns, "query.columns")?,
        with_row_id: q.with_row_id,
        defer_refine: q.defer_refine,
        distance_lower: (q.distance_bounds & 1 != 0).then_some(q.distance_lower),
        distance_upper: (q.distance_bounds & 2 != 0).then_some(q.distance_upper),
        num_queries,
    })
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with defaults —
/// f32 elements, k = 10, default metric, default nprobes/ef, default refine, no prefilter,
/// every column, with `_rowid` — and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is
/// smaller than the first sized `LanceVectorQuery`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_vector_query_init_v2(out: *mut LanceVectorQuery, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Execute a vector-search split on `dataset` (which must be the split's table at the split's
/// version, e.g. from `lance_split_open_dataset`) into `out`. A LANCE_SPLIT_INDEX_SEGMENT split
/// searches only its segment; a LANCE_SPLIT_FLAT split brute-forces its fragment. Output: the
/// projected columns, `_distance` (float32) and `_rowid` when asked.
///
/// Caller owns the stream; release it with `out->release(out)`. Borrows `dataset`, `split` and
/// `query`. Thread-safe. Returns an error code (LANCE_ERR_INVALID_ARGUMENT for a wrong
/// dimension, a metric that contradicts the split's index, a foreign split); `out` is not
/// written on failure.
#[no_mangle]
pub extern "C" fn lance_split_search_v2(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceVectorQuery,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    split_search(dataset, split, query, Layout::Sized, out)
}

pub(crate) fn split_search(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceVectorQuery,
    layout: Layout,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let q = query_arg(query, layout)?;
        let reader = search::search_split(ds.split_table(&split.split)?, &split.split, &q)?;
        export_stream(reader, out);
        Ok(())
    })
}

/// Describe the plan Lance would run for `lance_split_search_v2` with the same arguments —
/// whether the index segment or a flat pass answers it, the prefilter, the re-rank — as
/// Lance's own plan text. Nothing is read.
///
/// Caller owns `*out`; free it with `lance_string_free`. Borrows its arguments. Thread-safe.
/// Returns an error code as `lance_split_search_v2`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_explain_search_v2(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceVectorQuery,
    out: *mut *mut c_char,
) -> i32 {
    split_explain_search(dataset, split, query, Layout::Sized, out)
}

pub(crate) fn split_explain_search(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceVectorQuery,
    layout: Layout,
    out: *mut *mut c_char,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let q = query_arg(query, layout)?;
        let text = search::explain_search(ds.split_table(&split.split)?, &split.split, &q)?;
        *out = super::owned_cstring(&text).into_raw();
        Ok(())
    })
}

/// Re-rank approximate candidates exactly: reads every row of `candidates` (a stream with
/// `_rowid` uint64 and `_distance` float32, typically the `lance_topk_merge` of index-segment
/// splits searched with `defer_refine`), fetches the candidates' vectors from `dataset` in one
/// batched take, and writes to `out` the `query->k` rows closest to `query->vector` by exact
/// distance (ascending, ties by `_rowid`), with the candidates' schema and `_distance` exact.
/// The metric is `query->metric`, or for LANCE_METRIC_DEFAULT the one the vector planner
/// chooses for `query->column`. Only `column`, `vector`, `dimension`, `element_type`, `k` and
/// `metric` of the query are used. The result can be merged with FLAT split results by
/// `lance_topk_merge`. The output's I/O statistics add the candidates' (when they came from
/// this library) to the refine's own reads.
///
/// Takes ownership of `candidates`, also on failure (it is released). Caller owns `out`;
/// release it with `out->release(out)`. Borrows `dataset` and `query`. Thread-safe. Returns an
/// error code (LANCE_ERR_INVALID_ARGUMENT for a wrong dimension or a stream without
/// `_rowid`/`_distance`, LANCE_ERR_NOT_FOUND for a row id not in the snapshot); `out` is not
/// written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_refine_v2(
    dataset: *const LanceDataset,
    query: *const LanceVectorQuery,
    candidates: *mut FFI_ArrowArrayStream,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    dataset_refine(dataset, query, Layout::Sized, candidates, out)
}

pub(crate) fn dataset_refine(
    dataset: *const LanceDataset,
    query: *const LanceVectorQuery,
    layout: Layout,
    candidates: *mut FFI_ArrowArrayStream,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        // Take ownership first so the stream is released on every failure path.
        let (reader, input_stats) = import_stream(candidates, "candidates")?;
        let ds = handle_ref(dataset, "dataset")?;
        let q = query_arg(query, layout)?;
        let out = out_arg(out, "out")?;
        let refined = crate::refine::refine_candidates(ds.table()?, &q, reader)?;
        // The figures of the refine's own reads plus those of the candidates' searches.
        let own = refined.stats();
        let total = OpStats::sum(input_stats.iter().chain(std::iter::once(&own)));
        export_stream(refined.with_stats(total), out);
        Ok(())
    })
}

/// Merge `num_streams` candidate streams (e.g. per-split search results, all with the same
/// schema including `_distance` and `_rowid`) into the `k` rows after `offset` with the
/// smallest `_distance`, ties broken by `_rowid`, written to `out`. Results of a batch search
/// (with `query_index`) are merged per query: k rows after `offset` for each query, ordered by
/// `query_index`, then `_distance`.
///
/// The merged stream's I/O statistics (`lance_stream_io_stats_v2`) are the sum of those of its
/// inputs that came from this library (read to their end by the merge); only the merged rows
/// count as returned in the `stream.*` metrics.
///
/// Takes ownership of every input stream, also on failure (they are released). Caller owns
/// `out`; release it with `out->release(out)`. Thread-safe. Returns an error code; `out` is
/// not written on failure.
#[no_mangle]
pub extern "C" fn lance_topk_merge(
    streams: *mut FFI_ArrowArrayStream,
    num_streams: usize,
    k: u64,
    offset: u64,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let (readers, stats) = import_streams(streams, num_streams)?;
        let out = out_arg(out, "out")?;
        let reader = merge::merge_top_k(readers, k, offset)?;
        export_stream(reader.with_stats(OpStats::sum(stats.iter())), out);
        Ok(())
    })
}

/// Take ownership of `n` caller streams — all of them, also when one is bad (each is
/// released) — as readers, with the counters of those that come from this library.
pub(crate) fn import_streams(
    streams: *mut FFI_ArrowArrayStream,
    n: usize,
) -> Result<(Vec<Box<dyn RecordBatchReader + Send>>, Vec<OpStats>)> {
    slice_arg(streams as *const FFI_ArrowArrayStream, n, "streams")?;
    let mut readers = Vec::with_capacity(n);
    let mut stats = Vec::new();
    let mut first_error = None;
    for i in 0..n {
        // SAFETY: `streams` holds `n` streams (checked above for NULL with n > 0).
        match import_stream(unsafe { streams.add(i) }, &format!("stream {i}")) {
            Ok((r, s)) => {
                readers.push(r);
                stats.extend(s);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok((readers, stats)),
    }
}
