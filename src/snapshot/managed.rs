//! The table door below the catalog: which locations open and commit through a namespace.
//!
//! Tables whose versions a namespace manages (its `DescribeTable` answer says
//! `managed_versioning`): the namespace, not the table's storage, is the source of the latest
//! version, and every commit registers its version through the namespace's version API
//! (`create_table_version`). Lance does both with an external-manifest commit handler backed by
//! the namespace; this module keeps, per process, which table locations a catalog described as
//! managed, so every open and commit of such a location — by a catalog handle, by URI, from a
//! snapshot token, on a branch — uses that handler.
//!
//! The record is made when a catalog describes or opens the table (`Catalog::describe_table`,
//! `open_table`, ...), so a process commits a managed table through its namespace once it has
//! opened the table through its catalog. A process that never did cannot know the table is
//! managed (nothing in its storage says so): engines commit on the coordinator that planned
//! through the catalog, which is that process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use lance_namespace::LanceNamespace;
use lance_table::io::commit::CommitHandler;

use crate::error::{HostError, Result};

#[derive(Clone)]
struct Managed {
    namespace: Arc<dyn LanceNamespace>,
    table_id: Vec<String>,
}

fn registry() -> &'static Mutex<HashMap<String, Managed>> {
    static R: OnceLock<Mutex<HashMap<String, Managed>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

/// One spelling per location: no `file://` for absolute paths, no trailing '/'.
fn key(uri: &str) -> String {
    let u = match uri.strip_prefix("file://") {
        Some(p) if p.starts_with('/') => p,
        _ => uri,
    };
    u.trim_end_matches('/').to_string()
}

/// Record that the table at `location` is managed by `namespace` under `table_id`.
pub(crate) fn register(location: &str, namespace: Arc<dyn LanceNamespace>, table_id: Vec<String>) {
    let mut r = registry().lock().unwrap_or_else(|p| p.into_inner());
    r.insert(key(location), Managed { namespace, table_id });
}

/// Forget a location (its table was dropped).
pub(crate) fn forget(location: &str) {
    registry().lock().unwrap_or_else(|p| p.into_inner()).remove(&key(location));
}

/// The table root a location belongs to when it is managed: the location itself, or the root
/// of a branch location (`<root>/tree/<branch>`).
fn lookup(uri: &str) -> Option<(String, Managed)> {
    let k = key(uri);
    let r = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = r.get(&k) {
        return Some((k, m.clone()));
    }
    let (root, _) = k.split_once("/tree/")?;
    r.get(root).map(|m| (root.to_string(), m.clone()))
}

/// Whether the table at `uri` (or the table a branch location belongs to) is managed by a
/// namespace this process described.
pub fn is_managed(uri: &str) -> bool {
    lookup(uri).is_some()
}

/// The namespace-backed manifest store of a managed table (`root` its location).
fn store(root: &str, m: &Managed) -> Result<lance::io::commit::namespace_manifest::LanceNamespaceExternalManifestStore> {
    lance::io::commit::namespace_manifest::LanceNamespaceExternalManifestStore::for_table_uri(
        m.namespace.clone(),
        m.table_id.clone(),
        root,
    )
    .map_err(|e| HostError::from_lance(&format!("cannot use the namespace that manages table '{root}'"), e))
}

/// The commit handler of the table at `uri`: the namespace-backed one for a managed table
/// (latest version from the namespace, commits through `create_table_version`), else None
/// (Lance's own for the URI).
pub(crate) fn handler(uri: &str) -> Result<Option<Arc<dyn CommitHandler>>> {
    let Some((root, m)) = lookup(uri) else { return Ok(None) };
    let store = store(&root, &m)?;
    Ok(Some(Arc::new(lance_table::io::commit::external_manifest::ExternalManifestCommitHandler {
        external_manifest_store: Arc::new(store),
    })))
}

/// A managed table's main branch, for a commit that registers its version itself (a
/// multi-table commit): the namespace, the table's id in it, and the namespace-backed manifest
/// store (reads of versions go through it). None when `uri` is not a managed table's root (an
/// unmanaged table, or a branch location).
pub(crate) struct ManagedTable {
    pub namespace: Arc<dyn LanceNamespace>,
    pub table_id: Vec<String>,
    pub store: Arc<dyn lance_table::io::commit::external_manifest::ExternalManifestStore>,
}

pub(crate) fn main_branch(uri: &str) -> Result<Option<ManagedTable>> {
    let Some((root, m)) = lookup(uri) else { return Ok(None) };
    if root != key(uri) {
        return Ok(None);
    }
    let store = Arc::new(store(&root, &m)?);
    Ok(Some(ManagedTable { namespace: m.namespace, table_id: m.table_id, store }))
}

/// The commit handler a commit of the table at `uri` wraps: the namespace's for a managed
/// table, else Lance's own for the URI.
pub(crate) async fn commit_handler(
    uri: &str,
    store_params: &lance_io::object_store::ObjectStoreParams,
) -> lance::Result<Arc<dyn CommitHandler>> {
    match handler(uri) {
        Ok(Some(h)) => Ok(h),
        Ok(None) => lance_table::io::commit::commit_handler_from_url(uri, &Some(store_params.clone())).await,
        Err(e) => Err(lance::Error::invalid_input(e.message)),
    }
}

/// A dataset builder for `uri` that resolves versions and commits through the table's
/// namespace when it is managed.
pub(crate) fn builder(uri: &str) -> lance::Result<lance::dataset::builder::DatasetBuilder> {
    let b = lance::dataset::builder::DatasetBuilder::from_uri(uri);
    Ok(match handler(uri).map_err(|e| lance::Error::invalid_input(e.message))? {
        Some(h) => b.with_commit_handler(h),
        None => b,
    })
}
