//! Take rows by row id (late materialization).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{Field, Schema};

use crate::error::{HostError, Result};
use crate::scan::{validate_columns, BatchReader, ROW_ID};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::OpStats;

/// Check that every id names a visible row of the snapshot (row ids are row addresses for
/// tables without stable row ids: fragment id in the high 32 bits, offset in the low 32).
pub(crate) fn validate_addresses(snapshot: &Snapshot, ds: Arc<lance::Dataset>, ids: &[u64]) -> Result<()> {
    let mut by_fragment: HashMap<u64, Vec<u64>> = HashMap::new();
    for id in ids {
        by_fragment.entry(id >> 32).or_default().push(*id);
    }
    let missing = session::block_on(async move {
        for (frag_id, rows) in by_fragment {
            let Some(frag) = ds.get_fragment(frag_id as usize) else {
                return Ok(Some(rows[0]));
            };
            let physical = frag.physical_rows().await? as u64;
            let deletions = frag.get_deletion_vector().await?;
            for id in rows {
                let offset = id & 0xffff_ffff;
                if offset >= physical
                    || deletions.as_ref().is_some_and(|d| d.contains(offset as u32))
                {
                    return Ok(Some(id));
                }
            }
        }
        Ok::<_, lance::Error>(None)
    })?
    .map_err(|e| HostError::from_lance("cannot check row ids", e))?;
    match missing {
        None => Ok(()),
        Some(id) => Err(HostError::not_found(format!(
            "row id {id} (fragment {}, offset {}) does not exist or is deleted in table '{}' at version {}",
            id >> 32,
            id & 0xffff_ffff,
            snapshot.uri(),
            snapshot.version()
        ))),
    }
}

/// Read `columns` of the distinct, sorted row ids `unique` through `ds` (the operation's
/// tracked view of the snapshot) in one take; every id must exist and be visible, else
/// NOT_FOUND (`what` names the ids in the error).
pub(crate) fn fetch_rows(
    snapshot: &Snapshot,
    ds: Arc<lance::Dataset>,
    unique: &[u64],
    columns: &[String],
    what: &str,
) -> Result<RecordBatch> {
    if !snapshot.dataset.manifest().uses_stable_row_ids() {
        validate_addresses(snapshot, ds.clone(), unique)?;
    }
    fetch_found_rows(snapshot, ds, unique, columns, what)
}

/// `fetch_rows` for ids a search of the same snapshot just returned (they exist and are
/// visible by construction, so they are not checked again).
pub(crate) fn fetch_found_rows(
    snapshot: &Snapshot,
    ds: Arc<lance::Dataset>,
    unique: &[u64],
    columns: &[String],
    what: &str,
) -> Result<RecordBatch> {
    let projection = snapshot
        .dataset
        .schema()
        .project(columns)
        .map_err(|e| HostError::from_lance("invalid take projection", e))?;
    let ids = unique.to_vec();
    let fetched = session::run_on_worker(async move { ds.take_rows(&ids, projection).await })?
        .map_err(|e| HostError::from_lance("take failed", e))?;
    if fetched.num_rows() != unique.len() {
        return Err(HostError::not_found(format!(
            "{} of the {} {what} row ids do not exist in table '{}' at version {}",
            unique.len() - fetched.num_rows(),
            unique.len(),
            snapshot.uri(),
            snapshot.version()
        )));
    }
    Ok(fetched)
}

/// Take `ids` (request order, duplicates kept) projecting `columns` (empty = all; `_rowid`
/// allowed). Any missing or deleted id fails the whole call.
pub fn take_rows(snapshot: &Snapshot, ids: &[u64], columns: &[String]) -> Result<BatchReader> {
    take_rows_inner(snapshot, ids, columns).map_err(|e| e.with_local_paths(snapshot.uri()))
}

fn take_rows_inner(snapshot: &Snapshot, ids: &[u64], columns: &[String]) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Take);
    validate_columns(snapshot, columns)?;
    let data_cols: Vec<String> = if columns.is_empty() {
        snapshot
            .arrow_schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    } else {
        columns.iter().filter(|c| c.as_str() != ROW_ID).cloned().collect()
    };
    if columns.iter().any(|c| c == "_rowaddr") {
        return Err(HostError::invalid("take does not return '_rowaddr'; ask for '_rowid'"));
    }
    let stats = OpStats::default();
    let tracked = stats.dataset(snapshot);
    // Fetch each distinct id once, then put rows in request order (with duplicates).
    let mut unique: Vec<u64> = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let fetched = fetch_rows(snapshot, tracked, &unique, &data_cols, "requested")?;
    let position: HashMap<u64, u32> = unique
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, i as u32))
        .collect();
    let indices = UInt32Array::from(ids.iter().map(|id| position[id]).collect::<Vec<_>>());
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    let wanted: Vec<String> = if columns.is_empty() {
        data_cols.clone()
    } else {
        columns.to_vec()
    };
    for name in &wanted {
        if name == ROW_ID {
            fields.push(Field::new(ROW_ID, arrow_schema::DataType::UInt64, true));
            arrays.push(Arc::new(UInt64Array::from(ids.to_vec())));
            continue;
        }
        let (i, field) = fetched
            .schema()
            .column_with_name(name)
            .map(|(i, f)| (i, f.clone()))
            .ok_or_else(|| HostError::internal(format!("take result lacks column '{name}'")))?;
        let col = arrow::compute::take(fetched.column(i).as_ref(), &indices, None)
            .map_err(|e| HostError::internal(format!("cannot reorder rows: {e}")))?;
        fields.push(field);
        arrays.push(col);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema, arrays)
        .map_err(|e| HostError::internal(format!("cannot build take result: {e}")))?;
    Ok(BatchReader::from_batch(batch).with_stats(stats))
}
