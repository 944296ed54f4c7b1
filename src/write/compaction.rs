//! Compaction: in one call (`compact`), or distributed — the coordinator plans tasks as bytes
//! (`plan`), workers execute them (`execute_task`) and ship results as bytes, the coordinator
//! commits all results as one version (`commit`), remapping indexes as Lance does.
//!
//! Task bytes (magic "LHCT") and result bytes (magic "LHCR"), format 1, in the
//! [`crate::bytes`] envelope: table uri: u32 len + bytes | Lance's task or rewrite result as
//! JSON: u32 len + bytes (fragment metadata and file names, no rows).

use std::sync::Arc;

use lance::dataset::index::DatasetIndexRemapperOptions;
use futures::{StreamExt, TryStreamExt};
use lance::dataset::optimize::{commit_compaction, plan_compaction, CompactionMetrics, CompactionOptions, CompactionTask, RewriteResult};
use lance::index::DatasetIndexExt;

use super::commit_error;
use crate::bytes::{self, Reader, Writer};
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// Settings of a compaction; None = Lance's default.
#[derive(Debug, Clone, Default)]
pub struct CompactOptions {
    /// Rows a compacted fragment aims at (Lance: 1,048,576).
    pub target_rows_per_fragment: Option<u64>,
    pub max_rows_per_group: Option<u64>,
    /// Keep deleted rows in the rewritten files' deletion vectors instead of dropping them.
    pub keep_deletions: bool,
    /// Share of deleted rows above which a fragment is rewritten (Lance: 0.1).
    pub deletion_threshold: Option<f32>,
}

impl CompactOptions {
    fn to_lance(&self) -> Result<CompactionOptions> {
        let mut o = CompactionOptions::default();
        if let Some(n) = self.target_rows_per_fragment {
            o.target_rows_per_fragment = usize::try_from(n).map_err(|_| HostError::invalid("target_rows_per_fragment is too large"))?;
        }
        if let Some(n) = self.max_rows_per_group {
            o.max_rows_per_group = usize::try_from(n).map_err(|_| HostError::invalid("max_rows_per_group is too large"))?;
        }
        if let Some(t) = self.deletion_threshold {
            if !(t.is_finite() && t > 0.0 && t <= 1.0) {
                return Err(HostError::invalid(format!("the deletion threshold must be in (0, 1], not {t}")));
            }
            o.materialize_deletions_threshold = t;
        }
        o.materialize_deletions = !self.keep_deletions;
        Ok(o)
    }
}

/// What a compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactSummary {
    /// The version it committed (the handle's when there was nothing to do).
    pub version: u64,
    pub fragments_removed: u64,
    pub fragments_added: u64,
    pub files_removed: u64,
    pub files_added: u64,
}

/// Rewrite small fragments (and fragments with many deleted rows) of the table into larger
/// ones, as one new version planned at `at`'s version; indexes are remapped. Nothing to do
/// commits nothing.
pub fn compact(at: &Snapshot, options: &CompactOptions) -> Result<(Snapshot, CompactSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    let o = options.to_lance()?;
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let mut dataset = (*at.dataset).clone();
    let what = format!("cannot compact table '{uri}'");
    let progress = crate::cancel::current();
    let (dataset, metrics) = session::block_on(async move {
        let m = compact_reporting(&mut dataset, o, progress).await?;
        Ok::<_, lance::Error>((dataset, m))
    })?
    .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    let summary = CompactSummary::of(dataset.version().version, &metrics);
    Ok((
        Snapshot {
            dataset: Arc::new(dataset),
            storage_options: at.storage_options.clone(),
        },
        summary,
    ))
}

/// Lance's `compact_files` (plan, rewrite the tasks concurrently, commit with the indexes
/// remapped) with a progress report to `progress` (the bound call context) as each task's
/// rewrite completes: stage "compact", `done` of `total` tasks, unit "tasks".
async fn compact_reporting(
    dataset: &mut lance::Dataset,
    options: CompactionOptions,
    progress: Option<crate::cancel::Token>,
) -> lance::Result<CompactionMetrics> {
    let plan = plan_compaction(dataset, &options).await?;
    // as compact_files: a tagged fragment-reuse history needs deferred remapping, refused
    // before any file is rewritten (the commit checks it again)
    if !plan.options.defer_index_remap
        && dataset.manifest().writer_feature_flags & lance_table::feature_flags::FLAG_FRAGMENT_REUSE_INDEX != 0
        && dataset.load_indices().await?.iter().any(lance_table::system_index::frag_reuse::metadata::is_tagged)
    {
        return Err(lance::Error::not_supported(
            "compacting a table with a tagged fragment reuse history requires deferred index remapping, which \
             lance-host does not set",
        ));
    }
    if plan.tasks.is_empty() {
        return Ok(CompactionMetrics::default());
    }
    let total = plan.tasks.len() as u64;
    let report = |done: u64| {
        if let Some(t) = &progress {
            t.report(&crate::cancel::Progress { stage: "compact", done, total, unit: "tasks" });
        }
    };
    report(0);
    let threads = plan.options.num_threads.unwrap_or_else(lance_core::utils::tokio::get_num_compute_intensive_cpus);
    let at = dataset.clone();
    let mut done = 0;
    let rewritten: Vec<RewriteResult> = futures::stream::iter(plan.compaction_tasks().collect::<Vec<_>>())
        .map(|task| {
            let at = &at;
            async move { task.execute(at).await }
        })
        .buffer_unordered(threads.max(1))
        .inspect_ok(|_| {
            done += 1;
            report(done);
        })
        .try_collect()
        .await?;
    commit_compaction(dataset, rewritten, Arc::new(DatasetIndexRemapperOptions::default()), &plan.options).await
}

impl CompactSummary {
    fn of(version: u64, m: &lance::dataset::optimize::CompactionMetrics) -> Self {
        CompactSummary {
            version,
            fragments_removed: m.fragments_removed as u64,
            fragments_added: m.fragments_added as u64,
            files_removed: m.files_removed as u64,
            files_added: m.files_added as u64,
        }
    }
}

const TASK_MAGIC: &[u8; 4] = b"LHCT";
const RESULT_MAGIC: &[u8; 4] = b"LHCR";
const FORMAT: u8 = 1;

fn seal(magic: &[u8; 4], uri: &str, json: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    w.blob(uri.as_bytes()).blob(json);
    bytes::seal(magic, FORMAT, &w.0)
}

fn unseal<'a>(b: &'a [u8], magic: &[u8; 4], kind: &str) -> Result<(String, &'a [u8])> {
    let (_, body) = bytes::open(b, magic, &[FORMAT], kind)?;
    let mut r = Reader::new(body, 0, usize::MAX);
    let uri = r.string().ok_or_else(|| bytes::corrupt(kind, "bad table uri"))?;
    let json = r.blob().ok_or_else(|| bytes::corrupt(kind, "truncated"))?;
    if r.remaining() != 0 {
        return Err(bytes::corrupt(kind, "trailing bytes"));
    }
    Ok((uri, json))
}

fn same_table(uri: &str, at: &Snapshot, kind: &str) -> Result<()> {
    if uri.trim_end_matches('/') != at.uri().trim_end_matches('/') {
        return Err(HostError::invalid(format!("the {kind} is of table '{uri}', not of '{}'", at.uri())));
    }
    Ok(())
}

/// Plan a distributed compaction of `at`'s version: one task (as bytes) per group of fragments
/// to rewrite; none when there is nothing to do.
pub fn plan(at: &Snapshot, options: &CompactOptions) -> Result<Vec<Vec<u8>>> {
    let o = options.to_lance()?;
    let ds = at.dataset.clone();
    let uri = at.uri().to_string();
    let plan = session::block_on(async move { plan_compaction(&ds, &o).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot plan a compaction of table '{uri}'"), e))?;
    plan.compaction_tasks()
        .map(|task| {
            let json = serde_json::to_vec(&task)
                .map_err(|e| HostError::internal(format!("cannot encode a compaction task: {e}")))?;
            Ok(seal(TASK_MAGIC, at.uri(), &json))
        })
        .collect()
}

/// Execute one compaction task on a worker: rewrite its fragments into new files (nothing is
/// committed) and return the result as bytes. `at` is the table at the planned version (or a
/// later one: the task reads the version it was planned at).
pub fn execute_task(at: &Snapshot, task: &[u8]) -> Result<Vec<u8>> {
    crate::metrics::op(crate::metrics::Op::Write);
    const KIND: &str = "compaction-task";
    let (uri, json) = unseal(task, TASK_MAGIC, KIND)?;
    same_table(&uri, at, "compaction task")?;
    let task: CompactionTask =
        serde_json::from_slice(json).map_err(|e| bytes::corrupt(KIND, &format!("bad task: {e}")))?;
    let ds = at.dataset.clone();
    let what = format!("cannot execute a compaction task of table '{uri}' (planned at version {})", task.read_version);
    let result = session::block_on(async move { task.execute(&ds).await })?
        .map_err(|e| HostError::from_lance(&what, e).with_local_paths(&uri))?;
    let json = serde_json::to_vec(&result)
        .map_err(|e| HostError::internal(format!("cannot encode a compaction result: {e}")))?;
    Ok(seal(RESULT_MAGIC, &uri, &json))
}

/// Commit the results of a distributed compaction's tasks as one version (indexes remapped).
/// Results of tasks that failed may be left out: their fragments stay as they were. `at` is
/// the table at any version since the plan; commits made since the plan that touched the same
/// fragments are LANCE_ERR_CONFLICT.
pub fn commit(at: &Snapshot, results: &[&[u8]], options: &CompactOptions) -> Result<(Snapshot, CompactSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    const KIND: &str = "compaction-result";
    let o = options.to_lance()?;
    if results.is_empty() {
        return Err(HostError::invalid("no compaction results to commit"));
    }
    let mut rewritten: Vec<RewriteResult> = Vec::with_capacity(results.len());
    for (i, b) in results.iter().enumerate() {
        let (uri, json) = unseal(b, RESULT_MAGIC, KIND).map_err(|e| HostError::new(e.code, format!("results[{i}]: {}", e.message)))?;
        same_table(&uri, at, "compaction result")?;
        let r: RewriteResult =
            serde_json::from_slice(json).map_err(|e| bytes::corrupt(KIND, &format!("results[{i}]: bad result: {e}")))?;
        rewritten.push(r);
    }
    let planned_at = rewritten[0].read_version;
    if let Some(other) = rewritten.iter().find(|r| r.read_version != planned_at) {
        return Err(HostError::invalid(format!(
            "the compaction results were planned at versions {planned_at} and {}: commit the tasks of one plan",
            other.read_version
        )));
    }
    let uri = at.uri().to_string();
    check_results(&uri, &rewritten, &at.storage_options)?;
    let mut ds = (*at.dataset).clone();
    let what = format!("cannot commit {} compaction result(s) to table '{uri}'", rewritten.len());
    let (ds, metrics) = session::block_on(async move {
        let m = commit_compaction(&mut ds, rewritten, Arc::new(DatasetIndexRemapperOptions::default()), &o).await?;
        Ok::<_, lance::Error>((ds, m))
    })?
    .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    let summary = CompactSummary::of(ds.version().version, &metrics);
    Ok((
        Snapshot {
            dataset: Arc::new(ds),
            storage_options: at.storage_options.clone(),
        },
        summary,
    ))
}

/// Compaction results are bytes a host shipped: before Lance commits them, their new files are
/// checked as a commit checks staged writes (each present in this table's directory, agreeing
/// with its footer, named once, part of no version yet), and each result must keep the rows of
/// the fragments it replaces (the rows they hold less their deleted ones), so a forged or
/// mixed-up result can neither point the table at missing files nor drop or repeat rows.
fn check_results(uri: &str, rewritten: &[RewriteResult], storage_options: &std::collections::HashMap<String, String>) -> Result<()> {
    use super::staged::{RowCounts, StagedKind, StagedWrite};
    use lance::dataset::transaction::{Operation, TransactionBuilder};
    for (i, r) in rewritten.iter().enumerate() {
        let kept: Option<u64> = r
            .original_fragments
            .iter()
            .map(|f| {
                let deleted = match &f.deletion_file {
                    None => Some(0),
                    Some(d) => d.num_deleted_rows,
                };
                (f.physical_rows? as u64).checked_sub(deleted? as u64)
            })
            .sum();
        let written: Option<u64> = r.new_fragments.iter().map(|f| f.physical_rows.map(|n| n as u64)).sum();
        if let (Some(kept), Some(written)) = (kept, written) {
            if kept != written {
                return Err(HostError::invalid(format!(
                    "compaction result {i} is refused: its new fragments hold {written} rows, the fragments it replaces {kept}; nothing was committed"
                )));
            }
        } else {
            return Err(HostError::invalid(format!(
                "compaction result {i} is refused: a fragment's row count is unknown; nothing was committed"
            )));
        }
    }
    let shares: Vec<StagedWrite> = rewritten
        .iter()
        .map(|r| StagedWrite {
            uri: uri.to_string(),
            kind: StagedKind::Append,
            planned_at: r.read_version,
            counts: RowCounts::default(),
            transaction: TransactionBuilder::new(r.read_version, Operation::Append { fragments: r.new_fragments.clone() }).build(),
            row_addresses: Vec::new(),
        })
        .collect();
    super::verify::check_shipped_fragments(uri, &shares, storage_options)
        .map_err(|e| HostError::new(e.code, e.message.replacen("staged write", "compaction result", 1)))
}
