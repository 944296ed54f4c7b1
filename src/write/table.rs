//! A whole write in one process: create, append to or overwrite a table from a stream of
//! batches, committed as one new version. It is the staged protocol run in one place (stage,
//! then commit), so it has the same retries, conflict errors and exactly-once rule.

use arrow::record_batch::RecordBatchReader;

use super::{staged, WriteMode, WriteOptions, WriteSummary};
use crate::error::{HostError, Result};
use crate::snapshot::{self, Snapshot};

/// The source of rows a host hands over.
pub type Batches = Box<dyn RecordBatchReader + Send>;

/// Batches read ahead of the writer.
const READ_AHEAD: usize = 2;

/// The host's batches as the async stream Lance writes from. The host's stream is read on a
/// thread of its own, never on the session's runtime: a host stream may block (its
/// `get_next` computes or does I/O), and a lance-host stream (a scan written into another
/// table) must not be read from inside the runtime. At most `READ_AHEAD` batches wait. A batch
/// whose pages would be too large goes on as row slices (`pages::cut`). When Lance stops early
/// (an error), the reader thread stops and releases the host's stream.
pub(crate) fn into_write_source(data: Batches) -> Result<lance::deps::datafusion::physical_plan::SendableRecordBatchStream> {
    host_stream(data, true)
}

/// The host's batches as the async stream of a merge-insert's source: as `into_write_source`,
/// but the batches go on whole. Lance joins the source with the table and writes the join's
/// output, which comes in batches of its own size, so the pages stay small without slicing
/// (a 200,000-row source batch left `vec` pages of at most 11.5 MiB); with slices a 100,000-row
/// upsert took 306-393 ms, without them 200-249 ms (one build, 6 alternating runs; against
/// pylance 1.12x (0.99-1.16) and 0.92x (0.88-1.04), bench/WRITE.md).
pub(crate) fn into_merge_source(data: Batches) -> Result<lance::deps::datafusion::physical_plan::SendableRecordBatchStream> {
    host_stream(data, false)
}

fn host_stream(data: Batches, cut_pages: bool) -> Result<lance::deps::datafusion::physical_plan::SendableRecordBatchStream> {
    use lance::deps::datafusion::error::DataFusionError;
    use lance::deps::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    let schema = data.schema();
    let (tx, mut rx) = tokio::sync::mpsc::channel(READ_AHEAD);
    std::thread::Builder::new()
        .name("lance-host-write-source".into())
        .spawn(move || {
            let fed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| feed(data, &tx, cut_pages)));
            if fed.is_err() {
                // The stream must end in an error, never as if it had ended: Lance would commit
                // the rows it got so far.
                let msg = "a panic while reading the host's stream".to_string();
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
fn feed(
    data: Batches,
    tx: &tokio::sync::mpsc::Sender<std::result::Result<arrow::record_batch::RecordBatch, lance::deps::datafusion::error::DataFusionError>>,
    cut_pages: bool,
) {
    use lance::deps::datafusion::error::DataFusionError;
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

/// Write `data` to the table at `uri` as one new version (`options.mode`: create, append or
/// overwrite). `at` pins the version an append or overwrite is planned at (commits made since
/// are rebased over when compatible, else LANCE_ERR_CONFLICT); None plans an append or
/// overwrite at the latest version. Returns the new version pinned, and what was written. If
/// the stream fails, nothing is committed and the files written so far are deleted.
pub fn write(uri: &str, at: Option<&Snapshot>, data: Batches, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
    options.validate()?;
    let latest;
    let at = match (at, options.mode) {
        (None, WriteMode::Append) => {
            latest = snapshot::open(uri, options.storage_options.clone(), 0)?;
            Some(&latest)
        }
        (None, WriteMode::Overwrite) => match snapshot::open(uri, options.storage_options.clone(), 0) {
            Ok(s) => {
                latest = s;
                Some(&latest)
            }
            Err(e) if e.code == crate::error::LanceErrorCode::LANCE_ERR_NOT_FOUND => None,
            Err(e) => return Err(e),
        },
        (at, _) => at,
    };
    let staged = staged::stage(uri, at, data, options)?;
    let absence_checked = options.mode == WriteMode::Create;
    match staged::commit_planned(uri, vec![staged.clone()], options, at, absence_checked) {
        Ok(done) => Ok(done),
        Err(e) => {
            // The rows of a refused commit must not linger as orphan files. Only a refusal is
            // certain to have committed nothing: after an I/O error, a timeout or an internal
            // error the manifest may have been written, and deleting its files would break
            // that version. Those files are left to cleanup.
            use crate::error::LanceErrorCode::*;
            if matches!(e.code, LANCE_ERR_CONFLICT | LANCE_ERR_INVALID_ARGUMENT) {
                let _ = staged::abort(&[staged], &options.storage_options);
            }
            Err(e)
        }
    }
}

/// A pinned handle must be of the table written to, and only appends and overwrites have one.
pub(crate) fn check_destination(uri: &str, at: Option<&Snapshot>, mode: WriteMode) -> Result<()> {
    snapshot::validate_uri(uri)?;
    if let Some(s) = at {
        if mode == WriteMode::Create {
            return Err(HostError::invalid(format!(
                "a create writes a new table: pass no dataset handle (got one of '{}')",
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
