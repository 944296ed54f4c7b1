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
use crate::stats::{IoStats, OpStats};

/// Rows of the snapshot — or of `fragment_ids` only — that match `filter` (None = all rows),
/// and the I/O the count caused.
pub fn count_rows(
    snapshot: &Snapshot,
    fragment_ids: Option<&[u64]>,
    filter: Option<&str>,
) -> Result<(u64, IoStats)> {
    crate::metrics::op(crate::metrics::Op::Count);
    if let Some(f) = filter {
        if f.trim().is_empty() {
            return Err(HostError::invalid("filter_sql is empty"));
        }
    }
    let stats = OpStats::default();
    let ds = stats.dataset(snapshot);
    let fragments = fragment_ids.map(|ids| scan::resolve_fragments(snapshot, ids)).transpose()?;
    let count = match (filter, fragments) {
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
            session::block_on(async move { scanner.count_rows().await })?
                .map_err(|e| HostError::from_lance("cannot count rows", e))?
        }
    };
    Ok((count, stats.snapshot()))
}
