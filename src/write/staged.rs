//! The distributed write protocol: workers *stage* (write data files without committing) and
//! ship what they wrote as bytes; one coordinator *commits* any number of staged writes of one
//! statement as one new version, or *aborts* them (deleting their files).
//!
//! Staged-write bytes, little endian: magic "LHSW" | format u8 (=1) | mode u8 (0 create,
//! 1 append, 2 overwrite) | planned-at version u64 | uri: u32 len + bytes | transaction: u32 len
//! + protobuf bytes (Lance's own `Transaction` message: the fragments and data files written,
//! no row data) | crc32 of all before. Storage options (credentials) are never part of it.

use std::collections::HashMap;
use std::sync::Arc;

use lance::dataset::transaction::{Operation, Transaction, TransactionBuilder};
use lance::dataset::{CommitBuilder, InsertBuilder, WriteDestination};
use lance_io::object_store::ObjectStore;
use lance_table::format::{pb, Fragment};
use prost::Message;

use super::table::{check_destination, Batches};
use super::{commit_error, WriteMode, WriteOptions, WriteSummary, STATEMENT_ID_KEY};
use crate::error::{HostError, LanceErrorCode, Result};
use crate::session;
use crate::snapshot::Snapshot;

const MAGIC: &[u8; 4] = b"LHSW";
/// Current staged-write format.
pub const FORMAT: u8 = 1;

/// What one worker wrote and has not committed.
#[derive(Debug, Clone)]
pub struct StagedWrite {
    pub uri: String,
    pub mode: WriteMode,
    /// The version the write was planned at (0 for a create).
    pub planned_at: u64,
    pub transaction: Transaction,
}

impl StagedWrite {
    fn fragments(&self) -> &[Fragment] {
        match &self.transaction.operation {
            Operation::Append { fragments } | Operation::Overwrite { fragments, .. } => fragments,
            _ => &[],
        }
    }

    /// Rows, fragments, files and bytes it wrote (nothing committed: version 0).
    pub fn summary(&self) -> WriteSummary {
        WriteSummary::of_fragments(self.fragments())
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let txn = pb::Transaction::try_from(&self.transaction)
            .map_err(|e| HostError::internal(format!("cannot encode the staged transaction: {e}")))?
            .encode_to_vec();
        let uri = self.uri.as_bytes();
        let mut b = Vec::with_capacity(26 + uri.len() + txn.len());
        b.extend_from_slice(MAGIC);
        b.push(FORMAT);
        b.push(match self.mode {
            WriteMode::Create => 0,
            WriteMode::Append => 1,
            WriteMode::Overwrite => 2,
        });
        b.extend_from_slice(&self.planned_at.to_le_bytes());
        b.extend_from_slice(&(uri.len() as u32).to_le_bytes());
        b.extend_from_slice(uri);
        b.extend_from_slice(&(txn.len() as u32).to_le_bytes());
        b.extend_from_slice(&txn);
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        Ok(b)
    }

    /// Damaged or truncated bytes are LANCE_ERR_CORRUPT; another format is NOT_SUPPORTED.
    pub fn from_bytes(bytes: &[u8]) -> Result<StagedWrite> {
        let corrupt =
            |what: &str| HostError::new(LanceErrorCode::LANCE_ERR_CORRUPT, format!("invalid staged-write bytes: {what}"));
        if bytes.len() < 5 || &bytes[..4] != MAGIC {
            return Err(corrupt("not lance-host staged-write bytes (bad magic)"));
        }
        if bytes[4] != FORMAT {
            return Err(HostError::not_supported(format!(
                "staged-write format {} is not supported (this library reads format {FORMAT})",
                bytes[4]
            )));
        }
        if bytes.len() < 4 + 1 + 1 + 8 + 4 + 4 + 4 {
            return Err(corrupt("truncated"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(tail.try_into().expect("4 bytes")) {
            return Err(corrupt("checksum mismatch (truncated or corrupted)"));
        }
        let mut pos = 5;
        let mut take = |n: usize| -> Result<&[u8]> {
            let out = body.get(pos..pos + n).ok_or_else(|| corrupt("truncated"))?;
            pos += n;
            Ok(out)
        };
        let mode = match take(1)?[0] {
            0 => WriteMode::Create,
            1 => WriteMode::Append,
            2 => WriteMode::Overwrite,
            m => return Err(corrupt(&format!("unknown write mode {m}"))),
        };
        let planned_at = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
        let uri_len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        let uri = std::str::from_utf8(take(uri_len)?).map_err(|_| corrupt("table uri is not UTF-8"))?.to_string();
        let txn_len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        let txn = take(txn_len)?;
        if pos != body.len() {
            return Err(corrupt("trailing bytes"));
        }
        let decoded = pb::Transaction::decode(txn).map_err(|e| corrupt(&format!("bad transaction: {e}")))?;
        let transaction = Transaction::try_from(decoded).map_err(|e| corrupt(&format!("bad transaction: {e}")))?;
        if !matches!(transaction.operation, Operation::Append { .. } | Operation::Overwrite { .. }) {
            return Err(corrupt("the transaction is not an append or an overwrite"));
        }
        Ok(StagedWrite {
            uri,
            mode,
            planned_at,
            transaction,
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
    let params = plain.lance_params()?;
    let secrets = crate::redact::Secrets::from_storage_options(&options.storage_options);
    let dest = match at {
        Some(s) => WriteDestination::Dataset(s.dataset.clone()),
        None => WriteDestination::Uri(uri),
    };
    let what = format!("cannot stage a {} of table '{uri}'", options.mode.name());
    let source = super::table::into_write_source(data)?;
    let transaction = session::block_on(async {
        InsertBuilder::new(dest).with_params(&params).execute_uncommitted_stream(source).await
    })?
    .map_err(|e| secrets.scrub(HostError::from_lance(&what, e)).with_local_paths(uri))?;
    Ok(StagedWrite {
        uri: at.map(|s| s.uri().to_string()).unwrap_or_else(|| uri.to_string()),
        mode: options.mode,
        planned_at: at.map(Snapshot::version).unwrap_or(0),
        transaction,
    })
}

/// Commit the staged writes of one statement as ONE new version of the table (all of their
/// rows visible, or none). Every staged write must be of `uri` and of one mode. With
/// `options.statement_id`, a statement already committed since the work was planned returns
/// that version (`committed = false`) and writes nothing.
pub fn commit(uri: &str, staged: Vec<StagedWrite>, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    crate::metrics::op(crate::metrics::Op::Commit);
    options.validate()?;
    crate::snapshot::validate_uri(uri)?;
    let first = staged.first().ok_or_else(|| HostError::invalid("no staged writes to commit"))?;
    let mode = first.mode;
    for (i, s) in staged.iter().enumerate() {
        if s.uri.trim_end_matches('/') != uri.trim_end_matches('/') {
            return Err(HostError::invalid(format!(
                "staged write {i} is of table '{}', not of '{uri}'",
                s.uri
            )));
        }
        if s.mode != mode {
            return Err(HostError::invalid(format!(
                "staged write {i} is a {}, staged write 0 a {}: one commit takes one kind of write",
                s.mode.name(),
                mode.name()
            )));
        }
    }
    let planned_at = staged.iter().map(|s| s.planned_at).min().unwrap_or(0);
    if mode != WriteMode::Append {
        if let Some(other) = staged.iter().find(|s| s.planned_at != planned_at) {
            return Err(HostError::invalid(format!(
                "the staged {}s were planned at versions {planned_at} and {}: plan them at one version",
                mode.name(),
                other.planned_at
            )));
        }
    }
    let secrets = crate::redact::Secrets::from_storage_options(&options.storage_options);
    let lance_session = session::global()?.lance.clone();
    let store_params = options.store_params();

    if let Some(id) = &options.statement_id {
        if let Some(found) = find_statement(uri, options, planned_at, id)? {
            return Ok(found);
        }
    }

    let mut summary = WriteSummary::default();
    let operation = match mode {
        WriteMode::Append => {
            let fragments: Vec<Fragment> = staged.iter().flat_map(|s| s.fragments().iter().cloned()).collect();
            Operation::Append { fragments }
        }
        WriteMode::Create | WriteMode::Overwrite => {
            let Operation::Overwrite { schema, config_upsert_values, initial_bases, .. } = &first.transaction.operation
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
                fragments: staged.iter().flat_map(|s| s.fragments().iter().cloned()).collect(),
                config_upsert_values: config_upsert_values.clone(),
                initial_bases: initial_bases.clone(),
            }
        }
    };
    if let Operation::Append { fragments } | Operation::Overwrite { fragments, .. } = &operation {
        summary = WriteSummary::of_fragments(fragments.iter());
    }
    let transaction = TransactionBuilder::new(planned_at, operation)
        .transaction_properties(options.transaction_properties())
        .build();
    let what = format!("cannot commit {} staged write(s) to table '{uri}'", staged.len());
    let dataset = session::block_on(async {
        let dest = if mode == WriteMode::Append || (mode == WriteMode::Overwrite && planned_at > 0) {
            // the version the work was planned at: Lance checks what was committed since
            let ds = lance::dataset::builder::DatasetBuilder::from_uri(uri)
                .with_session(lance_session.clone())
                .with_storage_options(options.storage_options.clone())
                .with_version(planned_at)
                .load()
                .await?;
            WriteDestination::Dataset(Arc::new(ds))
        } else {
            WriteDestination::Uri(uri)
        };
        if mode == WriteMode::Create {
            check_absent(uri, &lance_session, &options.storage_options).await?;
        }
        if let (WriteMode::Overwrite, WriteDestination::Dataset(planned)) = (mode, &dest) {
            // Lance lets an overwrite replace whatever was committed since it was planned;
            // an engine's INSERT OVERWRITE must not silently drop a concurrent commit.
            let latest = planned.latest_version_id().await?;
            if latest != planned_at {
                return Err(lance::Error::commit_conflict_source(
                    latest,
                    format!(
                        "version {latest} was committed since the overwrite was planned at version \
                         {planned_at}; committing it would drop that version's changes"
                    )
                    .into(),
                ));
            }
        }
        let mut builder = CommitBuilder::new(dest).with_session(lance_session).with_store_params(store_params);
        if let Some(n) = options.max_retries {
            builder = builder.with_max_retries(n);
        }
        if let Some(t) = options.retry_timeout {
            builder = builder.with_retry_timeout(t);
        }
        builder.execute(transaction).await
    })?
    .map_err(|e| secrets.scrub(commit_error(&what, planned_at, e)).with_local_paths(uri))?;
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

/// The version committed after `planned_at` whose transaction carries statement `id`, if any.
fn find_statement(
    uri: &str,
    options: &WriteOptions,
    planned_at: u64,
    id: &str,
) -> Result<Option<(Snapshot, WriteSummary)>> {
    let lance_session = session::global()?.lance.clone();
    let opts = options.storage_options.clone();
    let found = session::block_on(async move {
        let latest = match lance::dataset::builder::DatasetBuilder::from_uri(uri)
            .with_session(lance_session)
            .with_storage_options(opts)
            .load()
            .await
        {
            Ok(ds) => ds,
            Err(lance::Error::DatasetNotFound { .. }) | Err(lance::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let newest = latest.version().version;
        for version in (planned_at + 1..=newest).rev() {
            let Some(txn) = latest.read_transaction_by_version(version).await? else {
                continue;
            };
            let props = txn.transaction_properties.as_deref();
            if props.and_then(|p| p.get(STATEMENT_ID_KEY)).map(String::as_str) == Some(id) {
                let summary = match &txn.operation {
                    Operation::Append { fragments } | Operation::Overwrite { fragments, .. } => {
                        WriteSummary::of_fragments(fragments.iter())
                    }
                    _ => WriteSummary::default(),
                };
                let ds = latest.checkout_version(version).await?;
                return Ok(Some((ds, summary)));
            }
        }
        Ok(None)
    })?
    .map_err(|e| HostError::from_lance(&format!("cannot look for statement '{id}' in table '{uri}'"), e))?;
    Ok(found.map(|(ds, mut summary)| {
        summary.version = ds.version().version;
        summary.committed = false;
        (
            Snapshot {
                dataset: Arc::new(ds),
                storage_options: options.storage_options.clone(),
            },
            summary,
        )
    }))
}

/// Delete the data files of staged writes that will not be committed. Files already gone
/// are fine (an abort may be repeated). Must not be called for a write that was committed.
pub fn abort(staged: &[StagedWrite], storage_options: &HashMap<String, String>) -> Result<u64> {
    let registry = session::global()?.lance.store_registry();
    let options = WriteOptions {
        storage_options: storage_options.clone(),
        ..Default::default()
    };
    let params = options.store_params();
    let mut deleted = 0;
    for s in staged {
        let files: Vec<String> = s.fragments().iter().flat_map(|f| f.files.iter().map(|d| d.path.clone())).collect();
        let uri = s.uri.clone();
        let (registry, params) = (registry.clone(), params.clone());
        let n = session::block_on(async move {
            let (store, base) = ObjectStore::from_uri_and_params(registry, &uri, &params).await?;
            let mut n = 0u64;
            for file in files {
                let path = base.clone().join("data").join(file.as_str());
                match store.delete(&path).await {
                    Ok(()) => n += 1,
                    Err(lance::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok::<_, lance::Error>(n)
        })?
        .map_err(|e| HostError::from_lance(&format!("cannot delete the staged files of table '{}'", s.uri), e))?;
        deleted += n;
    }
    Ok(deleted)
}
