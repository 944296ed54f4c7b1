//! The distributed write protocol: workers *stage* (write data files, deletion files or a
//! merge-insert's rewritten rows without committing) and ship what they wrote as bytes; one
//! coordinator *commits* any number of staged writes of one statement as one new version, or
//! *aborts* them (deleting their files).
//!
//! Staged-write bytes ([`crate::bytes`] envelope, magic "LHSW"), format 2, little endian:
//! kind u8 (0 create, 1 append, 2 overwrite, 3 delete, 4 merge-insert, 5 row deletes) |
//! planned-at version u64 | rows deleted u64 | rows updated u64 | rows inserted u64 | uri: u32
//! len + bytes | transaction: u32 len + protobuf bytes (Lance's own `Transaction` message: the
//! fragments, data and deletion files written, no row data). Format 3 (since 0.13, written for
//! row deletes only, so older libraries keep reading every other share) appends the row
//! addresses: u32 byte length + u64 each, ascending. Format 1 (0.6: kinds 0–2, no counts) is
//! still read. Storage options (credentials) are never part of it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lance::dataset::transaction::{Operation, Transaction, TransactionBuilder};
use lance::dataset::{CommitBuilder, InsertBuilder, WriteDestination};
use lance_io::object_store::ObjectStore;
use lance_table::format::{pb, Fragment};
use prost::Message;

use super::source::{check_destination, Batches};
use super::{commit_error, WriteMode, WriteOptions, WriteSummary};
use crate::bytes::{self, Reader, Writer};
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

const MAGIC: &[u8; 4] = b"LHSW";
/// Current staged-write format (of every kind but row deletes).
pub const FORMAT: u8 = 2;
/// The format of row deletes (format 2 and the row addresses).
const FORMAT_ROW_DELETES: u8 = 3;
/// Formats this library reads.
const READS: &[u8] = &[1, 2, 3];

/// What a staged write does when committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedKind {
    /// A share of a new table's rows.
    Create,
    /// A share of appended rows.
    Append,
    /// A share of the rows that replace the table's.
    Overwrite,
    /// The rows of a share of the table's fragments deleted by one predicate.
    Delete,
    /// A whole merge-insert (Lance computes one over the whole table; it is not split).
    MergeInsert,
    /// Rows deleted by address (`row_changes`); committed with the statement's appended shares.
    RowDeletes,
}

impl StagedKind {
    pub fn of_mode(mode: WriteMode) -> Self {
        match mode {
            WriteMode::Create => StagedKind::Create,
            WriteMode::Append => StagedKind::Append,
            WriteMode::Overwrite => StagedKind::Overwrite,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StagedKind::Create => "create",
            StagedKind::Append => "append",
            StagedKind::Overwrite => "overwrite",
            StagedKind::Delete => "delete",
            StagedKind::MergeInsert => "merge-insert",
            StagedKind::RowDeletes => "row delete",
        }
    }

    fn code(self) -> u8 {
        match self {
            StagedKind::Create => 0,
            StagedKind::Append => 1,
            StagedKind::Overwrite => 2,
            StagedKind::Delete => 3,
            StagedKind::MergeInsert => 4,
            StagedKind::RowDeletes => 5,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => StagedKind::Create,
            1 => StagedKind::Append,
            2 => StagedKind::Overwrite,
            3 => StagedKind::Delete,
            4 => StagedKind::MergeInsert,
            5 => StagedKind::RowDeletes,
            _ => return None,
        })
    }
}

/// Rows a staged row-level change deleted, updated and inserted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowCounts {
    pub deleted: u64,
    pub updated: u64,
    pub inserted: u64,
}

/// What one worker wrote and has not committed.
#[derive(Debug, Clone)]
pub struct StagedWrite {
    pub uri: String,
    pub kind: StagedKind,
    /// The version the write was planned at (0 for a create).
    pub planned_at: u64,
    pub counts: RowCounts,
    pub transaction: Transaction,
    /// The rows a row-deletes share deletes (`_rowaddr`, ascending); empty for other kinds.
    pub row_addresses: Vec<u64>,
}

/// Fragments a transaction adds (new data files).
fn new_fragments(op: &Operation) -> &[Fragment] {
    super::verify::parts(op).0
}

/// Fragments a transaction changes in place (new deletion files, new column files).
fn updated_fragments(op: &Operation) -> &[Fragment] {
    super::verify::parts(op).1
}

impl StagedWrite {
    fn fragments(&self) -> &[Fragment] {
        new_fragments(&self.transaction.operation)
    }

    /// Rows, fragments, files and bytes it wrote, and the rows it deleted, updated and
    /// inserted (nothing committed: version 0).
    pub fn summary(&self) -> WriteSummary {
        let mut s = WriteSummary::of_fragments(self.fragments());
        s.rows_deleted = self.counts.deleted;
        s.rows_updated = self.counts.updated;
        s.rows_inserted = self.counts.inserted;
        if self.kind == StagedKind::MergeInsert {
            s.rows_written = self.counts.inserted + self.counts.updated;
        }
        s
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let txn = pb::Transaction::try_from(&self.transaction)
            .map_err(|e| HostError::internal(format!("cannot encode the staged transaction: {e}")))?
            .encode_to_vec();
        let mut w = Writer::default();
        w.u8(self.kind.code())
            .u64(self.planned_at)
            .u64(self.counts.deleted)
            .u64(self.counts.updated)
            .u64(self.counts.inserted)
            .blob(self.uri.as_bytes())
            .blob(&txn);
        if self.kind == StagedKind::RowDeletes {
            let addresses: Vec<u8> = self.row_addresses.iter().flat_map(|a| a.to_le_bytes()).collect();
            w.blob(&addresses);
            return Ok(bytes::seal(MAGIC, FORMAT_ROW_DELETES, &w.0));
        }
        Ok(bytes::seal(MAGIC, FORMAT, &w.0))
    }

    /// Damaged or truncated bytes are LANCE_ERR_CORRUPT; another format (or a kind this
    /// library does not know) is NOT_SUPPORTED.
    pub fn from_bytes(b: &[u8]) -> Result<StagedWrite> {
        const KIND: &str = "staged-write";
        let corrupt = |what: &str| bytes::corrupt(KIND, what);
        let (format, body) = bytes::open(b, MAGIC, READS, KIND)?;
        let mut r = Reader::new(body, 0, usize::MAX);
        let code = r.u8().ok_or_else(|| corrupt("truncated"))?;
        let kind = match StagedKind::from_code(code) {
            Some(k) if format >= 2 || code <= 2 => k,
            _ => {
                return Err(HostError::not_supported(format!(
                    "staged write of kind {code} is not supported by this library (a newer lance-host made it)"
                )))
            }
        };
        let planned_at = r.u64().ok_or_else(|| corrupt("truncated"))?;
        let counts = if format >= 2 {
            let mut next = || r.u64().ok_or_else(|| corrupt("truncated"));
            RowCounts {
                deleted: next()?,
                updated: next()?,
                inserted: next()?,
            }
        } else {
            RowCounts::default()
        };
        let uri = r.blob().ok_or_else(|| corrupt("truncated"))?;
        let uri = std::str::from_utf8(uri).map_err(|_| corrupt("table uri is not UTF-8"))?.to_string();
        let txn = r.blob().ok_or_else(|| corrupt("truncated"))?;
        let mut row_addresses = Vec::new();
        if kind == StagedKind::RowDeletes {
            if format < FORMAT_ROW_DELETES {
                return Err(corrupt("row deletes without row addresses"));
            }
            let raw = r.blob().ok_or_else(|| corrupt("truncated"))?;
            if raw.len() % 8 != 0 {
                return Err(corrupt("row addresses are not whole u64 values"));
            }
            row_addresses = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect();
            if row_addresses.windows(2).any(|w| w[0] >= w[1]) {
                return Err(corrupt("row addresses are not ascending"));
            }
            if row_addresses.len() as u64 != counts.deleted {
                return Err(corrupt("the number of row addresses is not the rows deleted"));
            }
        } else if format >= FORMAT_ROW_DELETES {
            return Err(corrupt(&format!("a staged {} in the row-deletes format", kind.name())));
        }
        if r.remaining() != 0 {
            return Err(corrupt("trailing bytes"));
        }
        let decoded = pb::Transaction::decode(txn).map_err(|e| corrupt(&format!("bad transaction: {e}")))?;
        let transaction = Transaction::try_from(decoded).map_err(|e| corrupt(&format!("bad transaction: {e}")))?;
        let fits = match kind {
            StagedKind::Create | StagedKind::Overwrite => matches!(transaction.operation, Operation::Overwrite { .. }),
            StagedKind::Append => matches!(transaction.operation, Operation::Append { .. }),
            StagedKind::Delete => matches!(transaction.operation, Operation::Delete { .. }),
            StagedKind::MergeInsert => matches!(transaction.operation, Operation::Update { .. }),
            StagedKind::RowDeletes => matches!(
                &transaction.operation,
                Operation::Delete { updated_fragments, deleted_fragment_ids, .. } if updated_fragments.is_empty() && deleted_fragment_ids.is_empty()
            ),
        };
        if !fits {
            return Err(corrupt(&format!(
                "a staged {} holds {} transaction",
                kind.name(),
                crate::error::with_article(&transaction.operation.to_string())
            )));
        }
        Ok(StagedWrite {
            uri,
            kind,
            planned_at,
            counts,
            transaction,
            row_addresses,
        })
    }
}

/// Write `data` as one worker's share of a statement on the table at `uri` without committing.
/// Appends and overwrites are planned at `at` (the coordinator's pinned version, e.g. opened
/// from its snapshot token); a create has no `at`. The files are in the table's data directory
/// but belong to no version until `commit`.
pub fn stage(uri: &str, at: Option<&Snapshot>, data: Batches, options: &WriteOptions) -> Result<StagedWrite> {
    crate::metrics::op(crate::metrics::Op::Write);
    check_destination(uri, at, options.mode)?;
    if options.mode == WriteMode::Append && at.is_none() {
        return Err(HostError::invalid(
            "a staged append needs the dataset handle it is planned at (the coordinator's pinned version)",
        ));
    }
    let mut plain = options.clone();
    plain.statement_id = None; // the commit carries the statement, not the workers' shares
    plain.commit_message = None;
    plain.properties.clear();
    plain.preconditions = Default::default(); // they apply to the commit
    let params = plain.lance_params()?;
    let secrets = crate::redact::Secrets::from_storage_options(&options.storage_options);
    let dest = match at {
        Some(s) => WriteDestination::Dataset(s.dataset.clone()),
        None => WriteDestination::Uri(uri),
    };
    let what = format!("cannot stage {} of table '{uri}'", crate::error::with_article(options.mode.name()));
    super::encoding::check(&data.schema()).map_err(|e| e.context(&what))?;
    let (data, failure) = super::source::watch(data);
    let source = super::source::into_write_source(data, &failure)?;
    let transaction = session::block_on(async {
        InsertBuilder::new(dest).with_params(&params).execute_uncommitted_stream(source).await
    })?
    .map_err(|e| failure.explain(&what, secrets.scrub(HostError::from_lance(&what, e)).with_local_paths(uri)))?;
    Ok(StagedWrite {
        uri: at.map(|s| s.uri().to_string()).unwrap_or_else(|| uri.to_string()),
        kind: StagedKind::of_mode(options.mode),
        planned_at: at.map(Snapshot::version).unwrap_or(0),
        counts: RowCounts::default(),
        transaction,
        row_addresses: Vec::new(),
    })
}

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
    deferral: &Arc<super::multi::Deferral>,
    store: Arc<dyn lance_table::io::commit::external_manifest::ExternalManifestStore>,
) -> Result<(Snapshot, WriteSummary)> {
    commit_inner(uri, staged, options, None, Origin::Shipped, Some((deferral, store)))
}

fn commit_inner(
    uri: &str,
    staged: Vec<StagedWrite>,
    options: &WriteOptions,
    planned: Option<&Snapshot>,
    origin: Origin,
    defer: Option<(&Arc<super::multi::Deferral>, Arc<dyn lance_table::io::commit::external_manifest::ExternalManifestStore>)>,
) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    crate::snapshot::validate_uri(uri)?;
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
    let secrets = crate::redact::Secrets::from_storage_options(&options.storage_options);
    let lance_session = match defer {
        // a version that may never be registered must not be cached for later reads
        Some(_) => Arc::new(lance::session::Session::default()),
        None => session::global()?.lance.clone(),
    };
    // the handler every commit handler of this commit wraps: a prepared commit's, else the table's
    let base_handler = defer.as_ref().map(|(d, store)| d.handler(store.clone()));
    let store_params = options.store_params();
    let what = format!("cannot commit {} staged write(s) to table '{uri}'", staged.len());
    let shipped = origin == Origin::Shipped;
    let absence_checked = matches!(origin, Origin::InProcess { absence_checked: true });

    let held = planned
        .filter(|p| p.version() == planned_at && p.uri().trim_end_matches('/') == uri.trim_end_matches('/'))
        .map(|p| p.dataset.clone());
    let statement_id = options.statement_id.clone();
    let operation = combine(kind, &staged)?;
    let outcome = session::block_on(async {
        // The table as it is now (a shipped commit, or one with a statement id, needs its latest
        // version) and as the work was planned.
        let open = |version: Option<u64>| {
            let session = lance_session.clone();
            let opts = options.storage_options.clone();
            async move {
                // a table a namespace manages resolves its versions through the namespace
                let mut b = crate::catalog::managed::builder(uri)?.with_session(session).with_storage_options(opts);
                if let Some(v) = version {
                    b = b.with_version(v);
                }
                b.load().await
            }
        };
        let need_latest = shipped || statement_id.is_some();
        let latest = if need_latest {
            match open(None).await {
                Ok(ds) => Some(Arc::new(ds)),
                Err(lance::Error::DatasetNotFound { .. }) | Err(lance::Error::NotFound { .. }) => None,
                Err(e) => return Err(HostError::from_lance(&what, e)),
            }
        } else {
            None
        };
        if need_latest {
            let newest = latest.as_ref().map_or(0, |d| d.version().version);
            if planned_at > newest {
                return Err(HostError::invalid(format!(
                    "the staged writes were planned at version {planned_at}, but the table's latest version is {newest}{}",
                    if latest.is_none() { " (it does not exist)" } else { "" }
                )));
            }
        }
        let planned_ds = match (&held, planned_at, &latest) {
            (Some(ds), _, _) => Some(ds.clone()),
            (None, 0, _) => None,
            (None, v, Some(l)) if l.version().version == v => Some(l.clone()),
            (None, v, Some(l)) => Some(Arc::new(l.checkout_version(v).await.map_err(|e| HostError::from_lance(&what, e))?)),
            (None, v, None) => Some(Arc::new(open(Some(v)).await.map_err(|e| HostError::from_lance(&what, e))?)),
        };
        // the table's root, for the checks and the statement record (a plain write needs neither)
        let root = if need_latest {
            Some(
                ObjectStore::from_uri_and_params(lance_session.store_registry(), uri, &store_params)
                    .await
                    .map_err(|e| HostError::from_lance(&what, e))?,
            )
        } else {
            None
        };

        // Exactly once: the statement in any version since it was first planned.
        let mut first_planned = None;
        if let (Some(id), Some(latest), Some((store, base))) = (&statement_id, &latest, &root) {
            let since = super::statement::first_planned(store, base, id, planned_at)
                .await
                .map_err(|e| HostError::from_lance(&format!("cannot read the record of statement '{id}'"), e))?;
            if let Some((version, txn)) = super::statement::find(latest, since, id).await? {
                return Ok(Outcome::Found { latest: latest.clone(), version, txn });
            }
            first_planned = Some(since);
        }
        if kind == StagedKind::Create && ((need_latest && latest.is_some()) || (!need_latest && !absence_checked)) {
            check_absent(uri, &lance_session, &options.storage_options).await.map_err(|e| HostError::from_lance(&what, e))?;
        }
        if let (true, Some((store, base))) = (shipped, &root) {
            let versions = super::verify::Versions {
                planned: planned_ds.clone(),
                latest: latest.clone(),
            };
            super::verify::check(kind, &staged, &versions, store, base).await?;
        }
        if let (Some(id), Some(since), Some((store, base))) = (&statement_id, first_planned, &root) {
            // before the commit: a coordinator killed after it leaves the record in place
            super::statement::record(store, base, id, since)
                .await
                .map_err(|e| HostError::from_lance(&format!("cannot record statement '{id}'"), e))?;
        }
        // Row deletes become deletion files now (after every check, before the commit); they
        // are deleted again when the commit does not land.
        let mut written = Vec::new();
        let mut affected = None;
        let operation = if kind == StagedKind::RowDeletes {
            let planned = planned_ds
                .as_ref()
                .ok_or_else(|| HostError::invalid("row deletes must be planned at a version of the table"))?;
            match super::row_changes::resolve(planned, &staged, new_fragments(&operation).to_vec(), &mut written).await {
                Ok(r) => {
                    affected = Some(r.affected);
                    r.operation
                }
                Err(e) => {
                    forget(root.as_ref(), &written).await;
                    return Err(e);
                }
            }
        } else {
            operation.clone()
        };
        let transaction = TransactionBuilder::new(planned_at, operation)
            .transaction_properties(options.transaction_properties())
            .build();
        let dest = match &planned_ds {
            Some(ds) => WriteDestination::Dataset(ds.clone()),
            None => WriteDestination::Uri(uri),
        };
        if let Some(refusal) = latest.as_ref().and_then(|l| options.preconditions.version_refusal(l.version().version)) {
            // the early, clear refusal; the commit handler below makes the check atomic
            return Err(refusal);
        }
        if let (StagedKind::Overwrite, Some(planned)) = (kind, &planned_ds) {
            // Lance lets an overwrite replace whatever was committed since it was planned;
            // an engine's INSERT OVERWRITE must not silently drop a concurrent commit. This
            // check gives the early, clear refusal; the commit below is strict (no retries, so
            // Lance writes exactly the version after the planned one or fails), which closes
            // the window between this check and the commit.
            let latest = match &latest {
                Some(l) => l.version().version, // read for this commit a moment ago
                None => planned.latest_version_id().await.map_err(|e| HostError::from_lance(&what, e))?,
            };
            if latest != planned_at {
                return Err(overwrite_conflict(planned_at, latest));
            }
        }
        let mut builder = CommitBuilder::new(dest).with_session(lance_session.clone()).with_store_params(store_params.clone());
        if let Some(n) = options.max_retries {
            builder = builder.with_max_retries(n);
        }
        if kind == StagedKind::Overwrite && planned_ds.is_some() {
            builder = builder.with_max_retries(0);
        }
        if let Some(t) = options.retry_timeout {
            builder = builder.with_retry_timeout(t);
        }
        if options.stable_row_ids {
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
        let mut checks: Vec<Arc<dyn super::pipeline::Check>> = Vec::new();
        if !options.preconditions.is_empty() {
            checks.push(Arc::new(super::preconditions::PreconditionCheck(options.preconditions.clone())));
        }
        let mut guard = None;
        if let (Some(id), Some(latest)) = (&statement_id, &latest) {
            if !uri.starts_with("s3+ddb") {
                let g = Arc::new(super::statement::Guard::new(latest.clone(), id));
                checks.push(g.clone());
                guard = Some(g);
            }
        }
        let mut pipeline = None;
        if !checks.is_empty() {
            let inner = super::preconditions::table_handler(uri, &store_params, base_handler.clone()).await?;
            let p = Arc::new(checks.into_iter().fold(super::pipeline::Pipeline::new(inner), |p, c| p.with_check(c)));
            builder = builder.with_commit_handler(p.clone());
            pipeline = Some(p);
        } else {
            // a managed table commits through its namespace whatever handle the work was planned on
            let handler = match &base_handler {
                Some(h) => Some(h.clone()),
                None => crate::catalog::managed::handler(uri)?,
            };
            if let Some(h) = handler {
                builder = builder.with_commit_handler(h);
            }
        }
        let result = builder.execute(transaction).await;
        if result.is_err() {
            forget(root.as_ref(), &written).await;
        } else if let Some((d, _)) = &defer {
            // deleted again if the multi-table commit does not land
            d.keep_written(root.as_ref(), &written);
        }
        let found = guard.as_ref().and_then(|g| g.found());
        if let (Err(_), None, Some(refusal)) = (&result, found, pipeline.as_ref().and_then(|p| p.stopped())) {
            return Err(refusal);
        }
        if let (Err(_), Some(version), Some(latest)) = (&result, found, &latest) {
            let txn = latest
                .read_transaction_by_version(version)
                .await
                .map_err(|e| HostError::from_lance(&what, e))?
                .ok_or_else(|| HostError::internal(format!("version {version} holds the statement but has no transaction")))?;
            return Ok(Outcome::Found { latest: latest.clone(), version, txn });
        }
        let committed = result.map_err(|e| {
            let err = commit_error(&what, planned_at, e);
            if kind == StagedKind::Overwrite && err.code == crate::error::LanceErrorCode::LANCE_ERR_CONFLICT {
                HostError::new(err.code, format!("{} (an overwrite commits only onto the version it was planned at)", err.message))
            } else {
                err
            }
        })?;
        Ok(Outcome::Committed(committed))
    })?;
    let outcome = outcome.map_err(|e| secrets.scrub(e).with_local_paths(uri))?;
    match outcome {
        Outcome::Committed(dataset) => {
            let mut summary = WriteSummary::of_fragments(new_fragments(&operation));
            for s in &staged {
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
        // the appended rows; `row_changes::resolve` adds the deletions
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
    let opened = lance::dataset::builder::DatasetBuilder::from_uri(uri)
        .with_session(lance_session.clone())
        .with_storage_options(storage_options.clone())
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

/// Delete the files of staged writes that will not be committed: new data files, and the
/// deletion files of staged deletes and merge-inserts. A file the table's latest version (or the
/// version the write was planned at) uses is never deleted, so an abort after a commit that
/// landed deletes nothing that version needs. Files already gone are fine (an abort may be
/// repeated). Returns the number of files deleted.
pub fn abort(staged: &[StagedWrite], storage_options: &HashMap<String, String>) -> Result<u64> {
    let lance_session = session::global()?.lance.clone();
    let options = WriteOptions {
        storage_options: storage_options.clone(),
        ..Default::default()
    };
    let params = options.store_params();
    // one pass per table: its latest manifest and each planned one are read once, not per share
    let mut tables: Vec<(String, Vec<StagedWrite>)> = Vec::new();
    for s in staged {
        match tables.iter_mut().find(|(uri, _)| uri == &s.uri) {
            Some((_, shares)) => shares.push(s.clone()),
            None => tables.push((s.uri.clone(), vec![s.clone()])),
        }
    }
    let mut deleted = 0;
    for (uri, shares) in tables {
        let what = format!("cannot delete the staged files of table '{uri}'");
        let (params, lance_session) = (params.clone(), lance_session.clone());
        let opts = storage_options.clone();
        let n = session::block_on(async move {
            let mut versions: Vec<Option<u64>> = vec![None];
            for share in &shares {
                if share.planned_at > 0 && !versions.contains(&Some(share.planned_at)) {
                    versions.push(Some(share.planned_at));
                }
            }
            let mut in_use = HashSet::new();
            for version in versions {
                let mut b = crate::catalog::managed::builder(&uri)?
                    .with_session(lance_session.clone())
                    .with_storage_options(opts.clone());
                if let Some(v) = version {
                    b = b.with_version(v);
                }
                match b.load().await {
                    Ok(ds) => in_use.extend(ds.manifest.fragments.iter().flat_map(super::verify::fragment_files)),
                    Err(lance::Error::DatasetNotFound { .. }) | Err(lance::Error::NotFound { .. }) => {}
                    // a planned version cleaned up since: the latest one still guards
                    Err(_) if version.is_some() => {}
                    Err(e) => return Err(e),
                }
            }
            let mut written: Vec<String> = Vec::new();
            for share in &shares {
                let op = &share.transaction.operation;
                written.extend(
                    new_fragments(op).iter().chain(updated_fragments(op)).flat_map(super::verify::fragment_files).filter(|f| !in_use.contains(f)),
                );
            }
            written.sort();
            written.dedup();
            let (store, base) = ObjectStore::from_uri_and_params(lance_session.store_registry(), &uri, &params).await?;
            let mut n = 0u64;
            for file in written {
                match store.delete(&file.split('/').fold(base.clone(), |p, part| p.join(part))).await {
                    Ok(()) => n += 1,
                    Err(lance::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok::<_, lance::Error>(n)
        })?
        .map_err(|e| HostError::from_lance(&what, e))?;
        deleted += n;
    }
    Ok(deleted)
}
