//! Exact row counts of a pinned snapshot, of some of its fragments (a split), with or without a
//! SQL filter.
//!
//! Without a filter the count comes from the manifest (rows per fragment minus deleted rows):
//! no data file is read. With a filter Lance plans a count that reads only the filter's
//! columns, answered from a scalar index (BTREE, BITMAP) where the filter allows it.

use crate::error::{HostError, Result};
use crate::scan;
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};

/// Rows of the snapshot — or of `fragment_ids` only — that match `filter` (None = all rows),
/// and the I/O the count caused.
pub fn count_rows(
    snapshot: &Snapshot,
    fragment_ids: Option<&[u64]>,
    filter: Option<&str>,
) -> Result<(u64, IoStats)> {
    crate::metrics::op(crate::metrics::Op::Count);
    count_rows_sliced(snapshot, fragment_ids, None, filter)
}

/// The rows of a scan split that match `filter`: its fragments, or its row slice of one.
pub fn count_split(snapshot: &Snapshot, split: &crate::split::Split, filter: Option<&str>) -> Result<(u64, IoStats)> {
    split.check_snapshot(snapshot)?;
    if split.kind == crate::split::SplitKind::Changes {
        return Err(crate::error::HostError::not_supported(
            "a changes split's rows are counted by reading it (its fragments hold unchanged rows too)",
        ));
    }
    let slice = split.rows.map(|r| (split.fragment_ids[0], r));
    crate::metrics::op(crate::metrics::Op::Count);
    count_rows_sliced(snapshot, Some(&split.fragment_ids), slice, filter)
}

pub(crate) fn count_rows_sliced(
    snapshot: &Snapshot,
    fragment_ids: Option<&[u64]>,
    slice: Option<(u64, crate::split::RowSlice)>,
    filter: Option<&str>,
) -> Result<(u64, IoStats)> {
    if let Some(f) = filter {
        if f.trim().is_empty() {
            return Err(HostError::invalid("filter_sql is empty"));
        }
    }
    let stats = OpStats::default();
    let ds = stats.dataset(snapshot);
    let fragments = fragment_ids.map(|ids| scan::resolve_fragments(snapshot, ids)).transpose()?;
    let count = match (filter, fragments) {
        (None, Some(_)) if slice.is_some() => {
            let (fragment, rows) = slice.expect("checked");
            scan::slice_rows(snapshot, fragment, rows)?;
            crate::split::visible_in_slice(snapshot, fragment, rows)?
        }
        (None, None) => snapshot.count_rows_on(ds)?,
        (None, Some(frags)) => {
            // The manifest's per-fragment counts, exactly as the snapshot's fragment list has them.
            let wanted: Vec<u64> = frags.iter().map(|f| f.id).collect();
            snapshot
                .fragments_on(ds)?
                .into_iter()
                .filter(|f| wanted.contains(&f.id))
                .map(|f| f.logical_rows)
                .sum()
        }
        (Some(filter), frags) => {
            scan::check_sql_filter(snapshot, filter)?;
            let mut scanner = ds.scan();
            let lance_err = |e| HostError::from_lance("invalid count filter", e);
            scanner.filter(filter).map_err(lance_err)?;
            scanner.project::<&str>(&[]).map_err(lance_err)?;
            scanner.with_row_id();
            if let Some(frags) = frags {
                scanner.with_fragments(frags);
            }
            if let Some((fragment, rows)) = slice {
                scanner.with_physical_row_addr_prefilter(scan::slice_rows(snapshot, fragment, rows)?);
            }
            // Lance's count plan, run with the operation's callback so the index-cache lookups
            // of the filter (a BTREE or BITMAP answering it) are reported.
            scanner
                .aggregate(lance::dataset::scanner::AggregateExpr::builder().count_star().build())
                .map_err(lance_err)?;
            let callback = stats.callback();
            session::run_on_worker(async move {
                let plan = scanner.create_plan().await?;
                let options = lance_datafusion::exec::LanceExecutionOptions {
                    execution_stats_callback: Some(callback),
                    ..Default::default()
                };
                let mut stream = lance_datafusion::exec::execute_plan(plan, options)?;
                let mut count = 0u64;
                while let Some(batch) = futures::StreamExt::next(&mut stream).await {
                    let batch = batch?;
                    if batch.num_rows() > 0 {
                        let col = batch.column(0);
                        let v = col
                            .as_any()
                            .downcast_ref::<arrow::array::Int64Array>()
                            .ok_or_else(|| lance::Error::internal("the count plan did not return an Int64 column"))?;
                        count += v.value(0) as u64;
                    }
                }
                Ok::<_, lance::Error>(count)
            })?
            .map_err(|e| HostError::from_lance("cannot count rows", e))?
        }
    };
    Ok((count, stats.snapshot()))
}
