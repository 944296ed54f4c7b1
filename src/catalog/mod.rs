//! Catalogs: Lance directory namespaces and Lance REST namespaces — list namespaces and
//! tables, describe a table, open it pinned. The operations are shared; what differs between
//! the two backends (their properties, how they connect and name themselves) lives in `dir`
//! and `rest`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use lance_namespace::models::{
    DescribeTableRequest, ListNamespacesRequest, ListTablesRequest, NamespaceExistsRequest,
};
use lance_namespace::LanceNamespace;
use lance_namespace_impls::ConnectBuilder;

use crate::error::{HostError, LanceErrorCode, Result};
use crate::redact::Secrets;
use crate::session;
use crate::snapshot::{self, Snapshot};

mod ddl;
mod dir;
mod rest;

/// What a backend makes of the catalog's properties: the properties Lance's namespace
/// connector takes, and how the catalog names itself in messages.
struct Backend {
    /// The connector's implementation name ("dir" or "rest").
    kind_name: &'static str,
    connect_props: HashMap<String, String>,
    /// The local directory a `dir` catalog reads (None for object stores and REST).
    local_root: Option<std::path::PathBuf>,
    label: String,
}

/// Default bound for one catalog call (all pages included).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default page size requested from the namespace.
pub const DEFAULT_PAGE_SIZE: u32 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogKind {
    Dir,
    Rest,
}

/// A connected catalog, scoped to `parent`.
pub struct Catalog {
    pub kind: CatalogKind,
    namespace: Arc<dyn LanceNamespace>,
    parent: Vec<String>,
    pub delimiter: String,
    storage_options: HashMap<String, String>,
    timeout: Duration,
    page_size: u32,
    secrets: Secrets,
    /// The local directory a `dir` catalog reads (None for object stores and REST).
    local_root: Option<std::path::PathBuf>,
    /// How messages name the catalog, e.g. "directory catalog '/data'" (no secrets).
    label: String,
}

/// What `describe_table` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    pub location: String,
    pub storage_options: HashMap<String, String>,
    pub latest_version: u64,
}

const KNOWN_KEYS: &[&str] = &[
    "type",
    "root",
    "uri",
    "auth",
    "bearer_token",
    "api_key",
    "parent",
    "delimiter",
    "timeout_ms",
    "page_size",
];

fn take_bool_free_props(props: &HashMap<String, String>) -> Result<()> {
    for key in props.keys() {
        let ok = KNOWN_KEYS.contains(&key.as_str())
            || key.starts_with("storage.")
            || key.starts_with("header.");
        if !ok {
            return Err(HostError::invalid(format!(
                "unknown catalog property '{key}'"
            )));
        }
        if (key.starts_with("storage.") && key.len() == "storage.".len())
            || (key.starts_with("header.") && key.len() == "header.".len())
        {
            return Err(HostError::invalid(format!(
                "catalog property '{key}' lacks a name after the prefix"
            )));
        }
    }
    Ok(())
}

fn parse_u64(props: &HashMap<String, String>, key: &str, default: u64) -> Result<u64> {
    match props.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| HostError::invalid(format!("catalog property '{key}' must be a positive integer, got '{v}'"))),
    }
}

impl Catalog {
    /// Connect from key/value properties (see the C header for the keys).
    pub fn open(props: HashMap<String, String>) -> Result<Catalog> {
        take_bool_free_props(&props)?;
        let mut secrets = Secrets::default();
        for (k, v) in &props {
            if matches!(k.as_str(), "bearer_token" | "api_key")
                || (k.starts_with("storage.") && crate::redact::is_secret_key(&k["storage.".len()..]))
                || (k.starts_with("header.") && crate::redact::is_secret_header(&k["header.".len()..]))
            {
                secrets.add(v);
            }
        }
        let kind = match props.get("type").map(String::as_str) {
            None | Some("dir") => CatalogKind::Dir,
            Some("rest") => CatalogKind::Rest,
            Some(other) => {
                return Err(HostError::invalid(format!(
                    "catalog property 'type' must be 'dir' or 'rest', got '{other}'"
                )))
            }
        };
        let delimiter = props.get("delimiter").cloned().unwrap_or_else(|| "$".into());
        if delimiter.is_empty() {
            return Err(HostError::invalid("catalog property 'delimiter' is empty"));
        }
        let parent: Vec<String> = match props.get("parent") {
            None => Vec::new(),
            Some(p) if p.is_empty() => Vec::new(),
            Some(p) => {
                let parts: Vec<String> = p.split(delimiter.as_str()).map(str::to_string).collect();
                if parts.iter().any(String::is_empty) {
                    return Err(HostError::invalid(format!(
                        "catalog property 'parent' has an empty part: '{p}'"
                    )));
                }
                parts
            }
        };
        let timeout = Duration::from_millis(parse_u64(&props, "timeout_ms", DEFAULT_TIMEOUT_MS)?);
        let page_size = parse_u64(&props, "page_size", DEFAULT_PAGE_SIZE as u64)?;
        let page_size = u32::try_from(page_size.min(i32::MAX as u64)).unwrap_or(DEFAULT_PAGE_SIZE);
        let storage_options: HashMap<String, String> = props
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("storage.").map(|s| (s.to_string(), v.clone())))
            .collect();

        let backend = match kind {
            CatalogKind::Dir => dir::backend(&props, &storage_options)?,
            CatalogKind::Rest => rest::backend(&props, &delimiter)?,
        };

        let lance_session = session::global()?.lance.clone();
        let (kind_name, builder_props) = (backend.kind_name, backend.connect_props);
        let namespace = run_bounded(timeout, &secrets, "cannot open catalog", async move {
            ConnectBuilder::new(kind_name)
                .properties(builder_props)
                .session(lance_session)
                .connect()
                .await
        })?;
        Ok(Catalog {
            kind,
            namespace,
            parent,
            delimiter,
            storage_options,
            timeout,
            page_size,
            secrets,
            local_root: backend.local_root,
            label: backend.label,
        })
    }

    /// A local root that does not exist is NOT_FOUND, not an empty catalog.
    fn check_root(&self) -> Result<()> {
        match &self.local_root {
            Some(root) if !root.is_dir() => Err(HostError::not_found(format!(
                "catalog root '{}' does not exist or is not a directory",
                root.display()
            ))),
            _ => Ok(()),
        }
    }

    fn full_id(&self, ns: &[String]) -> Result<Vec<String>> {
        if let Some(i) = ns.iter().position(String::is_empty) {
            return Err(HostError::invalid(format!("namespace part {i} is empty")));
        }
        let mut id = self.parent.clone();
        id.extend(ns.iter().cloned());
        Ok(id)
    }

    fn display(&self, id: &[String]) -> String {
        if id.is_empty() {
            "<root>".to_string()
        } else {
            id.join(&self.delimiter)
        }
    }

    /// Child namespaces of `ns` (relative to the catalog's parent), as full relative paths.
    pub fn list_namespaces(&self, ns: &[String], recursive: bool) -> Result<Vec<Vec<String>>> {
        let mut out = Vec::new();
        let mut frontier = vec![ns.to_vec()];
        while let Some(current) = frontier.pop() {
            let children = self.list_child_namespaces(&current)?;
            for child in children {
                let mut path = current.clone();
                path.push(child);
                if recursive {
                    frontier.push(path.clone());
                }
                out.push(path);
            }
        }
        out.sort();
        Ok(out)
    }

    fn list_child_namespaces(&self, ns: &[String]) -> Result<Vec<String>> {
        self.list_paged(ns, "namespaces", |namespace, id, limit, token| async move {
            let mut req = ListNamespacesRequest::new();
            (req.id, req.limit, req.page_token) = (Some(id), Some(limit), token);
            let resp = namespace.list_namespaces(req).await?;
            Ok((resp.namespaces, resp.page_token))
        })
    }

    /// Tables of `ns` (relative to the catalog's parent).
    pub fn list_tables(&self, ns: &[String]) -> Result<Vec<String>> {
        let mut tables = self.list_paged(ns, "tables", |namespace, id, limit, token| async move {
            let mut req = ListTablesRequest::new();
            (req.id, req.limit, req.page_token) = (Some(id), Some(limit), token);
            let resp = namespace.list_tables(req).await?;
            Ok((resp.tables, resp.page_token))
        })?;
        tables.sort();
        Ok(tables)
    }

    /// Every page of a listing of `ns` (`what`: "namespaces" or "tables"), bounded by the
    /// catalog's timeout; `page` fetches one page (namespace, full id, page size, token).
    fn list_paged<F, Fut>(&self, ns: &[String], what: &str, page: F) -> Result<Vec<String>>
    where
        F: Fn(Arc<dyn LanceNamespace>, Vec<String>, i32, Option<String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = lance::Result<(Vec<String>, Option<String>)>> + Send,
    {
        self.check_root()?;
        let id = self.full_id(ns)?;
        let message = format!("cannot list {what} of '{}'", self.display(&id));
        let namespace = self.namespace.clone();
        let page_size = self.page_size as i32;
        run_bounded(self.timeout, &self.secrets, &message, async move {
            ensure_namespace(namespace.as_ref(), &id).await?;
            follow_pages(|token| page(namespace.clone(), id.clone(), page_size, token)).await
        })
    }

    fn describe_raw(&self, ns: &[String], table: &str) -> Result<(String, HashMap<String, String>, Option<u64>)> {
        if table.is_empty() {
            return Err(HostError::invalid("table name is empty"));
        }
        self.check_root()?;
        let mut id = self.full_id(ns)?;
        id.push(table.to_string());
        let what = format!("cannot describe table '{}'", self.display(&id));
        let namespace = self.namespace.clone();
        let ns_name = self.display(&id[..id.len() - 1]);
        let table_id = id.clone();
        let resp = run_bounded(self.timeout, &self.secrets, &what, async move {
            let mut req = DescribeTableRequest::new();
            req.id = Some(id);
            namespace.describe_table(req).await
        })
        .map_err(|e| match e.code {
            LanceErrorCode::LANCE_ERR_NOT_FOUND => HostError::not_found(format!(
                "table '{table}' not found in namespace {ns_name} of the {} ({})",
                self.label, e.message
            )),
            _ => e,
        })?;
        let location = resp
            .location
            .or(resp.table_uri)
            .ok_or_else(|| HostError::internal(format!("{what}: the namespace returned no location")))?;
        // One form for local tables: a plain absolute path (namespaces return `file://` URIs
        // for some tables and paths for others).
        let location = match location.strip_prefix("file://") {
            Some(path) if path.starts_with('/') => path.to_string(),
            _ => location,
        };
        // The catalog's own options first; what the namespace vends overrides them.
        let mut options = self.storage_options.clone();
        options.extend(resp.storage_options.unwrap_or_default());
        // Vended options that expire are refreshed through this namespace for as long as the
        // table is used with them (`snapshot::credentials`).
        let refresh = crate::snapshot::credentials::NamespaceRefresh {
            namespace: self.namespace.clone(),
            table_id: table_id.clone(),
            base: self.storage_options.clone(),
            timeout: self.timeout,
            label: self.label.clone(),
        };
        let options = crate::snapshot::credentials::register(&location, options, Arc::new(refresh));
        let version = resp.version.and_then(|v| u64::try_from(v).ok()).filter(|v| *v > 0);
        if resp.managed_versioning == Some(true) {
            // from now on every open and commit of this location in the process goes through
            // the namespace (`managed`)
            crate::snapshot::managed::register(&location, self.namespace.clone(), table_id);
        }
        Ok((location, options, version))
    }

    /// Location, storage options and latest version of a table.
    pub fn describe_table(&self, ns: &[String], table: &str) -> Result<TableInfo> {
        let (location, storage_options, version) = self.describe_raw(ns, table)?;
        let latest_version = match version {
            Some(v) => v,
            None => self.with_secrets(snapshot::open(&location, storage_options.clone(), 0))?.version(),
        };
        Ok(TableInfo {
            location,
            storage_options,
            latest_version,
        })
    }

    /// Open a table pinned at `version` (0 = latest, then pinned).
    pub fn open_table(&self, ns: &[String], table: &str, version: u64) -> Result<Snapshot> {
        let (location, storage_options, _) = self.describe_raw(ns, table)?;
        self.with_secrets(snapshot::open(&location, storage_options, version))
    }

    /// Open a table on `branch` ("main" = the default one) at `version` of that branch (0 =
    /// its latest).
    pub fn open_table_branch(&self, ns: &[String], table: &str, branch: &str, version: u64) -> Result<Snapshot> {
        let (location, storage_options, _) = self.describe_raw(ns, table)?;
        self.with_secrets(crate::branch::open_branch(&location, storage_options, branch, version))
    }

    /// Open a table at the version (and branch) tag `tag` names.
    pub fn open_table_tag(&self, ns: &[String], table: &str, tag: &str) -> Result<Snapshot> {
        let (location, storage_options, _) = self.describe_raw(ns, table)?;
        self.with_secrets(crate::write::maintenance::open_tag(&location, storage_options, tag))
    }

    fn with_secrets<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.secrets.scrub(e))
    }
}

/// Call `page` with each page token until the namespace returns no further token.
async fn follow_pages<F, Fut>(mut page: F) -> lance::Result<Vec<String>>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = lance::Result<(Vec<String>, Option<String>)>>,
{
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let (items, next) = page(token.clone()).await?;
        names.extend(items);
        match next {
            Some(t) if !t.is_empty() && Some(&t) != token.as_ref() => token = Some(t),
            _ => return Ok(names),
        }
    }
}

/// Fail with the namespace's NOT_FOUND when `id` does not exist (some namespaces answer an
/// empty listing for a namespace that does not exist).
async fn ensure_namespace(namespace: &dyn LanceNamespace, id: &[String]) -> lance::Result<()> {
    if id.is_empty() {
        return Ok(());
    }
    let mut req = NamespaceExistsRequest::new();
    req.id = Some(id.to_vec());
    namespace.namespace_exists(req).await
}

/// Run a namespace call on the global runtime with a time bound, mapping its error.
fn run_bounded<T: Send + 'static>(
    timeout: Duration,
    secrets: &Secrets,
    what: &str,
    fut: impl Future<Output = lance::Result<T>> + Send + 'static,
) -> Result<T> {
    let outcome = session::block_on(async move { tokio::time::timeout(timeout, fut).await })?;
    match outcome {
        Err(_) => Err(HostError::new(
            LanceErrorCode::LANCE_ERR_IO,
            format!("{what}: timed out, no answer within {} ms", timeout.as_millis()),
        )),
        Ok(Err(e)) => Err(secrets.scrub(HostError::from_lance(what, e))),
        Ok(Ok(v)) => Ok(v),
    }
}
