//! Branches and clones of a table (Lance's branches: `tree/<name>` under the table's root,
//! each with its own version history, sharing the files of the version it was created from).
//!
//! A handle opened on a branch is the branch's own location (`<root>/tree/<name>`) pinned at a
//! version of the branch: its URI, snapshot token and splits name that location, so workers
//! open exactly the branch's version, and writes and commits planned on it land on the branch
//! (never on main). The branch's name is in the pinned manifest as well
//! (`lance_dataset_branch`).

use std::collections::HashMap;
use std::sync::Arc;


use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// Lance's name of the default branch, also accepted where a branch is named.
pub const MAIN: &str = "main";

/// One branch of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    pub name: String,
    /// The branch it was created from (None: main).
    pub parent: Option<String>,
    /// The version of the parent it was created from.
    pub parent_version: u64,
}

/// What every branch name must be, the names of existing branches included (another writer,
/// pylance for one, may have created a branch with characters `check_name` refuses): a path of
/// names below the table's `tree/`, never above it.
fn check_path(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 256 {
        return Err(HostError::invalid(format!("branch name '{name}' must have 1 to 256 bytes")));
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") || name.split('/').any(|s| s == "." || s == "..")
    {
        return Err(HostError::invalid(format!("branch name '{name}' is not a path of names")));
    }
    if name.chars().any(|c| c.is_control() || c == '\\') {
        return Err(HostError::invalid(format!("branch name {name:?} has a control character or a backslash")));
    }
    Ok(())
}

/// The names this library creates branches under: ASCII letters, digits, '-', '_', '.', '/'.
fn check_name(name: &str) -> Result<()> {
    check_path(name)?;
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))) {
        return Err(HostError::invalid(format!(
            "branch name '{name}' has '{c}': use letters, digits, '-', '_', '.' and '/'"
        )));
    }
    Ok(())
}

/// The branch a handle is on (None: main).
pub fn branch_of(at: &Snapshot) -> Option<String> {
    at.dataset.manifest.branch.clone().filter(|b| b != MAIN)
}

/// Open the table at `uri` on `branch` ("main" = the default branch), at `version` of that
/// branch (0 = its latest).
pub fn open_branch(uri: &str, storage_options: HashMap<String, String>, branch: &str, version: u64) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Open);
    if branch != MAIN {
        check_path(branch)?;
    }
    crate::snapshot::validate_uri(uri)?;
    crate::datacache::table_uses_cache(&storage_options)?;
    let secrets = crate::redact::Secrets::from_storage_options(&storage_options);
    let lance_session = session::global()?.lance.clone();
    let opts = storage_options.clone();
    let what = match version {
        0 => format!("cannot open branch '{branch}' of table '{uri}'"),
        v => format!("cannot open branch '{branch}' of table '{uri}' at version {v}"),
    };
    let dataset = session::block_on(async move {
        let builder = crate::snapshot::managed::builder(uri)?.with_session(lance_session);
        crate::snapshot::credentials::with_options(builder, uri, opts)
            .with_branch(branch, (version != 0).then_some(version))
            .load()
            .await
    })?
    .map_err(|e| secrets.scrub(HostError::from_lance(&what, e)).with_local_paths(uri))?;
    Ok(Snapshot {
        dataset: Arc::new(dataset),
        storage_options,
    })
}

/// Create branch `name` from `version` of the handle's branch (0 = the handle's version); returns
/// the new branch at its first version, which has the number of the version it was created from.
/// The branch shares the files of that version.
pub fn create_branch(at: &Snapshot, name: &str, version: u64) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    check_name(name)?;
    if name == MAIN {
        return Err(HostError::invalid("'main' is the default branch; a new branch needs another name"));
    }
    let version = if version == 0 { at.version() } else { version };
    let parent = branch_of(at);
    let mut dataset = (*at.dataset).clone();
    let branch = name.to_string();
    let what = format!(
        "cannot create branch '{name}' from version {version} of {} of table '{}'",
        parent.as_deref().map_or_else(|| "main".to_string(), |p| format!("branch '{p}'")),
        at.uri()
    );
    let created = session::block_on(async move {
        dataset
            .create_branch(&branch, (parent.as_deref(), Some(version)), None)
            .await
    })?
    .map_err(|e| HostError::from_lance(&what, e).with_local_paths(at.uri()))?;
    Ok(Snapshot {
        dataset: Arc::new(created),
        storage_options: at.storage_options.clone(),
    })
}

/// Delete branch `name` of the handle's table (its versions and the files only it uses).
pub fn delete_branch(at: &Snapshot, name: &str) -> Result<()> {
    crate::metrics::op(crate::metrics::Op::Commit);
    check_path(name)?;
    if name == MAIN {
        return Err(HostError::invalid("the default branch 'main' cannot be deleted"));
    }
    if branch_of(at).as_deref() == Some(name) {
        return Err(HostError::invalid(format!(
            "branch '{name}' is the handle's own branch: delete it through a handle on another branch"
        )));
    }
    let mut dataset = (*at.dataset).clone();
    let branch = name.to_string();
    session::block_on(async move { dataset.delete_branch(&branch).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot delete branch '{name}' of table '{}'", at.uri()), e))
}

/// The branches of the handle's table, by name.
pub fn list_branches(at: &Snapshot) -> Result<Vec<BranchInfo>> {
    let dataset = at.dataset.clone();
    let listed = session::block_on(async move { dataset.list_branches().await })?
        .map_err(|e| HostError::from_lance(&format!("cannot list the branches of table '{}'", at.uri()), e))?;
    let mut out: Vec<BranchInfo> = listed
        .into_iter()
        .map(|(name, contents)| BranchInfo {
            name,
            parent: contents.parent_branch.filter(|p| p != MAIN),
            parent_version: contents.parent_version,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Clone the handle's version into a new table at `target` that references the source's files
/// (no data is copied: the source's files must outlive the clone). Returns the clone at its
/// first version (numbered as the source version).
pub fn shallow_clone(at: &Snapshot, target: &str, storage_options: HashMap<String, String>) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    crate::snapshot::validate_uri(target)?;
    let mut dataset = (*at.dataset).clone();
    let version = at.version();
    let branch = branch_of(at);
    let target_owned = target.to_string();
    let params = lance_io::object_store::ObjectStoreParams {
        storage_options_accessor: Some(Arc::new(lance_io::object_store::StorageOptionsAccessor::with_static_options(
            storage_options.clone(),
        ))),
        ..Default::default()
    };
    let what = format!("cannot clone version {version} of table '{}' into '{target}'", at.uri());
    let cloned = session::block_on(async move {
        dataset
            .shallow_clone(&target_owned, (branch.as_deref(), Some(version)), Some(params))
            .await
    })?
    .map_err(|e| HostError::from_lance(&what, e).with_local_paths(target))?;
    Ok(Snapshot {
        dataset: Arc::new(cloned),
        storage_options,
    })
}
