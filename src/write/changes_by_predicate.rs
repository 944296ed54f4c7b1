//! Row-level changes committed in one call: delete by predicate, update with SQL expressions,
//! merge-insert (upsert) from a stream of source rows.

use std::sync::Arc;

use std::collections::HashSet;

use futures::StreamExt;
use lance::dataset::transaction::{Operation, TransactionBuilder};
use lance::dataset::{
    DeleteBuilder, MergeInsertBuilder, MergeInsertJob, UpdateBuilder, WhenMatched, WhenNotMatched,
    WhenNotMatchedBySource,
};

use super::guarded::{self, Guarded};
use super::source::{into_merge_source, watch, Batches, HostFailure};

use super::staged::{RowCounts, StagedKind, StagedWrite};
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
    crate::sql_text::check_expression("the delete predicate", predicate)?;
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let run = match guarded::prepare(at, options)? {
        Guarded::Found(done) => return Ok(found(done)),
        Guarded::Run(run) => run,
    };
    let ds = run.on(at).dataset.clone();
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
    })?;
    let result = match result {
        Ok(r) => r,
        Err(e) => return run.failed(at, commit_error(&what, planned_at, e).with_local_paths(&uri)).map(found),
    };
    let summary = WriteSummary {
        version: result.new_dataset.version().version,
        rows_deleted: result.num_deleted_rows,
        committed: result.new_dataset.version().version != planned_at,
        ..Default::default()
    };
    Ok((pinned(at, Arc::unwrap_or_clone(result.new_dataset)), summary))
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
    if let Some(p) = predicate {
        crate::sql_text::check_expression("the update predicate", p)?;
    }
    for (column, expr) in assignments {
        crate::sql_text::check_expression(&format!("the update expression for column '{column}'"), expr)?;
    }
    let run = match guarded::prepare(at, options)? {
        Guarded::Found(done) => return Ok(found(done)),
        Guarded::Run(run) => run,
    };
    let mut builder = UpdateBuilder::new(run.on(at).dataset.clone());
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
    let result = match session::block_on(job.execute())? {
        Ok(r) => r,
        Err(e) => return run.failed(at, commit_error(&what, planned_at, e).with_local_paths(&uri)).map(found),
    };
    let committed = result.new_dataset.version().version != planned_at;
    let written = if committed { WriteSummary::written_by_commit(&result.new_dataset)? } else { WriteSummary::default() };
    let summary = WriteSummary {
        version: result.new_dataset.version().version,
        rows_updated: result.rows_updated,
        committed,
        ..written
    };
    Ok((pinned(at, Arc::unwrap_or_clone(result.new_dataset)), summary))
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

/// Source rows held in memory up to this size go to Lance as a table (its statistics drive the
/// join and a retry re-reads them); a larger source is streamed.
const HELD_SOURCE_BYTES: usize = 256 << 20;

/// The source of a merge-insert: held (it ended within `HELD_SOURCE_BYTES`) or streamed.
enum MergeSource {
    Held(Vec<arrow::record_batch::RecordBatch>),
    Stream(lance::deps::datafusion::physical_plan::SendableRecordBatchStream),
}

/// Read the host's source on the calling thread until it ends or passes `HELD_SOURCE_BYTES`
/// (the batches are the host's buffers, imported without a copy, and go to Lance whole: see
/// `into_merge_source`); a longer source is streamed from where the reading stopped. The
/// returned [`HostFailure`] tells, after a failed merge, whether the host's stream failed.
fn merge_source(data: Batches, what: &str) -> Result<(MergeSource, HostFailure)> {
    let schema = data.schema();
    super::encoding::check(&schema).map_err(|e| e.context(what))?;
    let (mut data, failure) = watch(data);
    let mut held = Vec::new();
    let mut bytes = 0usize;
    while bytes <= HELD_SOURCE_BYTES {
        match data.next() {
            None => return Ok((MergeSource::Held(held), failure)),
            Some(Err(e)) => {
                return Err(failure.explain(what, HostError::invalid(format!("{what}: the source stream failed: {e}"))))
            }
            Some(Ok(b)) => {
                bytes += b.get_array_memory_size();
                held.push(b);
            }
        }
    }
    let rest = arrow::record_batch::RecordBatchIterator::new(held.into_iter().map(Ok).chain(data), schema);
    let stream = into_merge_source(Box::new(rest), &failure)?;
    Ok((MergeSource::Stream(stream), failure))
}

/// A merge's failure as the host should see it: the host stream's failure is
/// `LANCE_ERR_HOST_STREAM`, a `fail` rule that met a matching row is `LANCE_ERR_CONFLICT`
/// (the statement's own rule refused the change; Lance reports it as a plain error).
fn merge_error(spec: &MergeInsert, failure: &HostFailure, what: &str, err: HostError) -> HostError {
    let err = failure.explain(what, err);
    if matches!(spec.when_matched, OnMatch::Fail) && err.message.contains("found matching row") {
        return HostError::new(
            crate::error::LanceErrorCode::LANCE_ERR_CONFLICT,
            format!("{} (when_matched = fail: a source row matched a row of the table; nothing was committed)", err.message),
        );
    }
    err
}

/// Lance's merge-insert job for `spec` on the table `at` is a version of.
fn merge_job(at: &Snapshot, spec: &MergeInsert, options: &WriteOptions, what: &str) -> Result<MergeInsertJob> {
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
    if let OnMatch::UpdateIf(c) = &spec.when_matched {
        crate::sql_text::check_expression("the merge's when_matched condition", c)?;
    }
    if let OnNoSourceMatch::DeleteIf(c) = &spec.when_not_matched_by_source {
        crate::sql_text::check_expression("the merge's when_not_matched_by_source condition", c)?;
    }
    let lance_err = |e| HostError::from_lance(what, e);
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
    builder.try_build().map_err(lance_err)
}

/// Merge the source rows of `data` into the table `at` is a version of, by the key columns
/// `spec.on`, as one new version: rows inserted, updated and deleted are counted.
pub fn merge_insert(at: &Snapshot, data: Batches, spec: &MergeInsert, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let what = format!("cannot merge into table '{uri}' on {}", spec.on.join(", "));
    let run = match guarded::prepare(at, options)? {
        Guarded::Found(done) => return Ok(found(done)),
        Guarded::Run(run) => run,
    };
    let job = merge_job(run.on(at), spec, options, &what)?;
    let (source, failure) = merge_source(data, &what)?;
    let merged = match source {
        MergeSource::Held(batches) => session::block_on(job.execute_batches(batches))?,
        MergeSource::Stream(source) => session::block_on(job.execute(source))?,
    };
    let (dataset, stats) = match merged {
        Ok(r) => r,
        Err(e) => {
            let err = merge_error(spec, &failure, &what, commit_error(&what, planned_at, e).with_local_paths(&uri));
            return run.failed(at, err).map(found);
        }
    };
    let committed = dataset.version().version != planned_at;
    let written = if committed { WriteSummary::written_by_commit(&dataset)? } else { WriteSummary::default() };
    let summary = WriteSummary {
        version: dataset.version().version,
        rows_written: stats.num_inserted_rows + stats.num_updated_rows,
        rows_inserted: stats.num_inserted_rows,
        rows_updated: stats.num_updated_rows,
        rows_deleted: stats.num_deleted_rows,
        committed,
        ..written
    };
    Ok((pinned(at, Arc::unwrap_or_clone(dataset)), summary))
}

/// Compute a merge-insert without committing it (the rows it writes go to new files): the
/// coordinator commits the staged bytes with `committer::commit`, alone. Lance computes a
/// merge-insert over the whole table, so it is one share, not split among workers.
pub fn stage_merge_insert(at: &Snapshot, data: Batches, spec: &MergeInsert, options: &WriteOptions) -> Result<StagedWrite> {
    crate::metrics::op(crate::metrics::Op::Write);
    let uri = at.uri().to_string();
    let what = format!("cannot stage a merge into table '{uri}' on {}", spec.on.join(", "));
    let job = merge_job(at, spec, options, &what)?;
    let (source, failure) = merge_source(data, &what)?;
    let staged = match source {
        MergeSource::Held(batches) => session::block_on(job.execute_uncommitted_batches(batches))?,
        MergeSource::Stream(source) => session::block_on(job.execute_uncommitted(source))?,
    }
    .map_err(|e| merge_error(spec, &failure, &what, HostError::from_lance(&what, e).with_local_paths(&uri)))?;
    Ok(StagedWrite {
        uri,
        kind: StagedKind::MergeInsert,
        planned_at: at.version(),
        counts: RowCounts {
            deleted: staged.stats.num_deleted_rows,
            updated: staged.stats.num_updated_rows,
            inserted: staged.stats.num_inserted_rows,
        },
        transaction: staged.transaction,
        row_addresses: Vec::new(),
    })
}

/// Delete the rows matching `predicate` in a share of the table's fragments (`fragment_ids`;
/// None = all of them) without committing: new deletion files are written, and the staged
/// bytes name them. Workers given disjoint shares (one scan split each) stage; the coordinator
/// commits all shares as one delete (`committer::commit`).
pub fn stage_delete(at: &Snapshot, fragment_ids: Option<&[u64]>, predicate: &str) -> Result<StagedWrite> {
    crate::metrics::op(crate::metrics::Op::Write);
    if predicate.trim().is_empty() {
        return Err(HostError::invalid("the delete predicate is empty (delete every row with \"true\")"));
    }
    crate::sql_text::check_expression("the delete predicate", predicate)?;
    let uri = at.uri().to_string();
    let what = format!("cannot stage a delete from table '{uri}' where {predicate}");
    // the predicate must parse even when the share is empty
    at.dataset
        .scan()
        .filter(predicate)
        .map_err(|e| HostError::from_lance(&format!("{what}: bad predicate"), e))?;
    let ids: Vec<u64> = match fragment_ids {
        Some(ids) => {
            let mut seen = HashSet::new();
            ids.iter().copied().filter(|id| seen.insert(*id)).collect()
        }
        None => at.dataset.manifest.fragments.iter().map(|f| f.id).collect(),
    };
    let mut fragments = Vec::with_capacity(ids.len());
    for id in &ids {
        let f = usize::try_from(*id).ok().and_then(|i| at.dataset.get_fragment(i)).ok_or_else(|| {
            HostError::invalid(format!("fragment {id} is not in version {} of table '{uri}'", at.version()))
        })?;
        fragments.push(f);
    }
    let predicate_owned = predicate.to_string();
    let results = session::block_on(async move {
        futures::stream::iter(fragments.into_iter().map(|f| {
            let predicate = predicate_owned.clone();
            async move {
                let before = f.count_rows(None).await? as u64;
                let old = f.metadata().deletion_file.clone();
                let id = f.id() as u64;
                match f.delete(&predicate).await? {
                    None => Ok::<_, lance::Error>((id, None, before)),
                    Some(changed) if changed.metadata().deletion_file != old => {
                        let after = changed.count_rows(None).await? as u64;
                        Ok((id, Some(Some(changed.metadata().clone())), before - after))
                    }
                    Some(_) => Ok((id, Some(None), 0)),
                }
            }
        }))
        .buffer_unordered(DELETE_PARALLELISM)
        .collect::<Vec<_>>()
        .await
    })?;
    let mut updated = Vec::new();
    let mut removed = Vec::new();
    let mut deleted = 0;
    for r in results {
        let (id, outcome, n) = r.map_err(|e| HostError::from_lance(&what, e).with_local_paths(&uri))?;
        deleted += n;
        match outcome {
            None => removed.push(id),
            Some(Some(fragment)) => updated.push(fragment),
            Some(None) => {}
        }
    }
    updated.sort_by_key(|f| f.id);
    removed.sort_unstable();
    let operation = Operation::Delete {
        updated_fragments: updated,
        deleted_fragment_ids: removed,
        predicate: predicate.to_string(),
    };
    Ok(StagedWrite {
        uri,
        kind: StagedKind::Delete,
        planned_at: at.version(),
        counts: RowCounts {
            deleted,
            ..Default::default()
        },
        transaction: TransactionBuilder::new(at.version(), operation).build(),
        row_addresses: Vec::new(),
    })
}

/// `stage_delete` over the fragments of a scan split planned on `at` (None = the whole table).
pub fn stage_delete_split(at: &Snapshot, split: Option<&crate::split::Split>, predicate: &str) -> Result<StagedWrite> {
    match split {
        None => stage_delete(at, None, predicate),
        Some(split) => {
            split.check_snapshot(at)?;
            if split.kind != crate::split::SplitKind::Scan {
                return Err(HostError::invalid(
                    "a staged delete takes a scan split (lance_dataset_plan_scan): it names the fragments of the worker's share",
                ));
            }
            if let Some(r) = split.rows {
                return Err(HostError::invalid(format!(
                    "a staged delete takes whole fragments, and this scan split covers rows {}..{} of fragment {}: \
                     plan the delete's splits with lance_dataset_plan_scan (whole fragments)",
                    r.offset,
                    r.offset + r.count,
                    split.fragment_ids[0]
                )));
            }
            stage_delete(at, Some(&split.fragment_ids), predicate)
        }
    }
}

/// Fragments one worker deletes from at a time.
const DELETE_PARALLELISM: usize = 4;

/// The answer to a change whose statement was committed before: the version it landed in,
/// nothing committed now.
fn found(done: Snapshot) -> (Snapshot, WriteSummary) {
    let summary = WriteSummary {
        version: done.version(),
        committed: false,
        ..Default::default()
    };
    (done, summary)
}

/// A new version of the table `at` is a version of, pinned.
fn pinned(at: &Snapshot, dataset: lance::Dataset) -> Snapshot {
    Snapshot {
        dataset: Arc::new(dataset),
        storage_options: at.storage_options.clone(),
    }
}
