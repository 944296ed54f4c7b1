//! Global re-rank of approximate candidates: after a host merged the approximate top
//! `k * refine_factor` of its index-segment splits (searched with `defer_refine`), one batched
//! take of the candidates' vectors gives exact distances and the final top-K — what a single
//! global Lance search with `refine` does, instead of one re-rank (and one take) per segment.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float32Array, RecordBatch, RecordBatchReader, UInt32Array,
};
use arrow_schema::DataType;

use crate::error::{HostError, LanceErrorCode, Result};
use crate::columns::DISTANCE;
use crate::split;
use crate::scan::{BatchReader, ROW_ID};
use crate::search::{query_array, VectorQuery};
use crate::snapshot::Snapshot;
use crate::io_stats::OpStats;

/// Read every candidate of `input` (which must carry `_rowid` uint64 and `_distance` float32,
/// like a split search's output), compute each one's exact distance to the query from the
/// snapshot's vectors (one take for all of them), and return the `q.k` closest, ascending by
/// distance then `_rowid`, with the input's schema and columns and `_distance` exact.
pub fn refine_candidates(
    snapshot: &Snapshot,
    q: &VectorQuery,
    input: Box<dyn RecordBatchReader + Send>,
) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Refine);
    if q.k == 0 {
        return Err(HostError::invalid("k must be at least 1"));
    }
    q.check_distance_range()?;
    if q.num_queries != 1 || crate::split::is_multivector(snapshot, &q.column) {
        return Err(HostError::not_supported(
            "refine takes one query vector of a single-vector column, not a batch or a multivector query",
        ));
    }
    let query = query_array(snapshot, q)?;
    let metric = match q.metric {
        Some(m) => m,
        None => split::default_metric(snapshot, &q.column)?,
    };
    let schema = input.schema();
    let dist_idx = schema
        .index_of(DISTANCE)
        .map_err(|_| HostError::invalid("candidate stream lacks a '_distance' column"))?;
    let rowid_idx = schema.index_of(ROW_ID).map_err(|_| {
        HostError::invalid("candidate stream lacks a '_rowid' column (search with with_row_id)")
    })?;
    if schema.field(dist_idx).data_type() != &DataType::Float32 {
        return Err(HostError::invalid("'_distance' must be float32"));
    }
    if schema.field(rowid_idx).data_type() != &DataType::UInt64 {
        return Err(HostError::invalid("'_rowid' must be uint64"));
    }
    let mut batches = Vec::new();
    for b in input {
        let b = b.map_err(|e| {
            HostError::new(
                LanceErrorCode::LANCE_ERR_IO,
                format!("candidate stream failed: {e}"),
            )
        })?;
        if b.num_rows() > 0 {
            batches.push(b);
        }
    }
    let candidates = arrow::compute::concat_batches(&schema, &batches)
        .map_err(|e| HostError::internal(format!("cannot gather candidates: {e}")))?;
    drop(batches);
    if candidates.num_rows() == 0 {
        return Ok(BatchReader::from_batch(candidates));
    }
    let row_ids = candidates.column(rowid_idx).as_primitive::<arrow::datatypes::UInt64Type>();
    if row_ids.null_count() > 0 {
        return Err(HostError::invalid("'_rowid' of a candidate is null"));
    }

    // One take of every distinct candidate's vector.
    let mut unique: Vec<u64> = row_ids.values().to_vec();
    unique.sort_unstable();
    unique.dedup();
    let stats = OpStats::default();
    let fetched = crate::take::fetch_rows(
        snapshot,
        stats.dataset(snapshot),
        &unique,
        std::slice::from_ref(&q.column),
        "candidate",
    )?;
    let vectors = fetched
        .column(0)
        .as_fixed_size_list_opt()
        .ok_or_else(|| HostError::internal("take returned no vector column"))?;
    let exact = metric
        .to_lance()
        .arrow_batch_func()(query.as_ref(), vectors)
        .map_err(|e| HostError::invalid(format!("cannot compute exact distances: {e}")))?;
    let by_id: HashMap<u64, usize> = unique.iter().enumerate().map(|(i, id)| (*id, i)).collect();

    // Rank candidates by exact distance (null vectors last), ties by row id; keep k.
    let mut order: Vec<(f32, u64, u32)> = row_ids
        .values()
        .iter()
        .enumerate()
        .map(|(row, id)| {
            let i = by_id[id];
            let d = if exact.is_null(i) { f32::INFINITY } else { exact.value(i) };
            (d, *id, row as u32)
        })
        .collect();
    // The distance range applies to the exact distances, before the top k.
    order.retain(|o| q.in_distance_range(o.0));
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    order.truncate(usize::try_from(q.k).unwrap_or(usize::MAX));
    let take = UInt32Array::from(order.iter().map(|o| o.2).collect::<Vec<_>>());
    let distances: ArrayRef = Arc::new(Float32Array::from(
        order.iter().map(|o| o.0).collect::<Vec<_>>(),
    ));
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, col) in candidates.columns().iter().enumerate() {
        if i == dist_idx {
            columns.push(distances.clone());
        } else {
            columns.push(
                arrow::compute::take(col.as_ref(), &take, None)
                    .map_err(|e| HostError::internal(format!("cannot reorder candidates: {e}")))?,
            );
        }
    }
    let out = RecordBatch::try_new(schema, columns)
        .map_err(|e| HostError::internal(format!("cannot build refined rows: {e}")))?;
    Ok(BatchReader::from_batch(out).with_stats(stats))
}
