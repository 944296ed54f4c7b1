//! The committer: staged writes of one statement become ONE new version of a table, as a short
//! sequence of steps ([`Committer::run`]): read the table (its latest version and the one the
//! work was planned at), answer a statement committed before, check (a create finds no table,
//! shipped shares are this table's and in no version, the statement is recorded), prepare the
//! transaction and the commit builder (row deletes resolved, the early refusals, the commit
//! pipeline's handler with this commit's checks), hand it to Lance, settle Lance's answer.
//! Every commit of a staged write goes through here: one-call writes, staged commits, one-call
//! and staged row-level changes, and each table of a multi-table commit.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lance::dataset::transaction::{Operation, Transaction, TransactionBuilder};
use lance::dataset::{CommitBuilder, WriteDestination};
use lance_io::object_store::{ObjectStore, ObjectStoreParams};
use lance_table::io::commit::external_manifest::ExternalManifestStore;
use lance_table::io::commit::CommitHandler;
use object_store::path::Path;

use super::multi::Deferral;
use super::staged::{new_fragments, StagedKind, StagedWrite};
use super::{commit_error, WriteOptions, WriteSummary};
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// Commit the staged writes of one statement as ONE new version of the table (all of their
/// changes visible, or none). Every staged write must be of `uri` and of one kind: shares of
/// one create, append or overwrite; shares of one delete (one predicate, disjoint fragments);
/// or one merge-insert. Before Lance sees them, the shares are checked (`verify`): no share
/// twice, every file they add present in this table, agreeing with its footer and part of no
/// version yet. With `options.statement_id`, a statement already committed in any version since
/// it was first planned returns that version (`committed = false`) and writes nothing
/// (`statement`). An overwrite commits only onto the version it was planned at.
pub fn commit(uri: &str, staged: Vec<StagedWrite>, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    commit_planned(uri, staged, options, None, Origin::Shipped)
}

/// Where the staged writes of a commit come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Bytes a host handed over: every share is checked against the table.
    Shipped,
    /// A share this process staged in the same call (a one-process write): its files were just
    /// written by this library, so they are not read again. `absence_checked`: a create whose
    /// stage just found no table (Lance's create refuses an existing one), so the commit does
    /// not look again — the same window pylance's create has.
    InProcess { absence_checked: bool },
}

/// `commit` with the version the work was planned at already open (`planned`, e.g. the handle
/// a one-process write staged on): it is used instead of reading that version's manifest again.
pub(crate) fn commit_planned(
    uri: &str,
    staged: Vec<StagedWrite>,
    options: &WriteOptions,
    planned: Option<&Snapshot>,
    origin: Origin,
) -> Result<(Snapshot, WriteSummary)> {
    commit_inner(uri, staged, options, planned, origin, None)
}

/// `commit` prepared for a multi-table commit (`multi`): every check and the manifest of the
/// new version written, the version not registered — `deferral` records its staging manifest
/// (`store` answers the reads of the managed table's versions). Uses a session of its own, so
/// the unregistered version is cached nowhere.
pub(crate) fn commit_deferred(
    uri: &str,
    staged: Vec<StagedWrite>,
    options: &WriteOptions,
    deferral: &Arc<Deferral>,
    store: Arc<dyn ExternalManifestStore>,
) -> Result<(Snapshot, WriteSummary)> {
    commit_inner(uri, staged, options, None, Origin::Shipped, Some((deferral, store)))
}

fn commit_inner(
    uri: &str,
    staged: Vec<StagedWrite>,
    options: &WriteOptions,
    planned: Option<&Snapshot>,
    origin: Origin,
    defer: Deferred<'_>,
) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    crate::snapshot::validate_uri(uri)?;
    let (kind, planned_at) = shape(uri, &staged, options)?;
    let committer = Committer::new(uri, &staged, options, kind, planned_at, planned, origin, defer)?;
    let operation = combine(kind, &staged)?;
    let secrets = crate::redact::Secrets::from_storage_options(&options.storage_options);
    let outcome = session::block_on(committer.run(&operation))?.map_err(|e| secrets.scrub(e).with_local_paths(uri))?;
    outcome.answer(uri, &staged, &operation, kind, options)
}

/// A prepared multi-table commit's door: its deferral and the store of the managed versions.
type Deferred<'a> = Option<(&'a Arc<Deferral>, Arc<dyn ExternalManifestStore>)>;

/// The kind of the commit and the version its shares were planned at, after checking the shares
/// among themselves: all of `uri`, one kind (row deletes with the statement's appends), a create
/// planned at no version and without preconditions, and one planned version for every kind but
/// appends (which Lance rebases).
fn shape(uri: &str, staged: &[StagedWrite], options: &WriteOptions) -> Result<(StagedKind, u64)> {
    let first = staged.first().ok_or_else(|| HostError::invalid("no staged writes to commit"))?;
    // Row deletes commit with the statement's appended rows (an update's new values, a
    // merge's inserts): a commit holding any row deletes is a row-level change.
    let row_change = staged.iter().any(|s| s.kind == StagedKind::RowDeletes);
    let kind = if row_change { StagedKind::RowDeletes } else { first.kind };
    for (i, s) in staged.iter().enumerate() {
        if s.uri.trim_end_matches('/') != uri.trim_end_matches('/') {
            return Err(HostError::invalid(format!(
                "staged write {i} is of table '{}', not of '{uri}'",
                s.uri
            )));
        }
        if row_change && s.kind == StagedKind::Append {
            continue;
        }
        if s.kind != kind {
            if row_change {
                return Err(HostError::invalid(format!(
                    "staged write {i} is {}: a commit of row deletes takes row deletes and appends planned at the same version",
                    crate::error::with_article(s.kind.name())
                )));
            }
            return Err(HostError::invalid(format!(
                "staged write {i} is {}, staged write 0 {}: one commit takes one kind of write",
                crate::error::with_article(s.kind.name()),
                crate::error::with_article(kind.name())
            )));
        }
        if s.kind == StagedKind::Create && s.planned_at != 0 {
            return Err(HostError::invalid(format!(
                "staged write {i} is a create planned at version {}: a create is planned at no version",
                s.planned_at
            )));
        }
    }
    let planned_at = staged.iter().map(|s| s.planned_at).min().unwrap_or(0);
    if kind == StagedKind::Create && !options.preconditions.is_empty() {
        return Err(HostError::invalid(
            "a create has no version to require (expected_version, required_config apply to commits on an existing table)",
        ));
    }
    if kind != StagedKind::Append {
        if let Some(other) = staged.iter().find(|s| s.planned_at != planned_at) {
            return Err(HostError::invalid(format!(
                "the staged {}s were planned at versions {planned_at} and {}: plan them at one version",
                kind.name(),
                other.planned_at
            )));
        }
    }
    Ok((kind, planned_at))
}

/// The table as a commit finds it.
struct Table {
    /// Its latest version (read when the shares were shipped or the commit has a statement id;
    /// None also when the table does not exist).
    latest: Option<Arc<lance::Dataset>>,
    /// The version the work was planned at (None: a create).
    planned: Option<Arc<lance::Dataset>>,
    /// Its root, for the share checks and the statement record (a plain write needs neither).
    root: Option<(Arc<ObjectStore>, Path)>,
}

/// Whether the statement was committed before.
enum Lookup {
    Committed(Outcome),
    /// Not yet: the version it was first planned at (with a statement id).
    New(Option<u64>),
}

/// What the commit is handed to Lance with.
struct Prepared<'a> {
    transaction: Transaction,
    builder: CommitBuilder<'a>,
    /// The statement-id check, which tells when another coordinator landed the statement.
    guard: Option<Arc<super::statement::Guard>>,
    /// The commit pipeline's handler, which tells which check refused.
    pipeline: Option<Arc<crate::snapshot::pipeline::Pipeline>>,
}

/// One commit, as a sequence of steps ([`Committer::run`]).
struct Committer<'a> {
    uri: &'a str,
    staged: &'a [StagedWrite],
    options: &'a WriteOptions,
    kind: StagedKind,
    planned_at: u64,
    /// The shares came as bytes from a host (each is checked against the table).
    shipped: bool,
    /// A create whose stage just found no table.
    absence_checked: bool,
    /// The planned version, already open in this process.
    held: Option<Arc<lance::Dataset>>,
    lance_session: Arc<lance::session::Session>,
    /// The handler every commit handler of this commit wraps: a prepared commit's, else the table's.
    base_handler: Option<Arc<dyn CommitHandler>>,
    deferral: Option<&'a Arc<Deferral>>,
    store_params: ObjectStoreParams,
    /// The start of every error message.
    what: String,
}

impl<'a> Committer<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        uri: &'a str,
        staged: &'a [StagedWrite],
        options: &'a WriteOptions,
        kind: StagedKind,
        planned_at: u64,
        planned: Option<&Snapshot>,
        origin: Origin,
        defer: Deferred<'a>,
    ) -> Result<Self> {
        let lance_session = match defer {
            // a version that may never be registered must not be cached for later reads
            Some(_) => Arc::new(lance::session::Session::default()),
            None => session::global()?.lance.clone(),
        };
        let held = planned
            .filter(|p| p.version() == planned_at && p.uri().trim_end_matches('/') == uri.trim_end_matches('/'))
            .map(|p| p.dataset.clone());
        Ok(Committer {
            uri,
            staged,
            options,
            kind,
            planned_at,
            shipped: origin == Origin::Shipped,
            absence_checked: matches!(origin, Origin::InProcess { absence_checked: true }),
            held,
            lance_session,
            base_handler: defer.as_ref().map(|(d, store)| d.handler(store.clone())),
            deferral: defer.map(|(d, _)| d),
            store_params: options.store_params(uri),
            what: format!("cannot commit {} staged write(s) to table '{uri}'", staged.len()),
        })
    }

    /// The commit: read the table, answer a statement committed before, check, prepare, hand
    /// the transaction to Lance through the commit pipeline, settle.
    async fn run(&self, operation: &Operation) -> Result<Outcome> {
        let table = self.open().await?;
        let first_planned = match self.find_statement(&table).await? {
            Lookup::Committed(found) => return Ok(found),
            Lookup::New(since) => since,
        };
        self.check(&table, first_planned).await?;
        // files the commit writes itself (row deletes' deletion files), deleted if it does not land
        let mut written = Vec::new();
        let prepared = match self.prepare(&table, operation, &mut written).await {
            Ok(p) => p,
            Err(e) => {
                forget(table.root.as_ref(), &written).await;
                return Err(e);
            }
        };
        let result = prepared.builder.execute(prepared.transaction).await;
        self.settle(result, &table, &written, prepared.guard, prepared.pipeline).await
    }

    /// The table at `version` (None: its latest), through the namespace when one manages it.
    async fn load(&self, version: Option<u64>) -> lance::Result<lance::Dataset> {
        let b = crate::snapshot::managed::builder(self.uri)?.with_session(self.lance_session.clone());
        let mut b = crate::snapshot::credentials::with_options(b, self.uri, self.options.storage_options.clone());
        if let Some(v) = version {
            b = b.with_version(v);
        }
        b.load().await
    }

    fn needs_latest(&self) -> bool {
        self.shipped || self.options.statement_id.is_some()
    }

    /// The table as it is now (a shipped commit, or one with a statement id, needs its latest
    /// version) and as the work was planned.
    async fn open(&self) -> Result<Table> {
        let what = &self.what;
        let latest = if self.needs_latest() {
            let latest = match self.load(None).await {
                Ok(ds) => Some(Arc::new(ds)),
                Err(lance::Error::DatasetNotFound { .. }) | Err(lance::Error::NotFound { .. }) => None,
                Err(e) => return Err(HostError::from_lance(what, e)),
            };
            let newest = latest.as_ref().map_or(0, |d| d.version().version);
            if self.planned_at > newest {
                return Err(HostError::invalid(format!(
                    "the staged writes were planned at version {}, but the table's latest version is {newest}{}",
                    self.planned_at,
                    if latest.is_none() { " (it does not exist)" } else { "" }
                )));
            }
            latest
        } else {
            None
        };
        let planned = match (&self.held, self.planned_at, &latest) {
            (Some(ds), _, _) => Some(ds.clone()),
            (None, 0, _) => None,
            (None, v, Some(l)) if l.version().version == v => Some(l.clone()),
            (None, v, Some(l)) => Some(Arc::new(l.checkout_version(v).await.map_err(|e| HostError::from_lance(what, e))?)),
            (None, v, None) => Some(Arc::new(self.load(Some(v)).await.map_err(|e| HostError::from_lance(what, e))?)),
        };
        let root = if self.needs_latest() {
            Some(
                ObjectStore::from_uri_and_params(self.lance_session.store_registry(), self.uri, &self.store_params)
                    .await
                    .map_err(|e| HostError::from_lance(what, e))?,
            )
        } else {
            None
        };
        Ok(Table { latest, planned, root })
    }

    /// Exactly once: the statement in any version since it was first planned.
    async fn find_statement(&self, table: &Table) -> Result<Lookup> {
        let (Some(id), Some(latest), Some((store, base))) = (&self.options.statement_id, &table.latest, &table.root) else {
            return Ok(Lookup::New(None));
        };
        let since = super::statement::first_planned(store, base, id, self.planned_at)
            .await
            .map_err(|e| HostError::from_lance(&format!("cannot read the record of statement '{id}'"), e))?;
        if let Some((version, txn)) = super::statement::find(latest, since, id).await? {
            return Ok(Lookup::Committed(Outcome::Found { latest: latest.clone(), version, txn }));
        }
        Ok(Lookup::New(Some(since)))
    }

    /// The checks before anything is written: a create finds no table, shipped shares are of
    /// this table and in no version yet, and the statement is recorded (before the commit: a
    /// coordinator killed after it leaves the record in place).
    async fn check(&self, table: &Table, first_planned: Option<u64>) -> Result<()> {
        let need_latest = self.needs_latest();
        if self.kind == StagedKind::Create
            && ((need_latest && table.latest.is_some()) || (!need_latest && !self.absence_checked))
        {
            check_absent(self.uri, &self.lance_session, &self.options.storage_options)
                .await
                .map_err(|e| HostError::from_lance(&self.what, e))?;
        }
        if let (true, Some((store, base))) = (self.shipped, &table.root) {
            let versions = super::verify::Versions {
                planned: table.planned.clone(),
                latest: table.latest.clone(),
            };
            super::verify::check(self.kind, self.staged, &versions, store, base).await?;
        }
        if let (Some(id), Some(since), Some((store, base))) = (&self.options.statement_id, first_planned, &table.root) {
            super::statement::record(store, base, id, since)
                .await
                .map_err(|e| HostError::from_lance(&format!("cannot record statement '{id}'"), e))?;
        }
        Ok(())
    }

    /// The transaction and the commit builder: row deletes become deletion files (recorded in
    /// `written`), the early and clear refusals (a stale expected version, an overwrite of a
    /// table that moved on), and the commit pipeline's handler with this commit's checks.
    async fn prepare(&self, table: &Table, operation: &Operation, written: &mut Vec<String>) -> Result<Prepared<'a>> {
        let mut affected = None;
        let operation = if self.kind == StagedKind::RowDeletes {
            let planned = table
                .planned
                .as_ref()
                .ok_or_else(|| HostError::invalid("row deletes must be planned at a version of the table"))?;
            let r = super::changes_by_address::resolve(planned, self.staged, new_fragments(operation).to_vec(), written).await?;
            affected = Some(r.affected);
            r.operation
        } else {
            operation.clone()
        };
        let transaction = TransactionBuilder::new(self.planned_at, operation)
            .transaction_properties(self.options.transaction_properties())
            .build();
        self.refuse_early(table).await?;

        let dest = match &table.planned {
            Some(ds) => WriteDestination::Dataset(ds.clone()),
            None => WriteDestination::Uri(self.uri),
        };
        let mut builder = CommitBuilder::new(dest)
            .with_session(self.lance_session.clone())
            .with_store_params(self.store_params.clone());
        if let Some(n) = self.options.max_retries {
            builder = builder.with_max_retries(n);
        }
        if self.kind == StagedKind::Overwrite && table.planned.is_some() {
            // strict: Lance writes exactly the version after the planned one or fails
            builder = builder.with_max_retries(0);
        }
        if let Some(t) = self.options.retry_timeout {
            builder = builder.with_retry_timeout(t);
        }
        if self.options.stable_row_ids {
            // a new table's setting (an existing table keeps its own)
            builder = builder.use_stable_row_ids(true);
        }
        if let Some(rows) = affected {
            // Lance rebases over concurrent changes of other rows and refuses changes of these
            builder = builder.with_affected_rows(rows);
        }
        // The preconditions, checked on the version each attempt would land on; outside them,
        // a second coordinator of the same statement landing a version while this one commits
        // (a statement found committed wins over a precondition).
        let mut checks: Vec<Arc<dyn crate::snapshot::pipeline::Check>> = Vec::new();
        if !self.options.preconditions.is_empty() {
            checks.push(Arc::new(super::preconditions::PreconditionCheck(self.options.preconditions.clone())));
        }
        let mut guard = None;
        if let (Some(id), Some(latest)) = (&self.options.statement_id, &table.latest) {
            if !self.uri.starts_with("s3+ddb") {
                let g = Arc::new(super::statement::Guard::new(latest.clone(), id));
                checks.push(g.clone());
                guard = Some(g);
            }
        }
        let mut pipeline = None;
        if !checks.is_empty() {
            let inner = super::preconditions::table_handler(self.uri, &self.store_params, self.base_handler.clone()).await?;
            let p = Arc::new(checks.into_iter().fold(crate::snapshot::pipeline::Pipeline::new(inner), |p, c| p.with_check(c)));
            builder = builder.with_commit_handler(p.clone());
            pipeline = Some(p);
        } else {
            // a managed table commits through its namespace whatever handle the work was planned on
            let handler = match &self.base_handler {
                Some(h) => Some(h.clone()),
                None => crate::snapshot::managed::handler(self.uri)?,
            };
            if let Some(h) = handler {
                builder = builder.with_commit_handler(h);
            }
        }
        Ok(Prepared { transaction, builder, guard, pipeline })
    }

    /// The early, clear refusals; the commit pipeline makes the same checks atomic.
    async fn refuse_early(&self, table: &Table) -> Result<()> {
        if let Some(refusal) = table.latest.as_ref().and_then(|l| self.options.preconditions.version_refusal(l.version().version)) {
            return Err(refusal);
        }
        if let (StagedKind::Overwrite, Some(planned)) = (self.kind, &table.planned) {
            // Lance lets an overwrite replace whatever was committed since it was planned;
            // an engine's INSERT OVERWRITE must not silently drop a concurrent commit. The
            // commit is strict (no retries), which closes the window after this check.
            let latest = match &table.latest {
                Some(l) => l.version().version, // read for this commit a moment ago
                None => planned.latest_version_id().await.map_err(|e| HostError::from_lance(&self.what, e))?,
            };
            if latest != self.planned_at {
                return Err(overwrite_conflict(self.planned_at, latest));
            }
        }
        Ok(())
    }

    /// What Lance's answer comes to: files written for a commit that did not land are deleted
    /// (a prepared multi-table commit keeps them until it lands); a statement another
    /// coordinator landed meanwhile is that version; a check's refusal is reported as itself.
    async fn settle(
        &self,
        result: lance::Result<lance::Dataset>,
        table: &Table,
        written: &[String],
        guard: Option<Arc<super::statement::Guard>>,
        pipeline: Option<Arc<crate::snapshot::pipeline::Pipeline>>,
    ) -> Result<Outcome> {
        if result.is_err() {
            forget(table.root.as_ref(), written).await;
        } else if let Some(d) = self.deferral {
            // deleted again if the multi-table commit does not land
            d.keep_written(table.root.as_ref(), written);
        }
        let found = guard.as_ref().and_then(|g| g.found());
        if let (Err(_), None, Some(refusal)) = (&result, found, pipeline.as_ref().and_then(|p| p.stopped())) {
            return Err(refusal);
        }
        if let (Err(_), Some(version), Some(latest)) = (&result, found, &table.latest) {
            let txn = latest
                .read_transaction_by_version(version)
                .await
                .map_err(|e| HostError::from_lance(&self.what, e))?
                .ok_or_else(|| HostError::internal(format!("version {version} holds the statement but has no transaction")))?;
            return Ok(Outcome::Found { latest: latest.clone(), version, txn });
        }
        let committed = result.map_err(|e| {
            let err = commit_error(&self.what, self.planned_at, e);
            if self.kind == StagedKind::Overwrite && err.code == crate::error::LanceErrorCode::LANCE_ERR_CONFLICT {
                HostError::new(err.code, format!("{} (an overwrite commits only onto the version it was planned at)", err.message))
            } else {
                err
            }
        })?;
        Ok(Outcome::Committed(committed))
    }
}

impl Outcome {
    /// The version and the summary the caller gets.
    fn answer(
        self,
        uri: &str,
        staged: &[StagedWrite],
        operation: &Operation,
        kind: StagedKind,
        options: &WriteOptions,
    ) -> Result<(Snapshot, WriteSummary)> {
        match self {
            Outcome::Committed(dataset) => {
                let mut summary = WriteSummary::of_fragments(new_fragments(operation));
                for s in staged {
                    summary.rows_deleted += s.counts.deleted;
                    summary.rows_updated += s.counts.updated;
                    summary.rows_inserted += s.counts.inserted;
                }
                if kind == StagedKind::MergeInsert {
                    summary.rows_written = summary.rows_inserted + summary.rows_updated;
                }
                if kind == StagedKind::RowDeletes {
                    summary.rows_inserted = summary.rows_written;
                }
                summary.version = dataset.version().version;
                summary.committed = true;
                Ok((
                    Snapshot {
                        dataset: Arc::new(dataset),
                        storage_options: options.storage_options.clone(),
                    },
                    summary,
                ))
            }
            Outcome::Found { latest, version, txn } => {
                let ds = session::block_on(latest.checkout_version(version))?
                    .map_err(|e| HostError::from_lance(&format!("cannot open version {version} of table '{uri}'"), e))?;
                let mut summary = WriteSummary::of_fragments(new_fragments(&txn.operation));
                summary.version = version;
                summary.committed = false;
                Ok((
                    Snapshot {
                        dataset: Arc::new(ds),
                        storage_options: options.storage_options.clone(),
                    },
                    summary,
                ))
            }
        }
    }
}

/// Delete files a failed commit wrote (best effort: a file left behind is in no version, and
/// cleanup removes it).
async fn forget(root: Option<&(Arc<ObjectStore>, object_store::path::Path)>, files: &[String]) {
    let Some((store, base)) = root else { return };
    for file in files {
        let _ = store.delete(&file.split('/').fold(base.clone(), |p, part| p.join(part))).await;
    }
}

/// What a commit came to: a new version, or the version its statement was already committed in.
enum Outcome {
    Committed(lance::Dataset),
    Found {
        latest: Arc<lance::Dataset>,
        version: u64,
        txn: Transaction,
    },
}

fn overwrite_conflict(planned_at: u64, latest: u64) -> HostError {
    HostError::new(
        crate::error::LanceErrorCode::LANCE_ERR_CONFLICT,
        format!(
            "version {latest} was committed since the overwrite was planned at version {planned_at}; \
             committing it would drop that version's changes (plan it again at the table's latest version)"
        ),
    )
}

/// The one operation the staged writes of one statement (all of `kind`) make together.
fn combine(kind: StagedKind, staged: &[StagedWrite]) -> Result<Operation> {
    let all_new = || staged.iter().flat_map(|s| s.fragments().iter().cloned()).collect::<Vec<_>>();
    Ok(match kind {
        StagedKind::Append => Operation::Append { fragments: all_new() },
        StagedKind::Create | StagedKind::Overwrite => {
            let Operation::Overwrite { schema, config_upsert_values, initial_bases, .. } = &staged[0].transaction.operation
            else {
                return Err(HostError::internal("a staged overwrite without an overwrite transaction"));
            };
            for (i, s) in staged.iter().enumerate().skip(1) {
                if let Operation::Overwrite { schema: other, .. } = &s.transaction.operation {
                    if other != schema {
                        return Err(HostError::invalid(format!(
                            "staged write {i} has another schema than staged write 0: {} vs {}",
                            arrow_schema::Schema::from(other),
                            arrow_schema::Schema::from(schema)
                        )));
                    }
                }
            }
            Operation::Overwrite {
                schema: schema.clone(),
                fragments: all_new(),
                config_upsert_values: config_upsert_values.clone(),
                initial_bases: initial_bases.clone(),
            }
        }
        StagedKind::Delete => {
            let mut updated = Vec::new();
            let mut removed = Vec::new();
            let mut seen = HashSet::new();
            let mut predicate = None;
            for (i, s) in staged.iter().enumerate() {
                let Operation::Delete { updated_fragments, deleted_fragment_ids, predicate: p } = &s.transaction.operation
                else {
                    return Err(HostError::internal("a staged delete without a delete transaction"));
                };
                match &predicate {
                    None => predicate = Some(p.clone()),
                    Some(first) if first != p => {
                        return Err(HostError::invalid(format!(
                            "staged delete {i} deletes where {p}, staged delete 0 where {first}: one commit takes one delete statement"
                        )))
                    }
                    Some(_) => {}
                }
                let ids = updated_fragments.iter().map(|f| f.id).chain(deleted_fragment_ids.iter().copied());
                for id in ids {
                    if !seen.insert(id) {
                        return Err(HostError::invalid(format!(
                            "fragment {id} is in two staged deletes: give every worker its own fragments (one split each)"
                        )));
                    }
                }
                updated.extend(updated_fragments.iter().cloned());
                removed.extend(deleted_fragment_ids.iter().copied());
            }
            Operation::Delete {
                updated_fragments: updated,
                deleted_fragment_ids: removed,
                predicate: predicate.unwrap_or_default(),
            }
        }
        // the appended rows; `changes_by_address::resolve` adds the deletions
        StagedKind::RowDeletes => Operation::Append { fragments: all_new() },
        StagedKind::MergeInsert => {
            if staged.len() != 1 {
                return Err(HostError::invalid(format!(
                    "{} staged merge-inserts: a merge-insert is computed over the whole table and committed alone (one per commit)",
                    staged.len()
                )));
            }
            staged[0].transaction.operation.clone()
        }
    })
}

/// A create must not replace a table that exists (Lance's overwrite would).
async fn check_absent(
    uri: &str,
    lance_session: &Arc<lance::session::Session>,
    storage_options: &HashMap<String, String>,
) -> lance::Result<()> {
    let builder = lance::dataset::builder::DatasetBuilder::from_uri(uri).with_session(lance_session.clone());
    let opened = crate::snapshot::credentials::with_options(builder, uri, storage_options.clone())
        .load()
        .await;
    match opened {
        Ok(ds) => Err(lance::Error::dataset_already_exists(format!(
            "table '{uri}' already exists (at version {}): a create makes a new table; use append or overwrite",
            ds.version().version
        ))),
        Err(lance::Error::DatasetNotFound { .. }) | Err(lance::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}
