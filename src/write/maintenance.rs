//! Table maintenance an engine schedules: cleanup of old versions, tags, restore (compaction is
//! in `compaction`).

use std::sync::Arc;
use std::time::Duration;

use lance::dataset::cleanup::CleanupPolicyBuilder;

use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::{self, Snapshot};

/// What a cleanup removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupSummary {
    pub versions_removed: u64,
    pub bytes_removed: u64,
    pub data_files_removed: u64,
}

/// Remove the versions of the table older than `older_than` (by commit time) and the files
/// only they use, and staging manifests no version needs (left by commits that did not land,
/// e.g. refused or killed multi-table commits). Never removed: the latest version, tagged
/// versions, and files younger than 7 days that no version references unless
/// `delete_unverified` (they may belong to a write in progress). A reader pinned to a removed version in another process fails on its next read:
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
    let what = format!("cannot clean up table '{uri}'");
    let params = lance_io::object_store::ObjectStoreParams {
        storage_options_accessor: Some(crate::snapshot::credentials::accessor(&uri, &at.storage_options)),
        ..Default::default()
    };
    let registry = session::global()?.lance.store_registry();
    let managed = crate::snapshot::managed::main_branch(&uri)?.map(|m| m.store);
    // progress (the bound call context's): stage "cleanup", three steps — Lance's cleanup of old
    // versions and their files, the statement records, the staging manifests
    let progress = crate::cancel::current();
    let step = move |done: u64| {
        if let Some(t) = &progress {
            t.report(&crate::cancel::Progress { stage: "cleanup", done, total: 3, unit: "steps" });
        }
    };
    let (stats, records_bytes) = session::block_on(async move {
        step(0);
        let stats = ds.cleanup_with_policy(policy).await?;
        step(1);
        // the statement records (src/write/statement.rs) whose versions the cleanup removed
        let oldest_kept = ds.versions().await?.iter().map(|v| v.version).min().unwrap_or(0);
        let (store, base) = lance_io::object_store::ObjectStore::from_uri_and_params(registry, &uri, &params).await?;
        let (_, bytes) = super::statement::forget_before(&store, &base, cutoff, oldest_kept).await?;
        step(2);
        let latest_version = ds.latest_version_id().await?;
        let unverified_cutoff = if delete_unverified { cutoff } else { cutoff.min(chrono::Utc::now() - chrono::Duration::days(7)) };
        let staged_bytes = if uri.starts_with("s3+ddb") {
            0 // its external store may still name a staging manifest (Lance repairs those)
        } else {
            forget_staging_manifests(&store, &base, unverified_cutoff, latest_version, managed.as_ref()).await?
        };
        step(3);
        Ok::<_, lance::Error>((stats, bytes + staged_bytes))
    })?
    .map_err(|e| HostError::from_lance(&what, e).with_local_paths(at.uri()))?;
    Ok(CleanupSummary {
        versions_removed: stats.old_versions,
        bytes_removed: stats.bytes_removed + records_bytes,
        data_files_removed: stats.data_files_removed,
    })
}

/// Delete the staging manifests in `_versions/` (`<version>.manifest-<uuid>`) last modified
/// before `cutoff` that no version needs: those past the table's latest version (a commit that
/// never landed: a refused or killed multi-table commit, a failed commit), and those of a
/// version whose own manifest is in place and which the table's namespace (`managed`, for a
/// managed table) does not record as that version's manifest. Returns the bytes removed.
async fn forget_staging_manifests(
    store: &lance_io::object_store::ObjectStore,
    base: &object_store::path::Path,
    cutoff: chrono::DateTime<chrono::Utc>,
    latest: u64,
    managed: Option<&std::sync::Arc<dyn lance_table::io::commit::external_manifest::ExternalManifestStore>>,
) -> lance::Result<u64> {
    use futures::TryStreamExt;
    use lance_table::io::commit::ManifestNamingScheme;
    use object_store::ObjectStoreExt;
    let dir = base.clone().join("_versions");
    let listed: Vec<object_store::ObjectMeta> = store.inner.list(Some(&dir)).try_collect().await?;
    let names: std::collections::HashSet<String> =
        listed.iter().filter_map(|m| m.location.filename().map(str::to_string)).collect();
    let mut bytes = 0;
    for meta in &listed {
        let Some(name) = meta.location.filename() else { continue };
        let Some((stem, _)) = name.split_once(".manifest-") else { continue };
        if meta.last_modified >= cutoff || name.starts_with('d') {
            continue;
        }
        let scheme = ManifestNamingScheme::detect_scheme_staging(name);
        let Some(version) = scheme.parse_version(name) else { continue };
        if version <= latest {
            if !names.contains(&format!("{stem}.manifest")) {
                continue;
            }
            if let Some(recorded) = managed {
                match recorded.get(base.as_ref(), version).await {
                    Ok(path) if path != meta.location.as_ref() => {}
                    _ => continue, // recorded as the version's manifest, or unknown: kept
                }
            }
        }
        match store.inner.delete(&meta.location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => bytes += meta.size,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(bytes)
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

/// Set (`Some` value) and remove (`None`) keys of the table's config (Lance's `config`,
/// pylance's `config()` and `update_config`) as one new version planned at `at`: concurrent
/// commits Lance can rebase over are fine, unless `options.preconditions` require otherwise (a
/// fencing token moved with a compare-and-set: require the old value, set the new one).
/// Keys must be non-empty and not repeated.
/// The keys a config update sets (`Some` value) and removes (`None`), sorted by key; a key is
/// set or removed, never both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigUpdates(Vec<(String, Option<String>)>);

impl ConfigUpdates {
    /// Keys to `set` and to `remove`: INVALID_ARGUMENT for a key in both.
    pub fn new(set: impl IntoIterator<Item = (String, String)>, remove: Vec<String>) -> Result<Self> {
        let mut updates: Vec<(String, Option<String>)> = set.into_iter().map(|(k, v)| (k, Some(v))).collect();
        updates.sort();
        for key in remove {
            if updates.iter().any(|(k, _)| *k == key) {
                return Err(HostError::invalid(format!("config key '{key}' is both set and removed")));
            }
            updates.push((key, None));
        }
        Ok(ConfigUpdates(updates))
    }
}

impl std::ops::Deref for ConfigUpdates {
    type Target = [(String, Option<String>)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

pub fn update_config(
    at: &Snapshot,
    updates: &[(String, Option<String>)],
    options: &super::WriteOptions,
) -> Result<(Snapshot, super::WriteSummary)> {
    use lance::dataset::transaction::{Operation, TransactionBuilder, UpdateMap, UpdateMapEntry};
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    if updates.is_empty() {
        return Err(HostError::invalid("a config update needs at least one key to set or remove"));
    }
    let mut seen = std::collections::HashSet::new();
    for (key, _) in updates {
        if key.is_empty() {
            return Err(HostError::invalid("a config key must not be empty"));
        }
        if !seen.insert(key.as_str()) {
            return Err(HostError::invalid(format!("config key '{key}' is given twice")));
        }
    }
    if options.statement_id.is_some() {
        return Err(HostError::invalid(
            "a config update takes no statement_id (setting the same values again is harmless)",
        ));
    }
    let uri = at.uri().to_string();
    let planned_at = at.version();
    let what = format!("cannot update the config of table '{uri}'");
    let operation = Operation::UpdateConfig {
        config_updates: Some(UpdateMap {
            update_entries: updates
                .iter()
                .map(|(key, value)| UpdateMapEntry { key: key.clone(), value: value.clone() })
                .collect(),
            replace: false,
        }),
        table_metadata_updates: None,
        schema_metadata_updates: None,
        field_metadata_updates: Default::default(),
    };
    let transaction = TransactionBuilder::new(planned_at, operation)
        .transaction_properties(options.transaction_properties())
        .build();
    let lance_session = session::global()?.lance.clone();
    let store_params = options.store_params(&uri);
    let dataset = at.dataset.clone();
    let result = session::block_on(async {
        let mut builder = lance::dataset::CommitBuilder::new(dataset)
            .with_session(lance_session)
            .with_store_params(store_params.clone());
        if let Some(n) = options.max_retries {
            builder = builder.with_max_retries(n);
        }
        if let Some(t) = options.retry_timeout {
            builder = builder.with_retry_timeout(t);
        }
        let mut pipeline = None;
        if !options.preconditions.is_empty() {
            let inner = super::preconditions::table_handler(&uri, &store_params, None).await?;
            let p = Arc::new(crate::snapshot::pipeline::Pipeline::new(inner).with_check(Arc::new(
                super::preconditions::PreconditionCheck(options.preconditions.clone()),
            )));
            builder = builder.with_commit_handler(p.clone());
            pipeline = Some(p);
        }
        builder.execute(transaction).await.map_err(|e| {
            let err = super::commit_error(&what, planned_at, e).with_local_paths(&uri);
            pipeline.and_then(|p| p.stopped()).unwrap_or(err)
        })
    })??;
    let summary = super::WriteSummary {
        version: result.version().version,
        committed: true,
        ..Default::default()
    };
    Ok((
        Snapshot {
            dataset: Arc::new(result),
            storage_options: at.storage_options.clone(),
        },
        summary,
    ))
}

/// The table's config at the snapshot's version, sorted by key.
pub fn config(at: &Snapshot) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = at.dataset.config().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    pairs.sort();
    pairs
}
