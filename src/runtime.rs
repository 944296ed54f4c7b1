//! The async runtime that drives Lance for every call of the library. Calls from host threads
//! block on it; Lance's own tasks run on its worker threads.

use std::future::Future;

use tokio::runtime::Runtime;

use crate::error::{HostError, Result};

/// Threads that may run blocking work at once (Lance's local file reads, local object-store
/// operations, CPU-bound steps Lance hands off): as many as the runtime's workers, at least 2.
///
/// Tokio's own default is 512. Each of those threads keeps its own allocator heap, and the
/// buffers of a local read are allocated on the reading thread and freed on another one, so
/// with a dozen reading threads a scan of wide rows peaked about 100 MiB higher
/// (bench/SCAN_MEMORY.md). The threads spend their time in `pread` on the same cores the
/// workers decode on; on 2 cores, more of them did not read faster.
pub fn blocking_threads(worker_threads: u32) -> usize {
    (worker_threads as usize).max(2)
}

/// Build the multi-threaded runtime of the global session.
pub fn build(worker_threads: u32) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads as usize)
        .max_blocking_threads(blocking_threads(worker_threads))
        .thread_name("lance-host-worker")
        .enable_all()
        .build()
        .map_err(|e| HostError::internal(format!("cannot start the async runtime: {e}")))
}

/// Run `fut` to completion on `runtime` from a host thread. Refuses (instead of panicking)
/// when called from inside an async runtime, where blocking would deadlock or abort. If a call
/// context is bound to the thread, the call fails with LANCE_ERR_CANCELLED or
/// LANCE_ERR_TIMEOUT as soon as it is cancelled or its deadline passes, and `fut` is dropped
/// (its work stops).
pub fn block_on<F: Future>(runtime: &Runtime, fut: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(HostError::precondition(
            "lance-host functions must not be called from inside an async runtime thread",
        ));
    }
    let watch = crate::cancel::Watch::current();
    if watch.is_empty() {
        return Ok(runtime.block_on(fut));
    }
    watch.check("the call was not started")?;
    runtime.block_on(async {
        tokio::select! {
            biased;
            stop = watch.stopped() => Err(stop.error("the call stopped")),
            out = fut => Ok(out),
        }
    })
}
