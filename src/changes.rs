//! Change data as splits: the rows a table's versions inserted, updated and deleted since a
//! version, planned on the pinned (end) version like a scan and read on workers.
//!
//! What a row's change is comes from the row versions Lance keeps for tables with stable row
//! ids: `_row_created_at_version` and `_row_last_updated_at_version` (the same rule as
//! pylance's `delta`): inserted when created after the begin version, updated when created at
//! or before it and last updated after it. Deleted rows are the stable row ids live at the
//! begin version and not at the end version (Lance's own anti-join), with their values as they
//! were at the begin version. A table without stable row ids keeps no row versions, so its
//! changes are refused instead of reported empty.
//!
//! Changes across a restore, or across a version without a transaction, are refused too: the
//! row versions a restore brings back do not say which rows it revived or which values it
//! undid. A column added after the begin version is NULL in the rows deleted before it.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray, UInt64Array};
use arrow::record_batch::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};

use crate::error::{HostError, LanceErrorCode, Result};
use crate::split::{Split, SplitKind, SplitPlan};
use crate::scan::{self, BatchReader, ScanOptions, ROW_ID};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::OpStats;

pub use crate::split::{Changes, DELETED, INSERTED, UPDATED};
use crate::split::ALL;

/// The column that says what happened to a row: "insert", "update" or "delete".
pub const CHANGE_TYPE: &str = "_change_type";
pub const CREATED_AT: &str = "_row_created_at_version";
pub const UPDATED_AT: &str = "_row_last_updated_at_version";

/// A request for the changes of a table.
#[derive(Debug, Clone, Default)]
pub struct ChangesRequest {
    /// Changes after this version (0 = since the table was created).
    pub since_version: u64,
    /// Instead of `since_version`: changes after the last version committed before this time
    /// (milliseconds since the Unix epoch).
    pub since_timestamp_ms: Option<i64>,
    /// `INSERTED | UPDATED | DELETED` bits; 0 = all three.
    pub types: u8,
    /// Visible rows per split (0 = one fragment per split), as for scan plans.
    pub target_rows: u64,
}

/// Plan the changes between a version and the snapshot's: splits of kind CHANGES, every
/// fragment of the snapshot in one inserted-and-updated split, plus one split of the deleted
/// rows when asked for. An empty plan when nothing can have changed (the same version).
pub fn plan_changes(snapshot: &Snapshot, req: &ChangesRequest) -> Result<SplitPlan> {
    crate::metrics::op(crate::metrics::Op::Plan);
    let types = if req.types == 0 { ALL } else { req.types };
    if types & !ALL != 0 {
        return Err(HostError::invalid(format!(
            "change types {:#x}: use LANCE_CHANGE_INSERTED (1), LANCE_CHANGE_UPDATED (2), LANCE_CHANGE_DELETED (4)",
            req.types
        )));
    }
    let end = snapshot.version();
    need_row_versions(snapshot, end)?;
    let since = match req.since_timestamp_ms {
        Some(ms) => {
            if req.since_version != 0 {
                return Err(HostError::invalid("give the begin of the changes as a version or as a time, not both"));
            }
            version_before(snapshot, ms)?
        }
        None => req.since_version,
    };
    if since > end {
        return Err(HostError::invalid(format!(
            "the changes since version {since} cannot be read at version {end}: pin a version at or after {since}"
        )));
    }
    let mut splits = Vec::new();
    if since < end {
        check_history(snapshot, since, end)?;
        if types & DELETED != 0 && since > 0 {
            let begin = open_version(snapshot, since)?;
            need_row_versions(&begin, since)?;
        }
        let live = types & (INSERTED | UPDATED);
        if live != 0 {
            let keep = fragments_with_changes(snapshot, since, end, live);
            let rows: std::collections::HashMap<u64, u64> =
                snapshot.fragments()?.into_iter().map(|f| (f.id, f.logical_rows)).collect();
            for mut s in crate::split::plan_scan(snapshot, req.target_rows, false)?.splits {
                s.fragment_ids.retain(|id| keep.contains(id));
                if s.fragment_ids.is_empty() {
                    continue;
                }
                // a weight for scheduling: the rows the split reads (its changes are fewer)
                s.row_count = s.fragment_ids.iter().map(|id| rows.get(id).copied().unwrap_or(0)).sum();
                s.kind = SplitKind::Changes;
                s.changes = Some(Changes { since, types: live });
                splits.push(s);
            }
        }
        // nothing was live at version 0 (the empty table), so nothing is deleted since it
        if types & DELETED != 0 && since > 0 {
            splits.push(Split {
                uri: snapshot.uri().to_string(),
                version: end,
                kind: SplitKind::Changes,
                fragment_ids: Vec::new(),
                segments: Vec::new(),
                column: String::new(),
                index_name: String::new(),
                metric: None,
                row_count: 0,
                rows: None,
                changes: Some(Changes { since, types: DELETED }),
            });
        }
    }
    Ok(SplitPlan {
        reason: format!("changes after version {since} up to version {end} ({})", type_names(types)),
        splits,
        index_name: None,
        metric: None,
    })
}

/// The fragments of the snapshot that may hold rows inserted or updated in `(since, end]`, by
/// the row-version runs the manifest keeps inline (the pruning Lance's `delta` does); a fragment
/// whose runs are not inline (spilled to a column) or not readable is kept (read and filtered).
/// A fragment none of whose rows was created or updated in the range holds no such change.
fn fragments_with_changes(snapshot: &Snapshot, since: u64, end: u64, types: u8) -> std::collections::HashSet<u64> {
    use lance_table::rowids::version::{read_dataset_versions, RowDatasetVersionMeta};
    let any_run = |meta: Option<&RowDatasetVersionMeta>, pred: &dyn Fn(u64) -> bool| -> bool {
        let Some(RowDatasetVersionMeta::Inline(data)) = meta else { return true };
        match read_dataset_versions(data) {
            Ok(seq) => seq.runs.is_empty() || seq.runs.iter().any(|r| pred(r.version())),
            Err(_) => true,
        }
    };
    let in_range = |v: u64| v > since && v <= end;
    snapshot
        .dataset
        .manifest
        .fragments
        .iter()
        .filter(|f| {
            let inserts = types & INSERTED != 0 && any_run(f.created_at_version_meta.as_ref(), &in_range);
            let updates = types & UPDATED != 0
                && any_run(f.last_updated_at_version_meta.as_ref(), &in_range)
                && any_run(f.created_at_version_meta.as_ref(), &|v| v <= since);
            inserts || updates
        })
        .map(|f| f.id)
        .collect()
}

fn type_names(types: u8) -> String {
    [(INSERTED, "inserted"), (UPDATED, "updated"), (DELETED, "deleted")]
        .iter()
        .filter(|(bit, _)| types & bit != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Versions read at once when the history of a change range is checked.
const HISTORY_READS: usize = 8;

/// Refuse changes across a version whose change the row versions do not tell: a restore (it
/// brings back rows deleted since the begin version and undoes updates, and the row versions
/// it restores say neither, so pylance's `delta` reports nothing of it) or a version without a
/// transaction (what it did cannot be told). One small read per version of the range.
fn check_history(snapshot: &Snapshot, since: u64, end: u64) -> Result<()> {
    use lance::dataset::transaction::Operation;
    let ds = snapshot.dataset.clone();
    let found = session::block_on(async move {
        futures::stream::iter((since + 1)..=end)
            .map(|v| {
                let ds = ds.clone();
                async move { ds.read_transaction_by_version(v).await.map(|t| (v, t)) }
            })
            .buffered(HISTORY_READS)
            .try_collect::<Vec<_>>()
            .await
    })?
    .map_err(|e| HostError::from_lance(&format!("cannot read the transactions of versions {}..={end}", since + 1), e))?;
    for (v, txn) in found {
        match txn.map(|t| t.operation) {
            Some(Operation::Restore { version }) => {
                return Err(HostError::not_supported(format!(
                    "version {v} of table '{}' restored version {version}: the changes a restore makes (rows it brings \
                     back, values it undoes) are not in Lance's row versions, so changes across it cannot be told; \
                     read the changes since version {v} (or up to version {})",
                    snapshot.uri(),
                    v - 1
                )))
            }
            None => {
                return Err(HostError::not_supported(format!(
                    "version {v} of table '{}' has no transaction, so what it changed cannot be told: \
                     read the changes since version {v}",
                    snapshot.uri()
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Refuse a table whose version keeps no row versions (pylance answers such a table's
/// `delta` with no rows, which would be a wrong answer).
fn need_row_versions(snapshot: &Snapshot, version: u64) -> Result<()> {
    if snapshot.dataset.manifest.uses_stable_row_ids() {
        return Ok(());
    }
    Err(HostError::not_supported(format!(
        "table '{}' at version {version} does not use stable row ids, so Lance keeps no row versions and its changes \
         cannot be told (create the table with stable row ids: pylance's enable_stable_row_ids=True)",
        snapshot.uri()
    )))
}

/// The last version committed before `ms` (0 when none was).
fn version_before(snapshot: &Snapshot, ms: i64) -> Result<u64> {
    let at = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .ok_or_else(|| HostError::invalid(format!("time {ms} ms is out of range")))?;
    let ds = snapshot.dataset.clone();
    let versions = session::block_on(async move { ds.versions().await })?
        .map_err(|e| HostError::from_lance("cannot list the table's versions", e))?;
    Ok(versions.iter().filter(|v| v.timestamp < at).map(|v| v.version).max().unwrap_or(0))
}

fn open_version(snapshot: &Snapshot, version: u64) -> Result<Snapshot> {
    let ds = snapshot.dataset.clone();
    let begin = session::block_on(async move { ds.checkout_version(version).await })?.map_err(|e| {
        let err = HostError::from_lance(&format!("cannot open version {version} of table '{}'", snapshot.uri()), e);
        if err.code == LanceErrorCode::LANCE_ERR_NOT_FOUND {
            HostError::not_found(format!(
                "version {version} of table '{}' is gone (cleaned up): the rows deleted since it cannot be read",
                snapshot.uri()
            ))
        } else {
            err
        }
    })?;
    Ok(Snapshot {
        dataset: Arc::new(begin),
        storage_options: snapshot.storage_options.clone(),
    })
}

/// The columns a change split returns first: the requested ones, else every column.
fn data_columns(snapshot: &Snapshot, opts: &ScanOptions) -> Result<Vec<String>> {
    for c in &opts.columns {
        if [CHANGE_TYPE, CREATED_AT, UPDATED_AT, ROW_ID].contains(&c.as_str()) {
            return Err(HostError::invalid(format!(
                "column '{c}' is part of every change split's rows; request the table's columns only"
            )));
        }
    }
    scan::validate_columns(snapshot, &opts.columns)?;
    if opts.columns.iter().any(|c| c == scan::ROW_ADDR) || opts.with_row_addr {
        return Err(HostError::invalid("a change split returns _rowid (stable across versions), not _rowaddr"));
    }
    Ok(if opts.columns.is_empty() {
        snapshot.dataset.schema().fields.iter().map(|f| f.name.clone()).collect()
    } else {
        opts.columns.clone()
    })
}

/// Read a CHANGES split on its snapshot: the requested columns (else all), then `_rowid`,
/// `_row_created_at_version`, `_row_last_updated_at_version` and `_change_type`.
pub fn scan_changes(snapshot: &Snapshot, split: &Split, opts: &ScanOptions) -> Result<BatchReader> {
    split.check_snapshot(snapshot)?;
    let changes = split
        .changes
        .ok_or_else(|| HostError::invalid("the split is not a changes split"))?;
    if opts.fragment_ids.is_some() {
        return Err(HostError::invalid("fragment_ids must not be set when reading a split (the split chooses them)"));
    }
    if opts.filter_substrait.is_some() {
        return Err(HostError::invalid("a change split takes an SQL filter (filter_sql), not a Substrait one"));
    }
    crate::metrics::op(crate::metrics::Op::Scan);
    let columns = data_columns(snapshot, opts)?;
    if changes.types == DELETED {
        return scan_deleted(snapshot, changes.since, &columns, opts);
    }
    let since = changes.since;
    let end = split.version;
    let inserted = format!("({CREATED_AT} > {since} AND {CREATED_AT} <= {end})");
    let updated = format!("({CREATED_AT} <= {since} AND {UPDATED_AT} > {since} AND {UPDATED_AT} <= {end})");
    let mut filter = match changes.types {
        INSERTED => inserted,
        UPDATED => updated,
        _ => format!("({inserted} OR {updated})"),
    };
    if let Some(user) = &opts.filter_sql {
        if user.trim().is_empty() {
            return Err(HostError::invalid("filter_sql is empty"));
        }
        scan::check_sql_filter(snapshot, user)?;
        filter = format!("{filter} AND ({user})");
    }
    let mut o = opts.clone();
    o.columns = Vec::new();
    o.filter_sql = None;
    o.with_row_id = false;
    o.with_row_addr = false;
    o.fragment_ids = Some(split.fragment_ids.clone());
    let stats = OpStats::default();
    let mut scanner = stats.dataset(snapshot).scan();
    scan::configure_scanner(snapshot, &mut scanner, &o)?;
    let mut projection: Vec<&str> = columns.iter().map(String::as_str).collect();
    projection.extend([ROW_ID, CREATED_AT, UPDATED_AT]);
    scanner
        .project(&projection)
        .map_err(|e| HostError::from_lance("invalid projection", e))?;
    scanner
        .filter(&filter)
        .map_err(|e| HostError::from_lance("invalid filter of a change split", e))?;
    stats.attach(&mut scanner);
    let stream = session::block_on(async move { scanner.try_into_stream().await })?
        .map_err(|e| HostError::from_lance("cannot read a change split", e))?;
    let in_schema = lance::io::RecordBatchStream::schema(&stream);
    let schema = with_change_type(&in_schema);
    let out = schema.clone();
    let typed = stream.map(move |batch| {
        let batch = batch?;
        let created = batch
            .column_by_name(CREATED_AT)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>().cloned())
            .ok_or_else(|| lance::Error::internal(format!("a change split's rows lack {CREATED_AT}")))?;
        let kinds: StringArray = created
            .iter()
            .map(|v| Some(if v.is_some_and(|v| v > since) { "insert" } else { "update" }))
            .collect();
        append(&out, batch, Arc::new(kinds))
    });
    Ok(BatchReader::from_stream(schema, Box::pin(typed))?.with_stats(stats).reading(snapshot))
}

fn with_change_type(schema: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(CHANGE_TYPE, DataType::Utf8, false));
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn append(schema: &SchemaRef, batch: RecordBatch, column: ArrayRef) -> lance::Result<RecordBatch> {
    let mut columns = batch.columns().to_vec();
    columns.push(column);
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| lance::Error::internal(e.to_string()))
}

/// The rows deleted after `since`: Lance's stream of their stable row ids, each batch's rows
/// taken from version `since` (their values as they were then). Row versions are those of
/// version `since`; `_change_type` is "delete".
fn scan_deleted(snapshot: &Snapshot, since: u64, columns: &[String], opts: &ScanOptions) -> Result<BatchReader> {
    if opts.filter_sql.is_some()
        || opts.limit.is_some()
        || opts.offset.is_some()
        || !opts.order_by.is_empty()
        || opts.key_filter.is_some()
        || opts.dynamic_filter.is_some()
    {
        return Err(HostError::invalid(
            "the deleted rows' split takes no filter, key set, dynamic filter, limit, offset or order: apply them to its rows",
        ));
    }
    let end = snapshot.version();
    let begin = open_version(snapshot, since)?;
    let stats = OpStats::default();
    let end_ds = stats.dataset(snapshot);
    let begin_ds = stats.dataset(&begin);
    // Columns added after version `since` have no value in a row deleted before they were
    // added: NULL, typed as at the end version.
    let end_schema = snapshot.arrow_schema();
    let (had, added): (Vec<&String>, Vec<&String>) =
        columns.iter().partition(|c| begin.dataset.schema().field(c.as_str()).is_some());
    for c in &added {
        if end_schema.field_with_name(c).is_err() {
            return Err(HostError::invalid(format!("column '{c}' is not a column of the table at version {end}")));
        }
    }
    let schema = {
        let mut probe = begin_ds.scan();
        let mut names: Vec<&str> = had.iter().map(|c| c.as_str()).collect();
        names.extend([ROW_ID, CREATED_AT, UPDATED_AT]);
        probe.project(&names).map_err(|e| HostError::from_lance("invalid projection", e))?;
        let s = session::block_on(async move { probe.schema().await })?
            .map_err(|e| HostError::from_lance("cannot plan the deleted rows' split", e))?;
        let mut fields: Vec<Field> = Vec::with_capacity(columns.len() + 3);
        for c in columns {
            match s.field_with_name(c) {
                Ok(f) => fields.push(f.clone()),
                Err(_) => fields.push(end_schema.field_with_name(c).map_err(|e| HostError::internal(e.to_string()))?.clone().with_nullable(true)),
            }
        }
        for c in [ROW_ID, CREATED_AT, UPDATED_AT] {
            fields.push(s.field_with_name(c).map_err(|e| HostError::internal(e.to_string()))?.clone());
        }
        with_change_type(&Schema::new_with_metadata(fields, s.metadata().clone()))
    };
    let added: std::collections::HashSet<String> = added.into_iter().cloned().collect();
    let out = schema.clone();
    let ids = session::block_on(async move {
        lance::dataset::delta::DatasetDeltaBuilder::new((*end_ds).clone())
            .with_begin_version(since)
            .with_end_version(end)
            .build()?
            .get_deleted_row_ids()
            .await
    })?
    .map_err(|e| HostError::from_lance("cannot list the deleted rows", e))?;
    let rows = ids
        .and_then(move |batch| {
            let begin_ds = begin_ds.clone();
            let out = out.clone();
            let names: Vec<String> = out.fields().iter().map(|f| f.name().clone()).filter(|n| n != CHANGE_TYPE).collect();
            let added = added.clone();
            async move {
                let ids = batch
                    .column_by_name(ROW_ID)
                    .and_then(|c| c.as_any().downcast_ref::<UInt64Array>().cloned())
                    .ok_or_else(|| lance::Error::internal("the deleted row ids lack _rowid"))?;
                let ids: Vec<u64> = ids.values().to_vec();
                let wanted: Vec<&str> =
                    names.iter().map(String::as_str).filter(|n| *n != ROW_ID && !added.contains(*n)).collect();
                let projection = lance::dataset::ProjectionRequest::from_columns(wanted, begin_ds.schema());
                let taken = begin_ds.take_rows(&ids, projection).await?;
                if taken.num_rows() != ids.len() {
                    return Err(lance::Error::internal(format!(
                        "{} deleted rows listed, {} found at version {since}",
                        ids.len(),
                        taken.num_rows()
                    )));
                }
                let mut columns: Vec<ArrayRef> = Vec::with_capacity(out.fields().len());
                for name in &names {
                    if name == ROW_ID {
                        columns.push(Arc::new(UInt64Array::from(ids.clone())));
                        continue;
                    }
                    if added.contains(name) {
                        let t = out.field_with_name(name).map_err(|e| lance::Error::internal(e.to_string()))?.data_type().clone();
                        columns.push(arrow::array::new_null_array(&t, ids.len()));
                        continue;
                    }
                    let column = taken
                        .column_by_name(name)
                        .ok_or_else(|| lance::Error::internal(format!("the deleted rows lack column '{name}'")))?;
                    columns.push(column.clone());
                }
                columns.push(Arc::new((0..ids.len()).map(|_| Some("delete")).collect::<StringArray>()));
                RecordBatch::try_new(out.clone(), columns).map_err(|e| lance::Error::internal(e.to_string()))
            }
        })
        .map_err(lance::Error::from);
    Ok(BatchReader::from_stream(schema, Box::pin(rows))?.with_stats(stats).reading(snapshot))
}
