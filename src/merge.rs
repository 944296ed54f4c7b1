//! Global top-K over per-split candidate streams, for hosts without a TopN operator.

use arrow::array::{Array, Float32Array, RecordBatch, RecordBatchReader, UInt64Array};
use arrow::compute::interleave_record_batch;

use crate::error::{HostError, Result};
use crate::scan::{BatchReader, ROW_ID};

use crate::columns::{DISTANCE, QUERY_INDEX, SCORE};

/// Merge candidate readers into the `k` rows after `offset` with the smallest `_distance`
/// (ties by `_rowid`) — per query when the inputs carry `query_index` (batch searches). Every input must have the same schema with `_distance` (float32) and
/// `_rowid` (uint64).
pub fn merge_top_k(
    inputs: Vec<Box<dyn RecordBatchReader + Send>>,
    k: u64,
    offset: u64,
) -> Result<BatchReader> {
    merge_by(inputs, k, offset, DISTANCE, false)
}

/// Merge full-text results into the `k` rows after `offset` with the largest `_score` (ties by
/// `_rowid` ascending). Every input must have the same schema with `_score` (float32) and
/// `_rowid` (uint64).
pub fn merge_top_k_by_score(
    inputs: Vec<Box<dyn RecordBatchReader + Send>>,
    k: u64,
    offset: u64,
) -> Result<BatchReader> {
    merge_by(inputs, k, offset, SCORE, true)
}

fn merge_by(
    inputs: Vec<Box<dyn RecordBatchReader + Send>>,
    k: u64,
    offset: u64,
    key: &str,
    descending: bool,
) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Merge);
    if inputs.is_empty() {
        return Err(HostError::invalid("no input streams to merge"));
    }
    let schema = inputs[0].schema();
    for (i, r) in inputs.iter().enumerate() {
        if r.schema().fields() != schema.fields() {
            return Err(HostError::invalid(format!(
                "input stream {i} has a different schema from stream 0"
            )));
        }
    }
    let dist_idx = schema
        .index_of(key)
        .map_err(|_| HostError::invalid(format!("input streams lack a '{key}' column")))?;
    let rowid_idx = schema
        .index_of(ROW_ID)
        .map_err(|_| HostError::invalid("input streams lack a '_rowid' column (search with with_row_id)"))?;
    let mut batches: Vec<RecordBatch> = Vec::new();
    for (i, reader) in inputs.into_iter().enumerate() {
        for b in reader {
            let b = b.map_err(|e| HostError::new(crate::LanceErrorCode::LANCE_ERR_IO, format!("input stream {i} failed: {e}")))?;
            if b.num_rows() > 0 {
                batches.push(b);
            }
        }
    }
    // A batch search's results carry `query_index`: the top k is then taken per query.
    let query_idx = schema.index_of(QUERY_INDEX).ok();
    let mut candidates: Vec<(i64, f32, u64, usize, usize)> = Vec::new();
    for (bi, b) in batches.iter().enumerate() {
        let d = b
            .column(dist_idx)
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| HostError::invalid(format!("'{key}' must be float32")))?;
        let r = b
            .column(rowid_idx)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| HostError::invalid("'_rowid' must be uint64"))?;
        let query = match query_idx {
            Some(i) => Some(
                arrow::compute::cast(b.column(i), &arrow_schema::DataType::Int64)
                    .map_err(|e| HostError::invalid(format!("'{QUERY_INDEX}' is not an integer column: {e}")))?,
            ),
            None => None,
        };
        let query = query.as_ref().map(|a| a.as_any().downcast_ref::<arrow::array::Int64Array>().expect("cast to Int64"));
        for row in 0..b.num_rows() {
            // Nulls sort last; for a descending key the value is negated.
            let dist = match (d.is_null(row), descending) {
                (true, _) => f32::INFINITY,
                (false, false) => d.value(row),
                (false, true) => -d.value(row),
            };
            let qi = query.map_or(0, |q| q.value(row));
            candidates.push((qi, dist, r.value(row), bi, row));
        }
    }
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    let (k, offset) = (usize::try_from(k).unwrap_or(usize::MAX), usize::try_from(offset).unwrap_or(usize::MAX));
    let mut picks: Vec<(usize, usize)> = Vec::new();
    for group in candidates.chunk_by(|a, b| a.0 == b.0) {
        let start = offset.min(group.len());
        let end = start.saturating_add(k).min(group.len());
        picks.extend(group[start..end].iter().map(|c| (c.3, c.4)));
    }
    let out = if batches.is_empty() {
        RecordBatch::new_empty(schema.clone())
    } else {
        let refs: Vec<&RecordBatch> = batches.iter().collect();
        interleave_record_batch(&refs, &picks)
            .map_err(|e| HostError::internal(format!("cannot assemble merged rows: {e}")))?
    };
    Ok(BatchReader::from_batch(out))
}
