//! The rows a host hands to a write: its stream of batches, watched for the host's own failures,
//! and turned into the async stream Lance writes from. Both the one-process writes (`table`)
//! and the staged ones (`staged`, `changes_by_predicate`) take their source from here.

use std::sync::{Arc, OnceLock};

use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use lance::deps::datafusion::error::DataFusionError;
use lance::deps::datafusion::physical_plan::SendableRecordBatchStream;

use super::WriteMode;
use crate::error::{HostError, LanceErrorCode, Result};
use crate::snapshot::{self, Snapshot};

/// The source of rows a host hands over.
pub type Batches = Box<dyn RecordBatchReader + Send>;

/// Batches read ahead of the writer.
const READ_AHEAD: usize = 2;

/// What went wrong with the host's stream, if anything: its `get_next` failed, it broke the
/// stream contract (a batch of another schema than the one it declared), or reading it panicked.
/// Set once, by whoever reads the stream; read after the write failed, to tell the host that the
/// failure was its stream's and not the library's (`LANCE_ERR_HOST_STREAM`).
#[derive(Debug, Clone, Default)]
pub(crate) struct HostFailure(Arc<OnceLock<String>>);

impl HostFailure {
    fn set(&self, message: String) {
        let _ = self.0.set(message);
    }

    /// `err` as the host stream's failure when the stream failed (whatever Lance made of the
    /// error it got from it); `err` unchanged otherwise.
    pub(crate) fn explain(&self, what: &str, err: HostError) -> HostError {
        match self.0.get() {
            Some(msg) => HostError::new(LanceErrorCode::LANCE_ERR_HOST_STREAM, format!("{what}: the host's stream failed: {msg}")),
            None => err,
        }
    }
}

/// The host's batches with their failures recorded in a [`HostFailure`].
struct Watched {
    inner: Batches,
    schema: SchemaRef,
    failure: HostFailure,
    batch: u64,
    done: bool,
    /// The progress receiver of the call context bound when the write started.
    progress: Option<crate::cancel::Token>,
    /// Rows taken from the host's stream, and how many of them the last report gave.
    rows: u64,
    reported: u64,
}

/// Rows between two progress reports of a write (besides its first and its last).
const REPORT_EVERY_ROWS: u64 = 65_536;

impl Watched {
    /// Stage "write": rows taken from the host's stream so far (`total` 0: unknown until the
    /// stream ends, when `done` = `total` = every row).
    fn report(&mut self, end: bool) {
        if let Some(t) = &self.progress {
            let total = if end { self.rows } else { 0 };
            t.report(&crate::cancel::Progress { stage: "write", done: self.rows, total, unit: "rows" });
            self.reported = self.rows;
        }
    }
}

impl Iterator for Watched {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let i = self.batch;
        self.batch += 1;
        if i == 0 {
            self.report(false);
        }
        // Importing a host's batch can panic inside arrow (a batch whose layout does not match
        // the stream's schema): that is the host stream's failure, not a crash.
        let item = match crate::logging::catch_quietly(|| self.inner.next()) {
            Ok(item) => item,
            Err(payload) => {
                self.done = true;
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let msg = format!(
                    "batch {i}: a panic while reading the host's stream ({why}; a batch whose layout does not match the stream's schema does this)"
                );
                self.failure.set(msg.clone());
                return Some(Err(ArrowError::ExternalError(msg.into())));
            }
        };
        match item {
            None => {
                self.done = true;
                self.report(true);
                None
            }
            Some(Err(e)) => {
                self.done = true;
                self.failure.set(format!("batch {i}: {e}"));
                Some(Err(e))
            }
            Some(Ok(b)) if b.schema().fields() != self.schema.fields() => {
                self.done = true;
                let msg = format!(
                    "batch {i} has the schema {}, the stream declared {} (every batch must have the stream's schema)",
                    b.schema(),
                    self.schema
                );
                self.failure.set(msg.clone());
                Some(Err(ArrowError::SchemaError(msg)))
            }
            Some(Ok(b)) => {
                self.rows += b.num_rows() as u64;
                if self.rows - self.reported >= REPORT_EVERY_ROWS {
                    self.report(false);
                }
                Some(Ok(b))
            }
        }
    }
}

impl RecordBatchReader for Watched {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// `data` watched: its failures are recorded in the returned [`HostFailure`], a batch whose
/// schema is not the stream's ends it with an error, and the rows taken from it are reported to
/// the progress receiver of the call context bound to the calling thread (stage "write").
pub(crate) fn watch(data: Batches) -> (Batches, HostFailure) {
    let failure = HostFailure::default();
    let schema = data.schema();
    let watched = Watched {
        inner: data,
        schema,
        failure: failure.clone(),
        batch: 0,
        done: false,
        progress: crate::cancel::current(),
        rows: 0,
        reported: 0,
    };
    (Box::new(watched), failure)
}

/// The host's batches as the async stream Lance writes from. The host's stream is read on a
/// thread of its own, never on the session's runtime: a host stream may block (its
/// `get_next` computes or does I/O), and a lance-host stream (a scan written into another
/// table) must not be read from inside the runtime. At most `READ_AHEAD` batches wait. A batch
/// whose pages would be too large goes on as row slices (`pages::cut`). When Lance stops early
/// (an error), the reader thread stops and releases the host's stream.
pub(crate) fn into_write_source(data: Batches, failure: &HostFailure) -> Result<SendableRecordBatchStream> {
    host_stream(data, true, failure)
}

/// The host's batches as the async stream of a merge-insert's source: as `into_write_source`,
/// but the batches go on whole. Lance joins the source with the table and writes the join's
/// output, which comes in batches of its own size, so the pages stay small without slicing
/// (a 200,000-row source batch left `vec` pages of at most 11.5 MiB); with slices a 100,000-row
/// upsert took 306-393 ms, without them 200-249 ms (one build, 6 alternating runs; against
/// pylance 1.12x (0.99-1.16) and 0.92x (0.88-1.04), bench/WRITE.md).
pub(crate) fn into_merge_source(data: Batches, failure: &HostFailure) -> Result<SendableRecordBatchStream> {
    host_stream(data, false, failure)
}

fn host_stream(data: Batches, cut_pages: bool, failure: &HostFailure) -> Result<SendableRecordBatchStream> {
    use lance::deps::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    let schema = data.schema();
    let (tx, mut rx) = tokio::sync::mpsc::channel(READ_AHEAD);
    let failure = failure.clone();
    std::thread::Builder::new()
        .name("lance-host-write-source".into())
        .spawn(move || {
            let fed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| feed(data, &tx, cut_pages)));
            if fed.is_err() {
                // The stream must end in an error, never as if it had ended: Lance would commit
                // the rows it got so far.
                let msg = "a panic while reading the host's stream".to_string();
                failure.set(msg.clone());
                let _ = tx.blocking_send(Err(DataFusionError::Execution(msg)));
            }
        })
        .map_err(|e| HostError::internal(format!("cannot start the thread that reads the host's stream: {e}")))?;
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

/// Send the host's batches to Lance; with `cut_pages` a large batch as row slices (`pages::cut`:
/// the pages it leaves stay small). Stops after the first error, which it sends on, or when
/// Lance is gone.
fn feed(data: Batches, tx: &tokio::sync::mpsc::Sender<std::result::Result<RecordBatch, DataFusionError>>, cut_pages: bool) {
    for batch in data {
        let slices = match batch.and_then(|b| if cut_pages { super::pages::cut(b) } else { Ok(vec![b]) }) {
            Ok(slices) => slices,
            Err(e) => {
                let _ = tx.blocking_send(Err(DataFusionError::ArrowError(Box::new(e), None)));
                return;
            }
        };
        for slice in slices {
            if tx.blocking_send(Ok(slice)).is_err() {
                return;
            }
        }
    }
}

/// A pinned handle must be of the table written to, and only appends and overwrites have one.
pub(crate) fn check_destination(uri: &str, at: Option<&Snapshot>, mode: WriteMode) -> Result<()> {
    snapshot::validate_uri(uri)?;
    if let Some(s) = at {
        if mode == WriteMode::Create {
            return Err(HostError::invalid(format!(
                "the write's mode is create (the default), which makes a new table and takes no dataset handle, \
                 but it got one of '{}': to add rows to that table set the mode to append (LANCE_WRITE_APPEND), \
                 to replace them overwrite",
                s.uri()
            )));
        }
        if s.uri().trim_end_matches('/') != uri.trim_end_matches('/') {
            return Err(HostError::invalid(format!(
                "the dataset handle is of table '{}', not of '{uri}'",
                s.uri()
            )));
        }
    }
    Ok(())
}
