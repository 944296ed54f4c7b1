//! Multi-table commits: the staged writes of several tables committed together — every table
//! gets its new version, or none does. Only a namespace can promise that: the tables must be
//! managed by one namespace (their versions registered through it, see
//! [`crate::snapshot::managed`]) that commits several tables' versions in one call
//! (`batch_commit_tables`). Without one, nothing is written and the answer is
//! `LANCE_ERR_NOT_SUPPORTED`.
//!
//! How: each table's commit is prepared as a one-table commit would be (the same checks of its
//! shares, statement ids and preconditions, on the table's latest version), except that the
//! manifest Lance writes stays a *staging* manifest, registered nowhere (its version is the
//! table's latest + 1). Then one `batch_commit_tables` call asks the namespace to register every
//! staging manifest as its table's next version; the namespace checks each (version still the
//! latest + 1) and registers all or none. A coordinator killed before that call leaves only
//! staging files no version refers to; killed after it, the namespace's answer stands.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use lance_io::object_store::ObjectStore;
use lance_namespace::models::{BatchCommitTablesRequest, CommitTableOperation, CreateTableVersionRequest};
use lance_table::io::commit::external_manifest::{ExternalManifestCommitHandler, ExternalManifestStore};
use lance_table::io::commit::{CommitHandler, ManifestLocation, ManifestNamingScheme};
use object_store::path::Path;

use super::staged::{StagedKind, StagedWrite};
use super::{WriteOptions, WriteSummary};
use crate::error::{HostError, LanceErrorCode, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// One table of a multi-table commit: its URI (a table a catalog described as managed), the
/// staged writes of its statement and the options of its commit.
pub struct TableCommit {
    pub uri: String,
    pub staged: Vec<StagedWrite>,
    pub options: WriteOptions,
}

/// The manifest of a prepared commit: written, not registered.
#[derive(Debug, Clone)]
struct Staging {
    version: u64,
    path: Path,
    size: u64,
    e_tag: Option<String>,
    scheme: ManifestNamingScheme,
}

/// What one table's prepared commit left: its staging manifest, and the files to delete when
/// the commit does not land (deletion files of row changes).
#[derive(Debug, Default)]
pub(crate) struct Deferral {
    staging: Mutex<Option<Staging>>,
    written: Mutex<Option<(Arc<ObjectStore>, Path, Vec<String>)>>,
}

impl Deferral {
    /// The commit handler a prepared commit writes through: reads of versions go to the
    /// namespace (`store`), the version written is only recorded here.
    pub(crate) fn handler(self: &Arc<Self>, store: Arc<dyn ExternalManifestStore>) -> Arc<dyn CommitHandler> {
        Arc::new(ExternalManifestCommitHandler {
            external_manifest_store: Arc::new(Deferred { inner: store, deferral: self.clone() }),
        })
    }

    /// Keep the files a prepared commit wrote besides its manifest (`files` under `base`).
    pub(crate) fn keep_written(&self, root: Option<&(Arc<ObjectStore>, Path)>, files: &[String]) {
        if let Some((store, base)) = root {
            *self.written.lock().unwrap_or_else(|p| p.into_inner()) = Some((store.clone(), base.clone(), files.to_vec()));
        }
    }

    fn staging(&self) -> Option<Staging> {
        self.staging.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Delete what the prepared commit wrote (best effort: a file left behind is in no version).
    async fn discard(&self, store: Option<&Arc<ObjectStore>>) {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner()).take();
        let store = written.as_ref().map(|(s, _, _)| s).or(store);
        if let (Some(staging), Some(store)) = (self.staging(), store) {
            let _ = store.delete(&staging.path).await;
        }
        if let Some((store, base, files)) = &written {
            for file in files {
                let _ = store.delete(&file.split('/').fold(base.clone(), |p, part| p.join(part))).await;
            }
        }
    }
}

/// A manifest store that answers reads from the namespace and records the version a commit
/// writes instead of registering it.
#[derive(Debug)]
struct Deferred {
    inner: Arc<dyn ExternalManifestStore>,
    deferral: Arc<Deferral>,
}

#[async_trait::async_trait]
impl ExternalManifestStore for Deferred {
    async fn get(&self, base_uri: &str, version: u64) -> lance::Result<String> {
        self.inner.get(base_uri, version).await
    }

    async fn get_latest_version(&self, base_uri: &str) -> lance::Result<Option<(u64, String)>> {
        self.inner.get_latest_version(base_uri).await
    }

    async fn put(
        &self,
        _base_path: &Path,
        version: u64,
        staging_path: &Path,
        size: u64,
        e_tag: Option<String>,
        _object_store: &dyn object_store::ObjectStore,
        naming_scheme: ManifestNamingScheme,
    ) -> lance::Result<ManifestLocation> {
        *self.deferral.staging.lock().unwrap_or_else(|p| p.into_inner()) = Some(Staging {
            version,
            path: staging_path.clone(),
            size,
            e_tag: e_tag.clone(),
            scheme: naming_scheme,
        });
        Ok(ManifestLocation {
            version,
            path: staging_path.clone(),
            size: Some(size),
            naming_scheme,
            e_tag,
            identity: None,
        })
    }

    async fn put_if_not_exists(&self, _: &str, _: u64, _: &str, _: u64, _: Option<String>) -> lance::Result<()> {
        Err(lance::Error::not_supported("a prepared commit registers no version"))
    }

    async fn put_if_exists(&self, _: &str, _: u64, _: &str, _: u64, _: Option<String>) -> lance::Result<()> {
        Err(lance::Error::not_supported("a prepared commit registers no version"))
    }
}

/// A prepared table of the commit.
struct Prepared {
    uri: String,
    table_id: Vec<String>,
    deferral: Arc<Deferral>,
    snapshot: Snapshot,
    summary: WriteSummary,
    storage_options: std::collections::HashMap<String, String>,
}

/// Commit the staged writes of every table in `tables` together: each table gets one new
/// version (as `committer::commit` would give it) and all of them land, or none does. Returns each
/// table's new version and summary, in order. A table whose statement (`options.statement_id`)
/// is already committed returns that version (`committed = false`) when every table's is;
/// a commit where only some are is refused. A batch the namespace refuses because a table's
/// latest version moved (another committer won) is prepared again on the new latest versions
/// and sent again, as a one-table commit rebases, up to the smallest `max_retries` of the
/// tables (20 by default). Errors: a table not managed by a namespace, tables of two
/// namespaces, or a namespace without batch commits: `LANCE_ERR_NOT_SUPPORTED`; still a moved
/// version after the retries: `LANCE_ERR_CONFLICT`; the checks of `committer::commit`, per table
/// (an overwrite planned before a version that landed since is refused, not rebased). In every
/// one of these cases nothing was committed.
pub fn commit_tables(tables: Vec<TableCommit>) -> Result<Vec<(Snapshot, WriteSummary)>> {
    if tables.is_empty() {
        return Err(HostError::invalid("a multi-table commit needs at least one table"));
    }
    let mut namespace = None;
    let mut seen = HashSet::new();
    let mut managed = Vec::with_capacity(tables.len());
    for (i, t) in tables.iter().enumerate() {
        crate::snapshot::validate_uri(&t.uri)?;
        let Some(m) = crate::snapshot::managed::main_branch(&t.uri)? else {
            return Err(HostError::not_supported(format!(
                "table {i} ('{}') is not a table whose versions a namespace manages (opened through such a catalog in this process, main branch): \
                 several tables commit together only through a namespace that manages their versions; nothing was committed",
                t.uri
            ))
            .with_local_paths(&t.uri));
        };
        let id = m.namespace.namespace_id();
        match &namespace {
            None => namespace = Some((id, m.namespace.clone())),
            Some((first, _)) if *first != id => {
                return Err(HostError::not_supported(format!(
                    "table {i} is managed by another namespace than table 0 ({id} vs {first}): one commit goes through one namespace; nothing was committed"
                )))
            }
            Some(_) => {}
        }
        if !seen.insert(m.table_id.clone()) {
            return Err(HostError::invalid(format!(
                "table {i} ({}) appears twice: give each table once, with all of its staged writes",
                m.table_id.join(".")
            )));
        }
        if t.staged.iter().any(|s| s.kind == StagedKind::Create) {
            return Err(HostError::not_supported(format!(
                "table {i} ('{}'): a create is not part of a multi-table commit (create the table through the catalog first); nothing was committed",
                t.uri
            ))
            .with_local_paths(&t.uri));
        }
        managed.push(m);
    }
    let (_, namespace) = namespace.expect("at least one table");

    // Attempts: a batch the namespace refused because a table's latest version moved (another
    // committer won the race) is prepared again on the new latest versions and sent again, as
    // a one-table commit rebases; up to the smallest `commit_retries` of the tables.
    let retries = tables.iter().map(|t| t.options.max_retries.unwrap_or(DEFAULT_RETRIES)).min().unwrap_or(0);
    let mut attempt = 0;
    loop {
        match attempt_once(&tables, &managed, &namespace)? {
            Attempt::Done(out) => return Ok(out),
            Attempt::Conflict(_) if attempt < retries => {
                attempt += 1;
                // spread racing coordinators apart a little
                let jitter = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos()) % 20) as u64;
                std::thread::sleep(std::time::Duration::from_millis(5 * attempt.min(10) as u64 + jitter));
            }
            Attempt::Conflict(err) => {
                return Err(HostError::new(
                    err.code,
                    format!("{} (after {} attempt(s))", err.message, attempt + 1),
                ))
            }
        }
    }
}

/// Lance's default number of commit retries, used for tables whose options name none.
const DEFAULT_RETRIES: u32 = 20;

/// What one attempt of a multi-table commit came to.
enum Attempt {
    Done(Vec<(Snapshot, WriteSummary)>),
    /// The namespace refused the batch because a table's latest version moved: nothing was
    /// committed, and the prepared manifests were deleted.
    Conflict(HostError),
}

/// Prepare every table and send the batch once.
fn attempt_once(
    tables: &[TableCommit],
    managed: &[crate::snapshot::managed::ManagedTable],
    namespace: &Arc<dyn lance_namespace::LanceNamespace>,
) -> Result<Attempt> {
    // Prepare every table; any refusal discards what was prepared.
    let mut prepared: Vec<Prepared> = Vec::with_capacity(tables.len());
    for (i, (t, m)) in tables.iter().zip(managed).enumerate() {
        let deferral = Arc::new(Deferral::default());
        let storage_options = t.options.storage_options.clone();
        match super::committer::commit_deferred(&t.uri, t.staged.clone(), &t.options, &deferral, m.store.clone()) {
            Ok((snapshot, summary)) => prepared.push(Prepared {
                uri: t.uri.clone(),
                table_id: m.table_id.clone(),
                deferral,
                snapshot,
                summary,
                storage_options,
            }),
            Err(e) => {
                discard(&prepared);
                deferral_discard(&deferral);
                return Err(e.context(&format!("table {i} of the multi-table commit (nothing was committed)")));
            }
        }
    }

    // Statements already committed: all (a repeated commit) or none.
    let found: Vec<usize> = (0..prepared.len()).filter(|&i| !prepared[i].summary.committed).collect();
    if found.len() == prepared.len() {
        return Ok(Attempt::Done(prepared.into_iter().map(|p| (p.snapshot, p.summary)).collect()));
    }
    if let Some(&i) = found.first() {
        discard(&prepared);
        return Err(HostError::invalid(format!(
            "the statement of table {i} ('{}') is already committed (version {}) but others are not: their staged writes were not committed together; nothing was committed",
            prepared[i].uri, prepared[i].summary.version
        ))
        .with_local_paths(&prepared[i].uri));
    }

    let mut operations = Vec::with_capacity(prepared.len());
    for p in &prepared {
        let staging = p
            .deferral
            .staging()
            .ok_or_else(|| HostError::internal(format!("the prepared commit of '{}' wrote no manifest", p.uri)))?;
        operations.push(CommitTableOperation {
            create_table_version: Some(Box::new(CreateTableVersionRequest {
                id: Some(p.table_id.clone()),
                version: staging.version as i64,
                manifest_path: staging.path.to_string(),
                manifest_size: Some(staging.size as i64),
                e_tag: staging.e_tag.clone(),
                naming_scheme: Some(match staging.scheme {
                    ManifestNamingScheme::V1 => "V1".to_string(),
                    ManifestNamingScheme::V2 => "V2".to_string(),
                }),
                ..Default::default()
            })),
            ..Default::default()
        });
    }
    let what = format!("cannot commit {} tables together", prepared.len());
    let answer = session::block_on(namespace.batch_commit_tables(BatchCommitTablesRequest {
        operations,
        ..Default::default()
    }))?;
    let response = match answer {
        Ok(r) => r,
        Err(e) => {
            let mut err = HostError::from_lance(&what, e);
            use LanceErrorCode::*;
            // Lance's REST adapter answers an operation its namespace lacks with an internal
            // error saying so ("batch_commit_tables not implemented"): a definite refusal
            let text = err.message.to_ascii_lowercase();
            if text.contains("not implemented") || text.contains("not supported") {
                err.code = LANCE_ERR_NOT_SUPPORTED;
            }
            let definite = matches!(
                err.code,
                LANCE_ERR_NOT_SUPPORTED | LANCE_ERR_CONFLICT | LANCE_ERR_INVALID_ARGUMENT | LANCE_ERR_NOT_FOUND
            );
            if definite {
                discard(&prepared);
                if err.code == LANCE_ERR_CONFLICT {
                    return Ok(Attempt::Conflict(HostError::new(
                        err.code,
                        format!("{}; a table's latest version moved: nothing was committed (the staged writes stay valid)", err.message),
                    )));
                }
                let advice = if err.code == LANCE_ERR_NOT_SUPPORTED {
                    "the namespace that manages these tables cannot commit several tables together"
                } else {
                    "the namespace refused the commit"
                };
                return Err(HostError::new(err.code, format!("{}; {advice}: nothing was committed", err.message)));
            }
            // The namespace may have registered the batch before its answer was lost: the
            // staging manifests stay (a registered version may be copied from them).
            return Err(HostError::new(
                err.code,
                format!(
                    "{}; the outcome is unknown: commit again with the same statement ids (params' statement_id), which returns the versions if they landed",
                    err.message
                ),
            ));
        }
    };
    if response.results.len() != prepared.len() {
        return Err(HostError::internal(format!(
            "the namespace answered a commit of {} tables with {} results",
            prepared.len(),
            response.results.len()
        )));
    }
    let mut out = Vec::with_capacity(prepared.len());
    for (p, r) in prepared.into_iter().zip(response.results) {
        let staged_version = p.deferral.staging().map_or(0, |s| s.version);
        let version = r
            .create_table_version
            .and_then(|c| c.version)
            .map_or(staged_version, |v| v.version as u64);
        let snapshot = crate::snapshot::open(&p.uri, p.storage_options.clone(), version).map_err(|e| {
            e.context(&format!(
                "the tables were committed together (this one as version {version}), but its new version could not be opened"
            ))
        })?;
        let mut summary = p.summary;
        summary.version = version;
        summary.committed = true;
        out.push((snapshot, summary));
    }
    Ok(Attempt::Done(out))
}

fn deferral_discard(d: &Arc<Deferral>) {
    let _ = session::block_on(d.discard(None));
}

fn discard(prepared: &[Prepared]) {
    for p in prepared {
        let dataset = p.snapshot.dataset.clone();
        let d = p.deferral.clone();
        let _ = session::block_on(async move {
            let store = dataset.object_store(None).await.ok();
            d.discard(store.as_ref()).await
        });
    }
}
