//! Scans of a pinned snapshot delivered as Arrow record batch readers.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;

use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use futures::{Stream, StreamExt};
use lance::dataset::scanner::Scanner;
use lance_table::format::Fragment;

use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;
use crate::stats::OpStats;

/// Name of the row id meta column.
pub const ROW_ID: &str = "_rowid";
/// Name of the row address meta column.
pub const ROW_ADDR: &str = "_rowaddr";

/// What to read from a snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanOptions {
    /// Columns to return, in order; empty = every column of the schema.
    pub columns: Vec<String>,
    pub filter_sql: Option<String>,
    /// A serialized Substrait `ExtendedExpression` holding one boolean expression.
    pub filter_substrait: Option<Vec<u8>>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub batch_size: Option<u64>,
    pub with_row_id: bool,
    pub with_row_addr: bool,
    /// Restrict the scan to these fragments, in this order; `None` = every fragment.
    pub fragment_ids: Option<Vec<u64>>,
    pub scan_in_order: bool,
    pub batch_readahead: Option<u32>,
    pub fragment_readahead: Option<u32>,
}

/// Check projected column names against the snapshot's schema, naming the first unknown one.
pub fn validate_columns(snapshot: &Snapshot, columns: &[String]) -> Result<()> {
    let schema = snapshot.dataset.schema();
    for c in columns {
        if c == ROW_ID || c == ROW_ADDR {
            continue;
        }
        if schema.field(c).is_none() {
            return Err(HostError::invalid(format!(
                "unknown column '{c}' (table '{}' at version {})",
                snapshot.uri(),
                snapshot.version()
            )));
        }
    }
    Ok(())
}

/// Project `columns` (empty = all): checks every name, hands the data columns to the scanner
/// and leaves the meta columns (`_rowid`, `_rowaddr`) to the caller.
pub fn project(snapshot: &Snapshot, scanner: &mut Scanner, columns: &[String]) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    validate_columns(snapshot, columns)?;
    let data: Vec<&String> = columns
        .iter()
        .filter(|c| c.as_str() != ROW_ID && c.as_str() != ROW_ADDR)
        .collect();
    scanner
        .project(&data)
        .map_err(|e| HostError::from_lance("invalid projection", e))?;
    Ok(())
}

/// Resolve fragment ids to the snapshot's fragments, naming the first id not in it.
pub fn resolve_fragments(snapshot: &Snapshot, ids: &[u64]) -> Result<Vec<Fragment>> {
    let all = snapshot.dataset.fragments();
    ids.iter()
        .map(|id| {
            all.iter().find(|f| f.id == *id).cloned().ok_or_else(|| {
                HostError::not_found(format!(
                    "fragment id {id} is not in table '{}' at version {}",
                    snapshot.uri(),
                    snapshot.version()
                ))
            })
        })
        .collect()
}

/// Reject bytes that are not a serialized Substrait `ExtendedExpression` with one expression
/// before they reach the planner.
fn validate_substrait(bytes: &[u8]) -> Result<()> {
    use datafusion_substrait::substrait::proto::ExtendedExpression;
    use prost::Message;
    let envelope = ExtendedExpression::decode(bytes).map_err(|e| {
        HostError::invalid(format!(
            "filter_substrait is not a serialized Substrait ExtendedExpression: {e}"
        ))
    })?;
    if envelope.referred_expr.len() != 1 {
        return Err(HostError::invalid(format!(
            "filter_substrait must hold exactly one expression, found {}",
            envelope.referred_expr.len()
        )));
    }
    Ok(())
}

fn to_i64(name: &str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| HostError::invalid(format!("{name} {v} is too large")))
}

/// Apply scan options to a Lance scanner (shared by plain scans and scan splits).
pub fn configure_scanner(
    snapshot: &Snapshot,
    scanner: &mut Scanner,
    opts: &ScanOptions,
) -> Result<()> {
    let lance_err = |e| HostError::from_lance("invalid scan options", e);
    project(snapshot, scanner, &opts.columns)?;
    let wants_row_id = opts.with_row_id || opts.columns.iter().any(|c| c == ROW_ID);
    let wants_row_addr = opts.with_row_addr || opts.columns.iter().any(|c| c == ROW_ADDR);
    if wants_row_id {
        scanner.with_row_id();
    }
    if wants_row_addr {
        scanner.with_row_address();
    }
    if opts.filter_sql.is_some() && opts.filter_substrait.is_some() {
        return Err(HostError::invalid(
            "filter_sql and filter_substrait are mutually exclusive",
        ));
    }
    if let Some(sql) = &opts.filter_sql {
        if sql.trim().is_empty() {
            return Err(HostError::invalid("filter_sql is empty"));
        }
        scanner.filter(sql).map_err(lance_err)?;
    }
    if let Some(bytes) = &opts.filter_substrait {
        if bytes.is_empty() {
            return Err(HostError::invalid("filter_substrait is empty"));
        }
        validate_substrait(bytes)?;
        scanner.filter_substrait(bytes).map_err(lance_err)?;
    }
    if opts.limit.is_some() || opts.offset.is_some() {
        let limit = opts.limit.map(|v| to_i64("limit", v)).transpose()?;
        let offset = opts.offset.map(|v| to_i64("offset", v)).transpose()?;
        scanner.limit(limit, offset).map_err(lance_err)?;
    }
    if let Some(bs) = opts.batch_size {
        if bs == 0 {
            return Err(HostError::invalid("batch_size must be positive"));
        }
        scanner.batch_size(bs as usize);
    }
    if let Some(ids) = &opts.fragment_ids {
        scanner.with_fragments(resolve_fragments(snapshot, ids)?);
    }
    scanner.scan_in_order(opts.scan_in_order);
    if let Some(n) = opts.batch_readahead {
        scanner.batch_readahead(n.max(1) as usize);
    }
    if let Some(n) = opts.fragment_readahead {
        scanner.fragment_readahead(n.max(1) as usize);
    }
    Ok(())
}

/// Start a scan of the snapshot; the reader carries the scan's own I/O statistics.
pub fn scan(snapshot: &Snapshot, opts: &ScanOptions) -> Result<BatchReader> {
    let stats = OpStats::default();
    let mut scanner = stats.dataset(snapshot).scan();
    configure_scanner(snapshot, &mut scanner, opts)?;
    stats.attach(&mut scanner);
    Ok(BatchReader::start(scanner, "cannot start scan")?.with_stats(stats))
}

type BoxedBatchStream = Pin<Box<dyn Stream<Item = lance::Result<RecordBatch>> + Send>>;

/// A blocking record batch reader over a Lance stream, driven by the global runtime. It owns
/// everything it reads from, so it may outlive the handle that created it and move threads.
pub struct BatchReader {
    schema: SchemaRef,
    stream: Option<BoxedBatchStream>,
    stats: OpStats,
}

impl BatchReader {
    /// Plan and start the scanner's stream.
    pub fn start(scanner: Scanner, context: &str) -> Result<Self> {
        let stream = session::block_on(async move { scanner.try_into_stream().await })?
            .map_err(|e| HostError::from_lance(context, e))?;
        let schema = lance::io::RecordBatchStream::schema(&stream);
        Ok(Self::from_stream(schema, Box::pin(stream)))
    }

    pub fn from_stream(schema: SchemaRef, stream: BoxedBatchStream) -> Self {
        Self {
            schema,
            stream: Some(stream),
            stats: OpStats::default(),
        }
    }

    /// A reader over one batch that is already in memory.
    pub fn from_batch(batch: RecordBatch) -> Self {
        let schema = batch.schema();
        Self::from_stream(schema, Box::pin(futures::stream::iter(vec![Ok(batch)])))
    }

    /// Attach the counters of the operation that produced this reader.
    pub fn with_stats(mut self, stats: OpStats) -> Self {
        self.stats = stats;
        self
    }

    /// The operation's counters (live; shared with the reader).
    pub fn stats(&self) -> OpStats {
        self.stats.clone()
    }

    /// Collect every remaining batch (used by Rust callers and tests).
    pub fn collect_batches(self) -> std::result::Result<Vec<RecordBatch>, ArrowError> {
        self.collect()
    }
}

impl Iterator for BatchReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = self.stream.as_mut()?;
        let polled = catch_unwind(AssertUnwindSafe(|| session::block_on(stream.next())));
        let item = match polled {
            Ok(Ok(item)) => item,
            Ok(Err(e)) => Some(Err(lance::Error::internal(e.message))),
            Err(_) => Some(Err(lance::Error::internal(
                "panic while reading the next batch".to_string(),
            ))),
        };
        match item {
            None => {
                self.release();
                None
            }
            Some(Ok(batch)) => Some(Ok(batch)),
            Some(Err(e)) => {
                // A failed stream is finished: stop its remaining work now.
                self.release();
                let err = HostError::from_lance("scan failed", e);
                Some(Err(ArrowError::ExternalError(Box::new(err))))
            }
        }
    }
}

impl BatchReader {
    fn release(&mut self) {
        if let Some(stream) = self.stream.take() {
            // Dropping the stream cancels its tasks; some drops need a runtime context.
            match session::global() {
                Ok(s) => {
                    let _guard = s.runtime.enter();
                    drop(stream);
                }
                Err(_) => drop(stream),
            }
        }
    }
}

impl Drop for BatchReader {
    fn drop(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| self.release()));
    }
}

impl RecordBatchReader for BatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
