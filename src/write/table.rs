//! A whole write in one process: create, append to or overwrite a table from a stream of
//! batches, committed as one new version. It is the staged protocol run in one place (stage,
//! then commit), so it has the same retries, conflict errors and exactly-once rule.

use super::{committer, staged, WriteMode, WriteOptions, WriteSummary};
use super::source::Batches;
use crate::error::Result;
use crate::snapshot::{self, Snapshot};

/// Write `data` to the table at `uri` as one new version (`options.mode`: create, append or
/// overwrite). `at` pins the version an append or overwrite is planned at (commits made since
/// are rebased over when compatible, else LANCE_ERR_CONFLICT); None plans an append or
/// overwrite at the latest version. Returns the new version pinned, and what was written. If
/// the stream fails, nothing is committed and the files written so far are deleted.
pub fn write(uri: &str, at: Option<&Snapshot>, data: Batches, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    options.validate()?;
    let latest;
    let at = match (at, options.mode) {
        (None, WriteMode::Append) => {
            latest = snapshot::open(uri, options.storage_options.clone(), 0)?;
            Some(&latest)
        }
        (None, WriteMode::Overwrite) => match snapshot::open(uri, options.storage_options.clone(), 0) {
            Ok(s) => {
                latest = s;
                Some(&latest)
            }
            Err(e) if e.code == crate::error::LanceErrorCode::LANCE_ERR_NOT_FOUND => None,
            Err(e) => return Err(e),
        },
        (at, _) => at,
    };
    // A create that fails must not leave a directory no reader can open where the table was
    // to be: the directories it made, if empty after the failure, are removed.
    let fresh_dir = (options.mode == WriteMode::Create).then(|| local_dir(uri)).flatten().filter(|d| !d.exists());
    let result = stage_and_commit(uri, at, data, options);
    if let (Err(_), Some(dir)) = (&result, &fresh_dir) {
        remove_empty_dirs(dir);
    }
    result
}

/// The directory of a local table (a path or a `file://` URI); None for object stores.
fn local_dir(uri: &str) -> Option<std::path::PathBuf> {
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    (!path.contains("://") && !path.is_empty()).then(|| std::path::PathBuf::from(path))
}

/// Remove `dir` and its subdirectories if they hold no file (another writer's files keep them).
fn remove_empty_dirs(dir: &std::path::Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

fn stage_and_commit(uri: &str, at: Option<&Snapshot>, data: Batches, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    let staged = staged::stage(uri, at, data, options)?;
    let origin = committer::Origin::InProcess {
        absence_checked: options.mode == WriteMode::Create,
    };
    match committer::commit_planned(uri, vec![staged.clone()], options, at, origin) {
        Ok(done) => Ok(done),
        Err(e) => {
            // The rows of a refused commit must not linger as orphan files. Only a refusal is
            // certain to have committed nothing: after an I/O error, a timeout or an internal
            // error the manifest may have been written, and deleting its files would break
            // that version. Those files are left to cleanup.
            use crate::error::LanceErrorCode::*;
            if matches!(e.code, LANCE_ERR_CONFLICT | LANCE_ERR_INVALID_ARGUMENT) {
                let _ = staged::abort(&[staged], &options.storage_options);
            }
            Err(e)
        }
    }
}
