//! Table maintenance an engine schedules: compaction, cleanup of old versions, tags, restore.

use std::sync::Arc;
use std::time::Duration;

use lance::dataset::cleanup::CleanupPolicyBuilder;
use lance::dataset::optimize::{compact_files, CompactionOptions};

use super::commit_error;
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::{self, Snapshot};

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
    let mut o = CompactionOptions::default();
    if let Some(n) = options.target_rows_per_fragment {
        o.target_rows_per_fragment = usize::try_from(n).map_err(|_| HostError::invalid("target_rows_per_fragment is too large"))?;
    }
    if let Some(n) = options.max_rows_per_group {
        o.max_rows_per_group = usize::try_from(n).map_err(|_| HostError::invalid("max_rows_per_group is too large"))?;
    }
    if let Some(t) = options.deletion_threshold {
        if !(t.is_finite() && t > 0.0 && t <= 1.0) {
            return Err(HostError::invalid(format!("the deletion threshold must be in (0, 1], not {t}")));
        }
        o.materialize_deletions_threshold = t;
    }
    o.materialize_deletions = !options.keep_deletions;
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let mut dataset = (*at.dataset).clone();
    let what = format!("cannot compact table '{uri}'");
    let (dataset, metrics) = session::block_on(async move {
        let m = compact_files(&mut dataset, o, None).await?;
        Ok::<_, lance::Error>((dataset, m))
    })?
    .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    let summary = CompactSummary {
        version: dataset.version().version,
        fragments_removed: metrics.fragments_removed as u64,
        fragments_added: metrics.fragments_added as u64,
        files_removed: metrics.files_removed as u64,
        files_added: metrics.files_added as u64,
    };
    Ok((
        Snapshot {
            dataset: Arc::new(dataset),
            storage_options: at.storage_options.clone(),
        },
        summary,
    ))
}

/// What a cleanup removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupSummary {
    pub versions_removed: u64,
    pub bytes_removed: u64,
    pub data_files_removed: u64,
}

/// Remove the versions of the table older than `older_than` (by commit time) and the files
/// only they use. Never removed: the latest version, tagged versions, and files younger than 7
/// days that no version references unless `delete_unverified` (they may belong to a write in
/// progress). A reader pinned to a removed version in another process fails on its next read:
/// choose `older_than` longer than the longest query or pipeline.
pub fn cleanup(at: &Snapshot, older_than: Duration, delete_unverified: bool) -> Result<CleanupSummary> {
    crate::metrics::op(crate::metrics::Op::Commit);
    let age = chrono::Duration::from_std(older_than).map_err(|_| HostError::invalid("older_than is too large"))?;
    let cutoff = chrono::Utc::now()
        .checked_sub_signed(age)
        .ok_or_else(|| HostError::invalid("older_than is too large"))?;
    let latest = snapshot::open(at.uri(), at.storage_options.clone(), 0)?;
    let ds = latest.dataset.clone();
    let uri = at.uri().to_string();
    let policy = CleanupPolicyBuilder::default()
        .before_timestamp(cutoff)
        .delete_unverified(delete_unverified)
        .error_if_tagged_old_versions(false)
        .build();
    let stats = session::block_on(async move { ds.cleanup_with_policy(policy).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot clean up table '{uri}'"), e).with_local_paths(&uri))?;
    Ok(CleanupSummary {
        versions_removed: stats.old_versions,
        bytes_removed: stats.bytes_removed,
        data_files_removed: stats.data_files_removed,
    })
}

fn check_tag_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
        && !name.ends_with(".lock");
    if ok {
        Ok(())
    } else {
        Err(HostError::invalid(format!(
            "bad tag name '{name}': use letters, digits, '-', '_' and '.' (not first, no '.lock' suffix)"
        )))
    }
}

/// Tag `version` of the table (0 = `at`'s version). A tag keeps its version from cleanup and
/// opens it by name; it fails if the tag exists.
pub fn create_tag(at: &Snapshot, name: &str, version: u64) -> Result<u64> {
    check_tag_name(name)?;
    let version = if version == 0 { at.version() } else { version };
    let ds = at.dataset.clone();
    let tag = name.to_string();
    session::block_on(async move { ds.tags().create(&tag, version).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot create tag '{name}' of version {version}"), e))?;
    Ok(version)
}

/// Delete a tag (its version becomes subject to cleanup again).
pub fn delete_tag(at: &Snapshot, name: &str) -> Result<()> {
    check_tag_name(name)?;
    let ds = at.dataset.clone();
    let tag = name.to_string();
    session::block_on(async move { ds.tags().delete(&tag).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot delete tag '{name}'"), e))
}

/// The table's tags and their versions, by name.
pub fn list_tags(at: &Snapshot) -> Result<Vec<(String, u64)>> {
    let ds = at.dataset.clone();
    let tags = session::block_on(async move { ds.tags().list().await })?
        .map_err(|e| HostError::from_lance("cannot list the tags", e))?;
    let mut out: Vec<(String, u64)> = tags.into_iter().map(|(k, v)| (k, v.version)).collect();
    out.sort();
    Ok(out)
}

/// Open the table at the version a tag names (pinned, like any handle: its snapshot token and
/// splits ship as usual).
pub fn open_tag(uri: &str, storage_options: std::collections::HashMap<String, String>, tag: &str) -> Result<Snapshot> {
    check_tag_name(tag)?;
    let latest = snapshot::open(uri, storage_options.clone(), 0)?;
    let ds = latest.dataset.clone();
    let name = tag.to_string();
    let dataset = session::block_on(async move { ds.checkout_version(name.as_str()).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot open table '{uri}' at tag '{tag}'"), e))?;
    Ok(Snapshot {
        dataset: Arc::new(dataset),
        storage_options,
    })
}

/// Make `at`'s version the table's latest again, as a new version (its rows, schema and
/// indexes as they were then).
pub fn restore(at: &Snapshot) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    let mut dataset = (*at.dataset).clone();
    let uri = at.uri().to_string();
    let dataset = session::block_on(async move {
        dataset.restore().await?;
        Ok::<_, lance::Error>(dataset)
    })?
    .map_err(|e| HostError::from_lance(&format!("cannot restore table '{uri}' to version {}", at.version()), e))?;
    Ok(Snapshot {
        dataset: Arc::new(dataset),
        storage_options: at.storage_options.clone(),
    })
}
