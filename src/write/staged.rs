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

use lance::dataset::transaction::{Operation, Transaction};
use lance::dataset::{InsertBuilder, WriteDestination};
use lance_io::object_store::ObjectStore;
use lance_table::format::{pb, Fragment};
use prost::Message;

use super::source::{check_destination, Batches};
use super::{WriteMode, WriteOptions, WriteSummary};
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
    /// Rows deleted by address (`changes_by_address`); committed with the statement's appended shares.
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
pub(super) fn new_fragments(op: &Operation) -> &[Fragment] {
    super::verify::parts(op).0
}

/// Fragments a transaction changes in place (new deletion files, new column files).
fn updated_fragments(op: &Operation) -> &[Fragment] {
    super::verify::parts(op).1
}

impl StagedWrite {
    pub(super) fn fragments(&self) -> &[Fragment] {
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
    let params = plain.lance_params(uri)?;
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
        let (params, lance_session) = (options.store_params(&uri), lance_session.clone());
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
                let b = crate::snapshot::managed::builder(&uri)?.with_session(lance_session.clone());
                let mut b = crate::snapshot::credentials::with_options(b, &uri, opts.clone());
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
