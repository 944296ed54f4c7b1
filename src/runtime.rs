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

/// Stack of every thread that parses or evaluates a host's filter or expression: the runtime's
/// workers and blocking threads, and the threads a parallel aggregate starts. The SQL parser
/// refuses nesting past its own depth limit, but below it a deeply nested filter (`NOT NOT …`,
/// `abs(abs(…))`, nested `CASE`) recurses through parsing, planning and simplification in frames
/// that a debug build makes large: 24 levels overflowed tokio's default 2 MiB and killed the
/// process. 16 MiB answers every depth the parser accepts in every build profile (the stack is
/// reserved address space; only the pages a thread touches are committed).
pub const WORKER_STACK_BYTES: usize = 16 << 20;

/// Build the multi-threaded runtime of the global session.
pub fn build(worker_threads: u32) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads as usize)
        .thread_stack_size(WORKER_STACK_BYTES)
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

/// Run `fut` as a task on one of `runtime`'s worker threads and wait for it from the host
/// thread; otherwise as `block_on` (the refusal inside a runtime, the call context: a stopped
/// call aborts the task). What a future does while it is polled — a plan drained to its end,
/// with its filter and aggregate evaluated as batches arrive — then runs on a worker beside the
/// tasks Lance spawns, not on the host thread, which `block_on` polls on: a count of 3,000,000
/// rows with a filter used one core that way (bench/PATHS.md). A panic in the task is
/// LANCE_ERR_INTERNAL.
pub fn run_on_worker<F>(runtime: &Runtime, fut: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(HostError::precondition(
            "lance-host functions must not be called from inside an async runtime thread",
        ));
    }
    /// Aborts the task when the wait ends early (a stopped call); no-op once it finished.
    struct AbortOnDrop(tokio::task::AbortHandle);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let task = runtime.spawn(fut);
    let _abort = AbortOnDrop(task.abort_handle());
    block_on(runtime, task)?.map_err(|e| {
        if e.is_panic() {
            HostError::internal("a task of the call panicked")
        } else {
            HostError::internal(format!("a task of the call stopped: {e}"))
        }
    })
}


#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::error::LanceErrorCode;

    #[test]
    fn run_on_worker_runs_on_a_worker_and_reports_a_panic() {
        let rt = build(2).unwrap();
        let name = run_on_worker(&rt, async { std::thread::current().name().map(str::to_string) }).unwrap();
        assert_eq!(name.as_deref(), Some("lance-host-worker"));
        let e = run_on_worker(&rt, async {
            if std::hint::black_box(true) {
                panic!("a panicking task (expected by the test)");
            }
        })
        .unwrap_err();
        assert_eq!(e.code, LanceErrorCode::LANCE_ERR_INTERNAL);
        assert!(e.message.contains("panicked"), "{}", e.message);
    }

    #[test]
    fn a_stopped_call_aborts_its_task() {
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let rt = build(2).unwrap();
        let token = crate::cancel::Token::new(None);
        let (stopper, dropped) = (token.clone(), Arc::new(AtomicBool::new(false)));
        let flag = Flag(dropped.clone());
        crate::cancel::set_current(Some(token));
        let cancel = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            stopper.cancel();
        });
        let e = run_on_worker(&rt, async move {
            let _flag = flag;
            std::future::pending::<()>().await
        })
        .unwrap_err();
        crate::cancel::set_current(None);
        cancel.join().unwrap();
        assert_eq!(e.code, LanceErrorCode::LANCE_ERR_CANCELLED);
        let until = Instant::now() + Duration::from_secs(10);
        while !dropped.load(Ordering::SeqCst) {
            assert!(Instant::now() < until, "the task of the stopped call still runs");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
