//! Reciprocal-rank fusion of a vector result and a full-text result (hybrid search).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, Float32Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{HostError, LanceErrorCode, Result};
use crate::scan::{BatchReader, ROW_ID};
use crate::columns::{DISTANCE, RELEVANCE, SCORE};

/// Fuse a vector result (ranked by `_distance` ascending) and a full-text result (ranked by
/// `_score` descending) by reciprocal rank: each row's `_relevance_score` is the sum over the
/// lists it appears in of `1 / (rrf_k + rank)`, rank starting at 1 (ties in a list ranked by
/// `_rowid`). Returns the `k` best rows (`_relevance_score` descending, ties by `_rowid`) with
/// `_rowid`, `_relevance_score`, and `_distance` / `_score` (null where the row is absent from
/// that list).
pub fn rrf_merge(
    vector: Box<dyn arrow::array::RecordBatchReader + Send>,
    text: Box<dyn arrow::array::RecordBatchReader + Send>,
    k: u64,
    rrf_k: f64,
) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Merge);
    if k == 0 {
        return Err(HostError::invalid("k must be at least 1"));
    }
    if !rrf_k.is_finite() || rrf_k < 0.0 {
        return Err(HostError::invalid(format!("the RRF constant must be finite and >= 0 (got {rrf_k})")));
    }
    let ranked_vec = ranked(vector, DISTANCE, false, "vector")?;
    let ranked_text = ranked(text, SCORE, true, "full-text")?;
    let mut fused: HashMap<u64, (f64, Option<f32>, Option<f32>)> = HashMap::new();
    for (rank, (id, d)) in ranked_vec.iter().enumerate() {
        let e = fused.entry(*id).or_insert((0.0, None, None));
        if e.1.is_none() {
            e.0 += 1.0 / (rrf_k + rank as f64 + 1.0);
            e.1 = Some(*d);
        }
    }
    for (rank, (id, s)) in ranked_text.iter().enumerate() {
        let e = fused.entry(*id).or_insert((0.0, None, None));
        if e.2.is_none() {
            e.0 += 1.0 / (rrf_k + rank as f64 + 1.0);
            e.2 = Some(*s);
        }
    }
    let mut rows: Vec<(u64, f64, Option<f32>, Option<f32>)> =
        fused.into_iter().map(|(id, (r, d, s))| (id, r, d, s)).collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    rows.truncate(usize::try_from(k).unwrap_or(usize::MAX));
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new(ROW_ID, DataType::UInt64, false),
        Field::new(RELEVANCE, DataType::Float32, false),
        Field::new(DISTANCE, DataType::Float32, true),
        Field::new(SCORE, DataType::Float32, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>())),
            Arc::new(Float32Array::from(rows.iter().map(|r| r.1 as f32).collect::<Vec<_>>())),
            Arc::new(Float32Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())),
            Arc::new(Float32Array::from(rows.iter().map(|r| r.3).collect::<Vec<_>>())),
        ],
    )
    .map_err(|e| HostError::internal(format!("cannot build fused result: {e}")))?;
    Ok(BatchReader::from_batch(batch))
}

/// (row id, value) of every row of `input`, ranked by `column` (descending when `desc`), ties
/// by row id.
fn ranked(
    input: Box<dyn arrow::array::RecordBatchReader + Send>,
    column: &str,
    desc: bool,
    what: &str,
) -> Result<Vec<(u64, f32)>> {
    let schema = input.schema();
    let vi = schema
        .index_of(column)
        .map_err(|_| HostError::invalid(format!("the {what} stream lacks a '{column}' column")))?;
    let ri = schema
        .index_of(ROW_ID)
        .map_err(|_| HostError::invalid(format!("the {what} stream lacks a '_rowid' column")))?;
    let mut out = Vec::new();
    for b in input {
        let b = b.map_err(|e| HostError::new(LanceErrorCode::LANCE_ERR_IO, format!("the {what} stream failed: {e}")))?;
        let v = b
            .column(vi)
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| HostError::invalid(format!("'{column}' of the {what} stream must be float32")))?;
        let r = b
            .column(ri)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| HostError::invalid(format!("'_rowid' of the {what} stream must be uint64")))?;
        for i in 0..b.num_rows() {
            let x = if v.is_null(i) {
                if desc { f32::NEG_INFINITY } else { f32::INFINITY }
            } else {
                v.value(i)
            };
            out.push((r.value(i), x));
        }
    }
    out.sort_by(|a, b| {
        let o = if desc { b.1.total_cmp(&a.1) } else { a.1.total_cmp(&b.1) };
        o.then(a.0.cmp(&b.0))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(batch: RecordBatch) -> Box<dyn arrow::array::RecordBatchReader + Send> {
        Box::new(arrow::array::RecordBatchIterator::new(vec![Ok(batch.clone())], batch.schema()))
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let vec_batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(DISTANCE, DataType::Float32, true),
                Field::new(ROW_ID, DataType::UInt64, false),
            ])),
            vec![Arc::new(Float32Array::from(vec![0.5, 0.1, 0.9])), Arc::new(UInt64Array::from(vec![10, 20, 30]))],
        )
        .unwrap();
        let text_batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(SCORE, DataType::Float32, false),
                Field::new(ROW_ID, DataType::UInt64, false),
            ])),
            vec![Arc::new(Float32Array::from(vec![3.0, 7.0])), Arc::new(UInt64Array::from(vec![30, 40]))],
        )
        .unwrap();
        let out: Vec<RecordBatch> =
            rrf_merge(reader(vec_batch), reader(text_batch), 10, 60.0).unwrap().collect_batches().unwrap();
        let b = &out[0];
        let ids = b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap().values().to_vec();
        let rel = b.column(1).as_any().downcast_ref::<Float32Array>().unwrap().values().to_vec();
        // vector ranks: 20 (1), 10 (2), 30 (3); text ranks: 40 (1), 30 (2).
        let expect = |ranks: &[f64]| ranks.iter().map(|r| 1.0 / (60.0 + r)).sum::<f64>() as f32;
        let mut want = vec![
            (30u64, expect(&[3.0, 2.0])),
            (20, expect(&[1.0])),
            (40, expect(&[1.0])),
            (10, expect(&[2.0])),
        ];
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        assert_eq!(ids, want.iter().map(|w| w.0).collect::<Vec<_>>());
        assert_eq!(rel, want.iter().map(|w| w.1).collect::<Vec<_>>());
        let d = b.column(2).as_any().downcast_ref::<Float32Array>().unwrap();
        let pos40 = ids.iter().position(|i| *i == 40).unwrap();
        assert!(d.is_null(pos40), "a row only in the text list has no distance");
    }
}
