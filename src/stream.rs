//! The reader every stream of the library is: a Lance record-batch stream driven on the
//! session's runtime (at most `PREFETCH_BATCHES` finished batches ahead), read blocking
//! (`Iterator`) or polled (`poll_batch`), with its operation's I/O statistics, its cancellation
//! and deadline, an optional dynamic filter applied as batches are handed over, and errors
//! that name the table.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use futures::{Stream, StreamExt};
use lance::dataset::scanner::Scanner;

use crate::cancel;
use crate::error::{HostError, Result};
use crate::io_stats::OpStats;
use crate::session;
use crate::snapshot::Snapshot;

pub type BoxedBatchStream = Pin<Box<dyn Stream<Item = lance::Result<RecordBatch>> + Send>>;

/// Finished batches a driven stream may hold ready for the host beyond the one being read.
/// The scan itself keeps its own bounded read-ahead (`batch_readahead`, `io_buffer_bytes`).
pub const PREFETCH_BATCHES: usize = 2;

/// What the task driving a stream hands to the reading thread.
enum Msg {
    Batch(lance::Result<RecordBatch>),
    /// The stream reached its end normally.
    End,
}

/// Where a reader's batches come from.
enum Source {
    /// Batches already in memory (take, merge).
    Ready(std::vec::IntoIter<RecordBatch>),
    /// A Lance stream driven by a task on the global runtime: decoding, filtering and
    /// projection run on runtime workers; the host thread only receives finished batches.
    Driven {
        rx: tokio::sync::mpsc::Receiver<Msg>,
        task: tokio::task::JoinHandle<()>,
        handle: tokio::runtime::Handle,
    },
    Finished,
    /// Ended with this error (reported again if the consumer asks again).
    Failed(HostError),
}

/// Poll `stream` on a runtime worker and send each batch, at most `PREFETCH_BATCHES` ahead of
/// the reader. Ends after the first error, at the end of the stream, or when the reader is
/// gone; the stream is dropped here, on the runtime.
async fn drive(mut stream: BoxedBatchStream, tx: tokio::sync::mpsc::Sender<Msg>) {
    use futures::FutureExt;
    loop {
        let next = AssertUnwindSafe(stream.next()).catch_unwind().await;
        let msg = match next {
            Ok(Some(Ok(batch))) => Msg::Batch(Ok(batch)),
            Ok(Some(Err(e))) => Msg::Batch(Err(e)),
            Ok(None) => Msg::End,
            Err(_) => Msg::Batch(Err(lance::Error::internal(
                "panic while reading the next batch".to_string(),
            ))),
        };
        let last = !matches!(msg, Msg::Batch(Ok(_)));
        if tx.send(msg).await.is_err() || last {
            return;
        }
    }
}

/// A blocking record batch reader over a Lance stream that runs on the global runtime. It
/// owns everything it reads from, so it may outlive the handle that created it and move
/// threads. Dropping it stops the work behind it.
pub struct BatchReader {
    schema: SchemaRef,
    source: Source,
    stats: OpStats,
    /// This stream's own cancellation (`lance_stream_cancel`).
    token: cancel::Token,
    /// What stops it: its own token and the call context bound when it was created.
    watch: cancel::Watch,
    /// The code of the error that ended the stream, once it failed.
    failure: Arc<OnceLock<crate::error::LanceErrorCode>>,
    /// What a read error message starts with (names the table and version).
    context: String,
    /// For local tables: the table path as Lance's object-store errors print it (without the
    /// leading '/'), and as the host knows it.
    local_path: Option<(String, String)>,
    /// Set when the library itself consumes this stream (a merge's or refine's input): its rows
    /// are not counted as returned to the host (the output that carries them is).
    consumed: Arc<std::sync::atomic::AtomicBool>,
    /// Non-blocking reads: the waker of the latest pending poll, and the task that wakes it
    /// when the stream is cancelled or its deadline passes (started at the first pending poll).
    stop_waker: Arc<std::sync::Mutex<Option<std::task::Waker>>>,
    stop_task: Option<tokio::task::JoinHandle<()>>,
    /// The end was reported by a poll: polling again is a caller error.
    end_polled: bool,
    /// A dynamic filter applied to each batch before it is returned.
    post: Option<crate::dynamic_filter::Applied>,
}

/// The outcome of a non-blocking read (`BatchReader::poll_batch`).
#[derive(Debug)]
pub enum Polled {
    /// The next batch.
    Ready(RecordBatch),
    /// Nothing yet; the waker passed to the poll is woken when polling again may progress.
    Pending,
    /// The stream ended normally.
    End,
}

impl BatchReader {
    /// Plan the scanner's stream and start driving it on the runtime.
    pub fn start(scanner: Scanner, context: &str) -> Result<Self> {
        let stream = session::block_on(async move { scanner.try_into_stream().await })?
            .map_err(|e| HostError::from_lance(context, e))?;
        let schema = lance::io::RecordBatchStream::schema(&stream);
        Self::from_stream(schema, Box::pin(stream))
    }

    /// Start driving `stream` on the global runtime.
    pub fn from_stream(schema: SchemaRef, stream: BoxedBatchStream) -> Result<Self> {
        let runtime = &session::global()?.runtime;
        let (tx, rx) = tokio::sync::mpsc::channel(PREFETCH_BATCHES);
        let task = runtime.spawn(drive(stream, tx));
        let token = cancel::Token::new(None);
        Ok(Self {
            schema,
            source: Source::Driven {
                rx,
                task,
                handle: runtime.handle().clone(),
            },
            stats: OpStats::default(),
            watch: cancel::Watch::current().with(token.clone()),
            token,
            failure: Arc::default(),
            context: "scan failed".to_string(),
            local_path: None,
            consumed: Arc::default(),
            stop_waker: Arc::default(),
            stop_task: None,
            end_polled: false,
            post: None,
        })
    }

    /// A reader over one batch that is already in memory.
    pub fn from_batch(batch: RecordBatch) -> Self {
        let token = cancel::Token::new(None);
        Self {
            schema: batch.schema(),
            source: Source::Ready(vec![batch].into_iter()),
            stats: OpStats::default(),
            watch: cancel::Watch::current().with(token.clone()),
            token,
            failure: Arc::default(),
            context: "scan failed".to_string(),
            local_path: None,
            consumed: Arc::default(),
            stop_waker: Arc::default(),
            stop_task: None,
            end_polled: false,
            post: None,
        }
    }

    /// Name the table and version in the messages of read errors.
    pub fn reading(mut self, snapshot: &Snapshot) -> Self {
        self.context = format!("reading table '{}' at version {} failed", snapshot.uri(), snapshot.version());
        let path = snapshot.uri().trim_start_matches("file://");
        if snapshot.is_local() && path.starts_with('/') {
            self.local_path = Some((format!(" {}", &path[1..]), format!(" {path}")));
        }
        self
    }

    /// The handle that cancels this stream from any thread.
    pub fn cancel_token(&self) -> cancel::Token {
        self.token.clone()
    }

    /// The code of the error that ended the stream (cancellation and deadlines included).
    pub fn failure(&self) -> Arc<OnceLock<crate::error::LanceErrorCode>> {
        self.failure.clone()
    }

    /// Filter every batch returned from now on with `applied` (its output schema becomes the
    /// stream's); batches it empties are skipped.
    pub fn with_dynamic_filter(mut self, applied: crate::dynamic_filter::Applied) -> Self {
        self.schema = applied.output_schema();
        self.post = Some(applied);
        self
    }

    /// Attach the counters of the operation that produced this reader.
    pub fn with_stats(mut self, stats: OpStats) -> Self {
        self.stats = stats;
        self
    }

    /// The flag that marks this stream as consumed by the library (see `consumed`).
    pub fn consumed_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.consumed.clone()
    }

    /// The operation's counters (live; shared with the reader).
    pub fn stats(&self) -> OpStats {
        self.stats.clone()
    }

    /// Collect every remaining batch (used by Rust callers and tests).
    pub fn collect_batches(self) -> std::result::Result<Vec<RecordBatch>, ArrowError> {
        self.collect()
    }

    /// Wait for the driving task's next message on this (non-runtime) thread, or for the
    /// stream's cancellation or deadline, whichever comes first.
    fn receive(&mut self) -> Option<Result<RecordBatch>> {
        let Source::Driven { rx, handle, .. } = &mut self.source else {
            return None;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            return Some(Err(HostError::precondition(
                "lance-host streams must not be read from inside an async runtime thread",
            )));
        }
        // A stream inherited through fork(): its driving task lives in the parent.
        if let Err(e) = session::global() {
            return Some(Err(e));
        }
        let watch = &self.watch;
        let got = match watch.stopped_now() {
            Some(stop) => Err(stop),
            None => handle.block_on(async {
                tokio::select! {
                    biased;
                    stop = watch.stopped() => Err(stop),
                    msg = rx.recv() => Ok(msg),
                }
            }),
        };
        match got {
            Ok(msg) => self.message(msg),
            Err(stop) => Some(Err(stop.error("the stream stopped"))),
        }
    }

    /// What a message from the driving task means for the reader (None: the end).
    fn message(&self, msg: Option<Msg>) -> Option<Result<RecordBatch>> {
        match msg {
            Some(Msg::Batch(Ok(batch))) => Some(Ok(batch)),
            Some(Msg::Batch(Err(e))) => {
                let mut err = HostError::from_lance(&self.context, e);
                if let Some((lance_form, path)) = &self.local_path {
                    err.message = err.message.replace(lance_form.as_str(), path.as_str());
                }
                Some(Err(err))
            }
            Some(Msg::End) => None,
            // The task ended without saying so (aborted with the runtime): never report a
            // partial result as complete.
            None => Some(Err(HostError::internal(
                "the scan task stopped before the end of the stream",
            ))),
        }
    }

    /// Read the next batch without blocking. `Pending` registers `waker`, which is woken (from
    /// a runtime thread) when a batch, the end or an error is ready, or when the stream is
    /// cancelled or its deadline passes; only the waker of the latest poll is kept. A failed
    /// stream fails again with its error; polling after the end was reported is
    /// FAILED_PRECONDITION. Never blocks, so it may run on any thread except inside the
    /// runtime.
    pub fn poll_batch(&mut self, waker: &std::task::Waker) -> Result<Polled> {
        loop {
            match self.poll_batch_once(waker)? {
                // a batch the dynamic filter emptied: look at the next one
                Polled::Ready(b) if b.num_rows() == 0 && self.post.is_some() => continue,
                other => return Ok(other),
            }
        }
    }

    fn poll_batch_once(&mut self, waker: &std::task::Waker) -> Result<Polled> {
        use std::task::{Context, Poll};
        let item = match &mut self.source {
            Source::Finished if self.end_polled => {
                return Err(HostError::precondition(
                    "the stream has already reached its end: release it",
                ))
            }
            Source::Finished => None,
            Source::Failed(e) => return Err(e.clone()),
            Source::Ready(batches) => match self.watch.stopped_now() {
                Some(stop) => Some(Err(stop.error("the stream stopped"))),
                None => batches.next().map(Ok),
            },
            Source::Driven { .. } => match self.watch.stopped_now() {
                Some(stop) => Some(Err(stop.error("the stream stopped"))),
                None => {
                    if let Err(e) = session::global() {
                        return Err(e);
                    }
                    if let Ok(mut slot) = self.stop_waker.lock() {
                        *slot = Some(waker.clone());
                    }
                    let Source::Driven { rx, handle, .. } = &mut self.source else { unreachable!() };
                    let mut cx = Context::from_waker(waker);
                    match catch_unwind(AssertUnwindSafe(|| rx.poll_recv(&mut cx))) {
                        Ok(Poll::Pending) => {
                            if self.stop_task.is_none() {
                                let watch = self.watch.clone();
                                let slot = self.stop_waker.clone();
                                self.stop_task = Some(handle.spawn(async move {
                                    watch.stopped().await;
                                    let waker = slot.lock().ok().and_then(|mut w| w.take());
                                    if let Some(w) = waker {
                                        w.wake();
                                    }
                                }));
                            }
                            return Ok(Polled::Pending);
                        }
                        Ok(Poll::Ready(msg)) => self.message(msg),
                        Err(_) => Some(Err(HostError::internal("panic while polling the next batch"))),
                    }
                }
            },
        };
        match self.settle(item) {
            None => {
                self.end_polled = true;
                Ok(Polled::End)
            }
            Some(Ok(batch)) => Ok(Polled::Ready(batch)),
            Some(Err(e)) => Err(e),
        }
    }

    /// Account for what a read produced: count returned batches, finish the stream at its end
    /// and keep the error of a failed one.
    fn settle(&mut self, item: Option<Result<RecordBatch>>) -> Option<Result<RecordBatch>> {
        match item {
            None => {
                self.release();
                None
            }
            Some(Ok(batch)) => {
                let batch = match self.post.as_mut() {
                    None => batch,
                    Some(post) => match post.apply(batch) {
                        Ok(filtered) => filtered,
                        Err(err) => return self.settle(Some(Err(err))),
                    },
                };
                if !self.consumed.load(std::sync::atomic::Ordering::Relaxed) {
                    crate::metrics::batch_returned(batch.num_rows(), batch.get_array_memory_size());
                }
                Some(Ok(batch))
            }
            Some(Err(err)) => {
                // A failed stream is finished: stop its remaining work now.
                self.release();
                let _ = self.failure.set(err.code);
                self.source = Source::Failed(err.clone());
                Some(Err(err))
            }
        }
    }
}

impl Iterator for BatchReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_once() {
                // a batch the dynamic filter emptied: read the next one
                Some(Ok(b)) if b.num_rows() == 0 && self.post.is_some() => continue,
                other => return other,
            }
        }
    }
}

impl BatchReader {
    fn next_once(&mut self) -> Option<std::result::Result<RecordBatch, ArrowError>> {
        let item = match &mut self.source {
            Source::Finished => return None,
            // A failed stream keeps failing: it never looks complete.
            Source::Failed(e) => return Some(Err(ArrowError::ExternalError(Box::new(e.clone())))),
            Source::Ready(batches) => match self.watch.stopped_now() {
                Some(stop) => Some(Err(stop.error("the stream stopped"))),
                None => batches.next().map(Ok),
            },
            Source::Driven { .. } => {
                match catch_unwind(AssertUnwindSafe(|| self.receive())) {
                    Ok(item) => item,
                    Err(_) => Some(Err(HostError::internal("panic while waiting for the next batch"))),
                }
            }
        };
        self.settle(item).map(|r| r.map_err(|err| ArrowError::ExternalError(Box::new(err))))
    }
}

impl BatchReader {
    fn release(&mut self) {
        if let Source::Driven { task, .. } = std::mem::replace(&mut self.source, Source::Finished)
        {
            // Aborting drops the stream on the runtime, which cancels its I/O and decode tasks;
            // the receiver dropped here makes a task blocked on a full channel end too.
            task.abort();
        }
        if let Some(task) = self.stop_task.take() {
            task.abort();
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
