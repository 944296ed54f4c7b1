//! Row-level changes committed in one call: delete by predicate.

use std::sync::Arc;

use lance::dataset::DeleteBuilder;

use super::{commit_error, WriteOptions, WriteSummary};
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// Delete the rows matching the Lance SQL `predicate` from the table `at` is a version of,
/// as one new version (planned at `at`'s version; concurrent commits Lance can rebase over
/// are fine, others are LANCE_ERR_CONFLICT). As in Lance (and pylance), a predicate that
/// matches nothing still commits a version that deletes nothing.
pub fn delete(at: &Snapshot, predicate: &str, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    if predicate.trim().is_empty() {
        return Err(HostError::invalid("the delete predicate is empty (delete every row with \"true\")"));
    }
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let ds = at.dataset.clone();
    let what = format!("cannot delete from table '{uri}' where {predicate}");
    let result = session::block_on(async move {
        let mut builder = DeleteBuilder::new(ds, predicate);
        if let Some(n) = options.max_retries {
            builder = builder.conflict_retries(n);
        }
        if let Some(t) = options.retry_timeout {
            builder = builder.retry_timeout(t);
        }
        builder.execute().await
    })?
    .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    let summary = WriteSummary {
        version: result.new_dataset.version().version,
        rows_deleted: result.num_deleted_rows,
        committed: result.new_dataset.version().version != planned_at,
        ..Default::default()
    };
    Ok((
        Snapshot {
            dataset: Arc::new(Arc::unwrap_or_clone(result.new_dataset)),
            storage_options: at.storage_options.clone(),
        },
        summary,
    ))
}
