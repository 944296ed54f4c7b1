//! Row-level changes committed in one call: delete by predicate, update with SQL expressions,
//! merge-insert (upsert) from a stream of source rows.

use std::sync::Arc;

use lance::dataset::{
    DeleteBuilder, MergeInsertBuilder, UpdateBuilder, WhenMatched, WhenNotMatched, WhenNotMatchedBySource,
};

use super::table::{into_write_source, Batches};

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

/// Set `assignments` (column, Lance SQL expression over the row) on the rows matching
/// `predicate` (every row when None), as one new version planned at `at`'s version.
pub fn update(
    at: &Snapshot,
    assignments: &[(String, String)],
    predicate: Option<&str>,
    options: &WriteOptions,
) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    if assignments.is_empty() {
        return Err(HostError::invalid("an update needs at least one column = expression"));
    }
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let what = format!("cannot update table '{uri}'");
    let mut builder = UpdateBuilder::new(at.dataset.clone());
    if let Some(p) = predicate {
        builder = builder
            .update_where(p)
            .map_err(|e| HostError::from_lance(&format!("{what}: bad predicate '{p}'"), e))?;
    }
    for (column, expr) in assignments {
        builder = builder
            .set(column, expr)
            .map_err(|e| HostError::from_lance(&format!("{what}: bad assignment {column} = {expr}"), e))?;
    }
    if let Some(n) = options.max_retries {
        builder = builder.conflict_retries(n);
    }
    if let Some(t) = options.retry_timeout {
        builder = builder.retry_timeout(t);
    }
    let job = builder.build().map_err(|e| HostError::from_lance(&what, e))?;
    let result = session::block_on(job.execute())?
        .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    let summary = WriteSummary {
        version: result.new_dataset.version().version,
        rows_updated: result.rows_updated,
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

/// What a merge-insert does with a target row that matches a source row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OnMatch {
    /// Keep the target row (find-or-create).
    #[default]
    DoNothing,
    /// Replace it with the source row (upsert).
    UpdateAll,
    /// Replace it where the Lance SQL condition holds (`target.col`, `source.col`).
    UpdateIf(String),
    /// Delete it.
    Delete,
    /// Fail the statement.
    Fail,
}

/// What a merge-insert does with a source row that matches no target row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnNoMatch {
    #[default]
    Insert,
    DoNothing,
}

/// What a merge-insert does with a target row that matches no source row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OnNoSourceMatch {
    #[default]
    Keep,
    Delete,
    /// Delete it where the Lance SQL condition holds.
    DeleteIf(String),
}

/// A merge-insert statement: the key columns and the three rules.
#[derive(Debug, Clone, Default)]
pub struct MergeInsert {
    pub on: Vec<String>,
    pub when_matched: OnMatch,
    pub when_not_matched: OnNoMatch,
    pub when_not_matched_by_source: OnNoSourceMatch,
}

/// Merge the source rows of `data` into the table `at` is a version of, by the key columns
/// `spec.on`, as one new version: rows inserted, updated and deleted are counted.
pub fn merge_insert(at: &Snapshot, data: Batches, spec: &MergeInsert, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    if spec.on.is_empty() {
        return Err(HostError::invalid("a merge-insert needs at least one key column (on)"));
    }
    let schema = at.dataset.schema();
    for key in &spec.on {
        if schema.field(key).is_none() {
            let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
            return Err(HostError::invalid(format!(
                "merge-insert key column '{key}' is not a column of the table (columns: {})",
                names.join(", ")
            )));
        }
    }
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let what = format!("cannot merge into table '{uri}' on {}", spec.on.join(", "));
    let lance_err = |e| HostError::from_lance(&what, e);
    let mut builder = MergeInsertBuilder::try_new(at.dataset.clone(), spec.on.clone()).map_err(lance_err)?;
    builder.when_matched(match &spec.when_matched {
        OnMatch::DoNothing => WhenMatched::DoNothing,
        OnMatch::UpdateAll => WhenMatched::UpdateAll,
        OnMatch::UpdateIf(c) => WhenMatched::update_if(&at.dataset, c).map_err(lance_err)?,
        OnMatch::Delete => WhenMatched::Delete,
        OnMatch::Fail => WhenMatched::Fail,
    });
    builder.when_not_matched(match spec.when_not_matched {
        OnNoMatch::Insert => WhenNotMatched::InsertAll,
        OnNoMatch::DoNothing => WhenNotMatched::DoNothing,
    });
    builder.when_not_matched_by_source(match &spec.when_not_matched_by_source {
        OnNoSourceMatch::Keep => WhenNotMatchedBySource::Keep,
        OnNoSourceMatch::Delete => WhenNotMatchedBySource::Delete,
        OnNoSourceMatch::DeleteIf(c) => WhenNotMatchedBySource::delete_if(&at.dataset, c)
            .map_err(|e| HostError::from_lance(&format!("{what}: bad condition '{c}'"), e))?,
    });
    if let Some(n) = options.max_retries {
        builder.conflict_retries(n);
    }
    if let Some(t) = options.retry_timeout {
        builder.retry_timeout(t);
    }
    let job = builder.try_build().map_err(lance_err)?;
    let source = into_write_source(data)?;
    let (dataset, stats) = session::block_on(job.execute(source))?
        .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    let summary = WriteSummary {
        version: dataset.version().version,
        rows_written: stats.num_inserted_rows + stats.num_updated_rows,
        rows_inserted: stats.num_inserted_rows,
        rows_updated: stats.num_updated_rows,
        rows_deleted: stats.num_deleted_rows,
        files_written: stats.num_files_written,
        bytes_written: stats.bytes_written,
        committed: dataset.version().version != planned_at,
        ..Default::default()
    };
    Ok((
        Snapshot {
            dataset: Arc::new(Arc::unwrap_or_clone(dataset)),
            storage_options: at.storage_options.clone(),
        },
        summary,
    ))
}
