//! The global session: configure rules and cache statistics.

use lance_host::ffi::session::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;

const CHILD_ENV: &str = "LANCE_HOST_TEST_CHILD";

fn options() -> LanceSessionOptions {
    let mut o = std::mem::MaybeUninit::<LanceSessionOptions>::uninit();
    assert_eq!(lance_session_options_default_v2(o.as_mut_ptr(), std::mem::size_of::<LanceSessionOptions>()), 0);
    unsafe { o.assume_init() }
}

fn stats() -> LanceSessionStats {
    let mut s = LanceSessionStats::default();
    assert_eq!(lance_session_stats_v2(&mut s), 0, "{}", last_message());
    s
}

/// Runs in a fresh process (re-executing this test binary): configure before first use.
#[test]
#[ignore = "run by configure_in_fresh_process in its own process"]
fn child_configure_before_first_use() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    // Invalid values are rejected and poison nothing.
    let mut bad = options();
    bad.worker_threads = 0;
    assert_err(
        lance_session_configure_v2(&bad),
        LANCE_ERR_INVALID_ARGUMENT,
        "worker_threads",
    );
    let mut huge = options();
    huge.index_cache_bytes = u64::MAX;
    assert_err(
        lance_session_configure_v2(&huge),
        LANCE_ERR_INVALID_ARGUMENT,
        "index_cache_bytes",
    );
    let mut huge_io = options();
    huge_io.scan_io_buffer_bytes = u64::MAX;
    assert_err(
        lance_session_configure_v2(&huge_io),
        LANCE_ERR_INVALID_ARGUMENT,
        "scan_io_buffer_bytes",
    );
    // A corrected call succeeds; repeating the same values is fine.
    let mut good = options();
    good.worker_threads = 3;
    good.scan_io_buffer_bytes = 1 << 20;
    good.scan_batch_readahead = 1;
    good.scan_fragment_readahead = 1;
    good.index_cache_bytes = 64 << 20;
    good.metadata_cache_bytes = 32 << 20;
    assert_eq!(lance_session_configure_v2(&good), 0, "{}", last_message());
    assert_eq!(lance_session_configure_v2(&good), 0);
    // Different values before first use: rejected, the first configuration stays.
    let mut other = good;
    other.worker_threads = 2;
    assert_err(
        lance_session_configure_v2(&other),
        LANCE_ERR_FAILED_PRECONDITION,
        "different values",
    );
    // First use starts the session with the configured values.
    let ds = Ds::open(&people_uri(), 0);
    let mut rows = 0u64;
    assert_eq!(lance_dataset_count_rows_ptr(&ds, &mut rows), 0);
    assert!(rows > 0);
    let running = lance_host::session::global().unwrap().config.clone();
    assert_eq!(running.worker_threads, 3);
    assert_eq!(running.index_cache_bytes, 64 << 20);
    assert_eq!(running.scan_io_buffer_bytes, 1 << 20);
    assert_eq!(running.scan_batch_readahead, 1);
    assert_eq!(running.scan_fragment_readahead, 1);
    // Scans under the session's tight defaults return every row.
    let batches = scan(&ds, &default_opts()).unwrap();
    assert_eq!(total_rows(&batches) as u64, rows);
    // Configure after first use: rejected, the running session keeps working.
    assert_err(
        lance_session_configure_v2(&good),
        LANCE_ERR_FAILED_PRECONDITION,
        "already running",
    );
    let mut again = 0u64;
    assert_eq!(lance_dataset_count_rows_ptr(&ds, &mut again), 0);
    assert_eq!(again, rows);
    // Handles share the session's caches: in this single-threaded process nothing else moves
    // the counters, so a second open of a version served from the cache adds hits and no
    // misses.
    let uri = events_uri();
    drop(Ds::open(&uri, 1));
    let before = stats();
    let second = Ds::open(&uri, 1);
    let after = stats();
    assert!(after.metadata_hits > before.metadata_hits, "{before:?} -> {after:?}");
    assert_eq!(after.metadata_misses, before.metadata_misses, "{before:?} -> {after:?}");
    drop(second);
    // Blocking work (local reads among it) runs on at most as many threads as there are
    // workers: 24 blocking tasks that each hold their thread for a while never see more than
    // 3 of them at once, and the process gains at most 3 threads for them.
    let runtime = &lance_host::session::global().unwrap().runtime;
    let threads_before = runtime_threads();
    let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let (running, peak) = (running.clone(), peak.clone());
            runtime.spawn_blocking(move || {
                use std::sync::atomic::Ordering::SeqCst;
                let now = running.fetch_add(1, SeqCst) + 1;
                peak.fetch_max(now, SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                running.fetch_sub(1, SeqCst);
            })
        })
        .collect();
    for t in tasks {
        runtime.block_on(t).unwrap();
    }
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=3).contains(&peak), "{peak} blocking tasks ran at once");
    let threads_after = runtime_threads();
    assert!(threads_after <= threads_before + 3, "{threads_before} -> {threads_after} runtime threads");
    println!("CHILD-OK");
}

/// Threads of this process that belong to the session's runtime (workers and blocking threads
/// share its thread name, which the kernel cuts to 15 bytes).
fn runtime_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "lance-host-work")
        .count()
}

fn lance_dataset_count_rows_ptr(ds: &Ds, out: &mut u64) -> i32 {
    lance_host::ffi::dataset::lance_dataset_count_rows(ds.ptr(), out)
}

#[test]
fn configure_in_fresh_process() {
    run_child(
        "session::child_configure_before_first_use",
        &[(CHILD_ENV, std::ffi::OsStr::new("1"))],
    );
}

#[test]
fn default_scan_bounds_are_automatic() {
    // 0 = automatic: the library's bounds for local tables, Lance's defaults on object stores.
    let o = options();
    assert_eq!((o.scan_io_buffer_bytes, o.scan_fragment_readahead, o.scan_batch_readahead), (0, 0, 0));
}

#[test]
fn configure_after_first_use_is_rejected() {
    // Any of the tests in this process may have started the session; make sure it is.
    stats();
    let o = options();
    assert_err(
        lance_session_configure_v2(&o),
        LANCE_ERR_FAILED_PRECONDITION,
        "already running",
    );
    // Validation comes first: invalid values are INVALID_ARGUMENT even now.
    let mut bad = o;
    bad.worker_threads = 5000;
    assert_err(
        lance_session_configure_v2(&bad),
        LANCE_ERR_INVALID_ARGUMENT,
        "worker_threads",
    );
    assert_err(
        lance_session_configure_v2(std::ptr::null()),
        LANCE_ERR_INVALID_ARGUMENT,
        "options",
    );
    assert_err(
        lance_session_stats_v2(std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    assert_err(
        lance_session_options_default_v2(std::ptr::null_mut(), std::mem::size_of::<LanceSessionOptions>()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
}
