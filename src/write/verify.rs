//! What a commit checks of the staged writes it is handed, before Lance sees them. Staged bytes
//! cross processes and hosts; their checksum only catches accidents. A commit must not make a
//! version that duplicates rows, points at a file an abort deleted, or takes another table's
//! files, so it checks what it commits:
//!
//! - no share twice and no file named twice (by content, whatever the bytes' order);
//! - every file a share adds is a plain name in this table's `data/` (or `_deletions/`)
//!   directory, exists, and agrees with what the share says of it: a data file's footer gives
//!   the fragment's row count and format version, the (field id, column) pairs are the ones
//!   Lance's writer gives the file's schema, a deletion file holds the number of deleted rows
//!   the share names, all below the fragment's row count;
//! - the fragments a delete or merge-insert changes are fragments of the version it was planned
//!   at, with the same data files (a delete adds a deletion file, nothing else);
//! - the planned version is a version of the table (not past its latest);
//! - no file a share adds is already part of the table: not in the latest version, not added by
//!   any version committed since the share was planned (a share's files are written after its
//!   plan, so no earlier version can hold them).
//!
//! Refusals are LANCE_ERR_INVALID_ARGUMENT naming the share's index and the file; nothing is
//! committed. Reading the footers costs one or two reads per data file and one per deletion
//! file (bench/COMMIT_CHECKS.md measures it).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use lance::dataset::transaction::Operation;
use lance::Dataset;
use lance_io::object_store::ObjectStore;
use lance_io::scheduler::{ScanScheduler, SchedulerConfig};
use lance_table::format::{DataFile, DeletionFile, Fragment};
use object_store::path::Path;

use super::staged::{StagedKind, StagedWrite};
use crate::error::{HostError, LanceErrorCode, Result};

/// Files read at a time while checking.
const PARALLEL_READS: usize = 8;

/// A file a share adds to the table.
#[derive(Debug, Clone)]
enum Added {
    Data { share: usize, fragment: Fragment, file: DataFile },
    Deletion { share: usize, fragment: Fragment, file: DeletionFile },
}

impl Added {
    fn share(&self) -> usize {
        match self {
            Added::Data { share, .. } | Added::Deletion { share, .. } => *share,
        }
    }

    /// The path relative to the table's root.
    fn path(&self) -> String {
        match self {
            Added::Data { file, .. } => format!("data/{}", file.path),
            Added::Deletion { fragment, file, .. } => lance_table::io::deletion::relative_deletion_file_path(fragment.id, file),
        }
    }
}

/// Fragments an operation adds (new data files) and changes in place (new deletion or column
/// files), and the ids of the fragments it removes.
pub(crate) fn parts(op: &Operation) -> (&[Fragment], &[Fragment], &[u64]) {
    match op {
        Operation::Append { fragments } | Operation::Overwrite { fragments, .. } => (fragments, &[], &[]),
        Operation::Delete { updated_fragments, deleted_fragment_ids, .. } => (&[], updated_fragments, deleted_fragment_ids),
        Operation::Update { new_fragments, updated_fragments, removed_fragment_ids, .. } => {
            (new_fragments, updated_fragments, removed_fragment_ids)
        }
        _ => (&[], &[], &[]),
    }
}

fn refuse(share: usize, why: String) -> HostError {
    HostError::invalid(format!("staged write {share} is refused: {why}; nothing was committed"))
}

/// A file name a share may add: one plain name, no directory, no parent, no other base.
fn check_name(share: usize, name: &str, base_id: Option<u32>) -> Result<()> {
    if base_id.is_some() {
        return Err(refuse(share, format!("its file '{name}' is stored under another base path, which staged writes never are")));
    }
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.starts_with('.')
        && name.chars().all(|c| !c.is_control());
    if !plain {
        return Err(refuse(share, format!("its file name '{}' is not a plain file name in the table's directory", name.escape_debug())));
    }
    Ok(())
}

/// The files each share adds, checked against the version the shares were planned at (`None`
/// for a create). Fails when a share changes a fragment that version does not have, or changes
/// a fragment's data files where it may only add to them.
fn added_files(kind: StagedKind, staged: &[StagedWrite], planned: Option<&Dataset>) -> Result<Vec<Added>> {
    let planned_fragments: HashMap<u64, &Fragment> =
        planned.map(|ds| ds.manifest.fragments.iter().map(|f| (f.id, f)).collect()).unwrap_or_default();
    let mut added = Vec::new();
    for (share, s) in staged.iter().enumerate() {
        let (new, updated, removed) = parts(&s.transaction.operation);
        for f in new {
            if f.id > u64::from(u32::MAX) {
                return Err(refuse(share, format!("its new fragment id {} is out of range (Lance's fragment ids fit 32 bits)", f.id)));
            }
            if f.physical_rows.is_none() {
                return Err(refuse(share, format!("its new fragment {} has no row count", f.id)));
            }
            if f.files.is_empty() {
                return Err(refuse(share, format!("its new fragment {} has no data file", f.id)));
            }
            for file in &f.files {
                check_name(share, &file.path, file.base_id)?;
                added.push(Added::Data { share, fragment: f.clone(), file: file.clone() });
            }
            if let Some(d) = &f.deletion_file {
                check_name(share, "deletion file", d.base_id)?;
                added.push(Added::Deletion { share, fragment: f.clone(), file: d.clone() });
            }
        }
        for id in removed {
            if !planned_fragments.contains_key(id) {
                return Err(refuse(share, format!("it removes fragment {id}, which version {} of the table does not have", s.planned_at)));
            }
        }
        for f in updated {
            let Some(before) = planned_fragments.get(&f.id) else {
                return Err(refuse(share, format!("it changes fragment {}, which version {} of the table does not have", f.id, s.planned_at)));
            };
            let before_paths: HashSet<&str> = before.files.iter().map(|d| d.path.as_str()).collect();
            if kind == StagedKind::Delete && f.files != before.files {
                return Err(refuse(share, format!("its delete changes the data files of fragment {} (a delete only adds a deletion file)", f.id)));
            }
            if f.physical_rows != before.physical_rows {
                return Err(refuse(share, format!(
                    "it gives fragment {} {} rows, version {} has {}",
                    f.id,
                    f.physical_rows.map_or("no".to_string(), |n| n.to_string()),
                    s.planned_at,
                    before.physical_rows.map_or("no".to_string(), |n| n.to_string())
                )));
            }
            for file in f.files.iter().filter(|d| !before_paths.contains(d.path.as_str())) {
                check_name(share, &file.path, file.base_id)?;
                added.push(Added::Data { share, fragment: f.clone(), file: file.clone() });
            }
            if let Some(d) = &f.deletion_file {
                if before.deletion_file.as_ref() != Some(d) {
                    check_name(share, "deletion file", d.base_id)?;
                    added.push(Added::Deletion { share, fragment: f.clone(), file: d.clone() });
                }
            }
        }
    }
    Ok(added)
}

/// The checks that need no I/O: no share twice, no file named twice, names plain, fragments
/// changed in place known to the planned version. Returns the files the shares add.
fn check_shapes(kind: StagedKind, staged: &[StagedWrite], planned: Option<&Dataset>) -> Result<Vec<Added>> {
    let added = added_files(kind, staged, planned)?;
    // A share is its files: two shares that add the same file are the same share (or a splice).
    let mut owner: HashMap<String, usize> = HashMap::new();
    for a in &added {
        let path = a.path();
        match owner.get(&path) {
            Some(&first) if first == a.share() => {
                return Err(refuse(a.share(), format!("it names the file '{path}' twice")));
            }
            Some(&first) => {
                let files_of = |share: usize| {
                    let mut files: Vec<String> = added.iter().filter(|x| x.share() == share).map(Added::path).collect();
                    files.sort();
                    files
                };
                let same = files_of(first) == files_of(a.share());
                return Err(refuse(
                    a.share(),
                    if same {
                        format!("it is staged write {first} again (the same files): a share is committed once")
                    } else {
                        format!("its file '{path}' is also a file of staged write {first}: each file belongs to one share")
                    },
                ));
            }
            None => {
                owner.insert(path, a.share());
            }
        }
    }
    // Changes in place: two shares may not change one fragment (their deletion files would
    // each hide the other's).
    let mut changed: HashMap<u64, usize> = HashMap::new();
    for (share, s) in staged.iter().enumerate() {
        let (_, updated, removed) = parts(&s.transaction.operation);
        for id in updated.iter().map(|f| f.id).chain(removed.iter().copied()) {
            if let Some(first) = changed.insert(id, share) {
                if first != share {
                    return Err(refuse(share, format!("it changes fragment {id}, which staged write {first} also changes: give every worker its own fragments")));
                }
                return Err(refuse(share, format!("it changes fragment {id} twice")));
            }
        }
    }
    Ok(added)
}

/// The table's files a version references: data files and deletion files of its fragments.
fn version_files(ds: &Dataset) -> HashSet<String> {
    ds.manifest.fragments.iter().flat_map(fragment_files).collect()
}

/// The files of a fragment, as paths relative to the table's root.
pub(crate) fn fragment_files(f: &Fragment) -> Vec<String> {
    let mut files: Vec<String> = f.files.iter().map(|d| format!("data/{}", d.path)).collect();
    if let Some(df) = &f.deletion_file {
        files.push(lance_table::io::deletion::relative_deletion_file_path(f.id, df));
    }
    files
}

/// What the commit checks need of the table: the version the shares were planned at and the
/// latest one (None for a create of a table that does not exist).
pub(crate) struct Versions {
    pub planned: Option<Arc<Dataset>>,
    pub latest: Option<Arc<Dataset>>,
}

/// Check the shares of one commit of `kind` against the table: everything the module comment
/// lists. `store` and `base` address the table's root.
pub(crate) async fn check(
    kind: StagedKind,
    staged: &[StagedWrite],
    versions: &Versions,
    store: &Arc<ObjectStore>,
    base: &Path,
) -> Result<()> {
    let added = check_shapes(kind, staged, versions.planned.as_deref())?;
    // Already part of the table: in the latest version, or added by a version since the plan.
    if let Some(latest) = &versions.latest {
        let planned_at = staged.iter().map(|s| s.planned_at).min().unwrap_or(0);
        let mut in_use: HashMap<String, u64> =
            version_files(latest).into_iter().map(|f| (f, latest.version().version)).collect();
        let newest = latest.version().version;
        for version in planned_at.saturating_add(1)..newest {
            let txn = latest
                .read_transaction_by_version(version)
                .await
                .map_err(|e| match e {
                    lance::Error::NotFound { .. } | lance::Error::VersionNotFound { .. } | lance::Error::DatasetNotFound { .. } => {
                        HostError::precondition(format!(
                            "version {version}, committed since the shares were planned at version {planned_at}, was cleaned up: \
                             whether it holds their files cannot be told; plan the work again at the latest version"
                        ))
                    }
                    e => HostError::from_lance(&format!("cannot read the transaction of version {version}"), e),
                })?;
            if let Some(txn) = txn {
                let (new, updated, _) = parts(&txn.operation);
                for f in new.iter().chain(updated) {
                    for path in fragment_files(f) {
                        in_use.entry(path).or_insert(version);
                    }
                }
            }
        }
        for a in &added {
            if let Some(v) = in_use.get(&a.path()) {
                return Err(refuse(a.share(), format!(
                    "its file '{}' is already part of version {v} of the table: a share is committed once (a retry of a committed statement needs its statement id)",
                    a.path()
                )));
            }
        }
    }
    // The files exist here and agree with what the shares say of them.
    let scheduler = ScanScheduler::new(store.clone(), SchedulerConfig::max_bandwidth(store));
    futures::stream::iter(added.iter().map(|a| {
        let scheduler = scheduler.clone();
        async move { check_file(a, &scheduler, store, base).await }
    }))
    .buffer_unordered(PARALLEL_READS)
    .try_collect::<Vec<()>>()
    .await?;
    Ok(())
}

/// One added file exists and agrees with its share: a data file's row count and field ids
/// (from its footer), a deletion file's count and row offsets.
async fn check_file(a: &Added, scheduler: &Arc<ScanScheduler>, store: &ObjectStore, base: &Path) -> Result<()> {
    let share = a.share();
    // The library's one mapping of Lance's errors says which of them mean "no such object".
    let what = format!("cannot check staged write {share}'s file '{}'", a.path());
    let mapped = |e: lance::Error| HostError::from_lance(&what, e);
    let missing = |e: lance::Error| {
        let err = mapped(e);
        if err.code == LanceErrorCode::LANCE_ERR_NOT_FOUND {
            refuse(share, format!("its file '{}' does not exist in the table's directory (an abort deleted it, or the share is of another table)", a.path()))
        } else {
            err
        }
    };
    match a {
        Added::Data { fragment, file, .. } => {
            let path = base.clone().join("data").join(file.path.as_str());
            let fs = scheduler.open_file(&path, &file.file_size_bytes).await.map_err(missing)?;
            let read = lance_file::reader::FileReader::read_all_metadata(&fs).await;
            if let (Err(_), Some(said)) = (&read, file.file_size_bytes.get()) {
                // A read past the end of the file: the share may name a size the file does not
                // have (asked only on this error path: no request in the common case).
                if let Ok(real) = store.size(&path).await {
                    if real != said.get() {
                        return Err(refuse(share, format!("its file '{}' has {real} bytes, the share says {}", a.path(), said.get())));
                    }
                }
            }
            let meta = read.map_err(|e| {
                let err = missing(e);
                use LanceErrorCode::*;
                // missing (refused already), or storage that failed: not the share's fault
                if matches!(err.code, LANCE_ERR_INVALID_ARGUMENT | LANCE_ERR_IO | LANCE_ERR_UNAUTHENTICATED | LANCE_ERR_PERMISSION_DENIED | LANCE_ERR_TIMEOUT) {
                    return err;
                }
                refuse(share, format!("its file '{}' is not a readable Lance data file ({})", a.path(), err.message))
            })?;
            let rows = fragment.physical_rows.unwrap_or(0) as u64;
            if meta.num_rows != rows {
                return Err(refuse(share, format!(
                    "its file '{}' holds {} rows, its fragment {} says {rows}",
                    a.path(),
                    meta.num_rows,
                    fragment.id
                )));
            }
            // Format versions compared as Lance names them (a 2.0 file's footer says 0.3).
            let said = file.file_version().map_err(|e| refuse(share, format!("its file '{}' names no known format ({e})", a.path())))?;
            if said != meta.version {
                return Err(refuse(share, format!(
                    "its file '{}' is of format {:?}, the share says {:?} ({}.{})",
                    a.path(),
                    meta.version,
                    said,
                    file.file_major_version,
                    file.file_minor_version
                )));
            }
            // The share names the file's columns: (field id, column index) pairs, which Lance's
            // writer derives from the file's schema and format version. A share whose pairs are
            // not the writer's would make readers take one column for another.
            let expected = columns_of(&meta).await.map_err(|e| HostError::from_lance(&what, e))?;
            let named: Vec<(i32, i32)> = file.fields.iter().copied().zip(file.column_indices.iter().copied()).collect();
            let want: Vec<(i32, i32)> = expected.iter().map(|&(f, c)| (f as i32, c as i32)).collect();
            if file.fields.len() != file.column_indices.len() || named != want {
                return Err(refuse(share, format!(
                    "its file '{}' has the columns (field id, column) {want:?}, the share names fields {:?} at columns {:?}",
                    a.path(),
                    file.fields,
                    file.column_indices
                )));
            }
        }
        Added::Deletion { fragment, file, .. } => {
            let dv = lance_table::io::deletion::read_deletion_file(fragment.id, file, base, store).await.map_err(missing)?;
            if let Some(n) = file.num_deleted_rows {
                if n != dv.len() {
                    return Err(refuse(share, format!("its deletion file '{}' deletes {} rows, the share says {n}", a.path(), dv.len())));
                }
            }
            let rows = fragment.physical_rows.unwrap_or(0) as u64;
            if let Some(max) = dv.iter().map(u64::from).max() {
                if max >= rows {
                    return Err(refuse(share, format!(
                        "its deletion file '{}' deletes row {max} of fragment {}, which has {rows} rows",
                        a.path(),
                        fragment.id
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The (field id, column index) pairs Lance's writer gives a file of `meta`'s schema and format
/// version: a writer is set up for that schema in memory (nothing is written) and asked.
async fn columns_of(meta: &lance_file::reader::CachedFileMetadata) -> lance::Result<Vec<(u32, u32)>> {
    let memory = ObjectStore::memory();
    let sink = memory.create(&Path::from("columns")).await?;
    let mut writer = lance_file::versions::create_writer(
        meta.version,
        sink,
        meta.file_schema.as_ref().clone(),
        lance_file::writer::FileWriterOptions::default(),
    )?;
    let pairs = writer.field_id_to_column_indices().to_vec();
    writer.abort().await;
    Ok(pairs)
}

/// Check fragments a host shipped outside the staged-write protocol (a distributed compaction's
/// results), as new fragments of `shares` (appends planned at their read versions): every
/// check above that applies to new files. Loads the table's latest version and the planned one.
pub(crate) fn check_shipped_fragments(
    uri: &str,
    shares: &[StagedWrite],
    storage_options: &std::collections::HashMap<String, String>,
) -> Result<()> {
    let planned_at = shares.iter().map(|s| s.planned_at).min().unwrap_or(0);
    let what = format!("cannot check the shipped files of table '{uri}'");
    let lance_session = crate::session::global()?.lance.clone();
    let params = super::WriteOptions {
        storage_options: storage_options.clone(),
        ..Default::default()
    }
    .store_params(uri);
    crate::session::block_on(async {
        let builder = crate::snapshot::managed::builder(uri)
            .map_err(|e| HostError::from_lance(&what, e))?
            .with_session(lance_session.clone());
        let latest = crate::snapshot::credentials::with_options(builder, uri, storage_options.clone())
            .load()
            .await
            .map_err(|e| HostError::from_lance(&what, e))?;
        if planned_at > latest.version().version {
            return Err(HostError::invalid(format!(
                "planned at version {planned_at}, but the table's latest version is {}",
                latest.version().version
            )));
        }
        let planned = latest.checkout_version(planned_at).await.map_err(|e| HostError::from_lance(&what, e))?;
        let (store, base) = ObjectStore::from_uri_and_params(lance_session.store_registry(), uri, &params)
            .await
            .map_err(|e| HostError::from_lance(&what, e))?;
        let versions = Versions {
            planned: Some(Arc::new(planned)),
            latest: Some(Arc::new(latest)),
        };
        check(StagedKind::Append, shares, &versions, &store, &base).await
    })?
}
