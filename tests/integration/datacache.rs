//! The data cache on object storage (moto on 127.0.0.1): repeated work makes no data request
//! (by the library's counts and by the server's log), a restarted process serves from the disk
//! tier, damage to the disk tier is detected and repaired, a second process on the same
//! directory runs without it, budgets hold under 8 threads, an overwritten table is never
//! served stale, and storage faults while filling do not poison the cache.
//!
//! Scenarios that need their own session settings run in child processes of this binary.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::session::*;
use lance_host::ffi::take::*;

use crate::common::*;
use crate::s3::{open_s3, open_s3_with, private_vectors_table, s3_options, shared};

const SCENARIO: &str = "LANCE_HOST_TEST_DC_SCENARIO";
const DIR: &str = "LANCE_HOST_TEST_DC_DIR";
const TABLES: &str = "LANCE_HOST_TEST_DC_TABLES";
const LOG: &str = "LANCE_HOST_TEST_DC_LOG";

/// A copy of the testkit's `vectors` table of this test's own; returns its URI.
fn private_table(name: &str) -> String {
    private_vectors_table(&format!("dc-{name}"))
}

/// GET/HEAD lines of the server log for the immutable files (data, deletion, index) of `table`.
fn data_requests(log: &Path, table: &str) -> usize {
    data_request_lines(log, table, &["\"GET ", "\"HEAD "]).len()
}

/// The server log's lines of `methods` requests for the immutable files of `table`.
fn data_request_lines(log: &Path, table: &str, methods: &[&str]) -> Vec<String> {
    let path = format!("{}/", table.trim_start_matches("s3://"));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&path) && methods.iter().any(|m| l.contains(m)))
        .filter(|l| l.contains("/data/") || l.contains("/_indices/") || l.contains("/_deletions/"))
        .map(String::from)
        .collect()
}

fn digest_of(batches: &[RecordBatch]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for b in batches {
        h.update(format!("{b:?}").as_bytes());
    }
    h.finalize()
}

fn scan_with(ds: &Ds, cols: &[&str], filter: Option<&str>) -> (u32, LanceIoStats, Vec<u64>) {
    let c = cstrs(cols);
    let f = filter.map(cstr);
    let mut o = default_opts();
    o.columns = c.ptrs.as_ptr();
    o.num_columns = c.ptrs.len();
    o.filter_sql = f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr());
    o.with_row_id = true;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let (batches, st) = collect_with_stats(&mut stream);
    let ids = u64_column(&batches, "_rowid");
    (digest_of(&batches), st, ids)
}

/// The recommended vector path: every split searched (segments with deferred refine), the
/// segments' candidates merged and re-ranked once, merged with the flat splits.
fn search(ds: &Ds, seed: i64) -> (u32, LanceIoStats, Vec<u64>) {
    let col = cstr("embedding");
    let mut plan = std::ptr::null_mut();
    assert_eq!(
        lance_dataset_plan_vector_search(ds.ptr(), col.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan),
        0,
        "{}",
        last_message()
    );
    let query = lance_host_testkit::vector_of(seed);
    let cols = cstrs(&["id", "category"]);
    let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
    lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>());
    let mut q = unsafe { q.assume_init() };
    q.column = col.as_ptr();
    q.vector = query.as_ptr() as _;
    q.dimension = query.len();
    q.k = 10;
    q.nprobes = 4;
    q.refine_factor = 4;
    q.defer_refine = true;
    q.with_row_id = true;
    q.columns = cols.ptrs.as_ptr();
    q.num_columns = cols.ptrs.len();
    let mut total = LanceIoStats::default();
    let (mut approx, mut exact) = (Vec::new(), Vec::new());
    for i in 0..lance_split_plan_count(plan) {
        let split = lance_split_plan_get(plan, i);
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_search_v2(ds.ptr(), split, &q, &mut stream), 0, "{}", last_message());
        // Drain here (stats are per stream), hand the rows on as a fresh stream.
        let (batches, st) = collect_with_stats(&mut stream);
        add_io(&mut total, &st);
        let stream = batches_to_stream(batches);
        if lance_split_kind(split) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32 {
            approx.push(stream);
        } else {
            exact.push(stream);
        }
        lance_split_free(split);
    }
    lance_split_plan_free(plan);
    let mut merged = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(approx.as_mut_ptr(), approx.len(), 40, 0, &mut merged), 0, "{}", last_message());
    let mut refined = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_refine_v2(ds.ptr(), &q, &mut merged, &mut refined), 0, "{}", last_message());
    let (batches, st) = collect_with_stats(&mut refined);
    add_io(&mut total, &st);
    exact.push(batches_to_stream(batches));
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(exact.as_mut_ptr(), exact.len(), 10, 0, &mut out), 0, "{}", last_message());
    let batches = read_stream(out).unwrap();
    let ids = u64_column(&batches, "_rowid");
    (digest_of(&batches), total, ids)
}

fn batches_to_stream(batches: Vec<RecordBatch>) -> FFI_ArrowArrayStream {
    let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| Arc::new(arrow::datatypes::Schema::empty()));
    let reader = arrow::record_batch::RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    FFI_ArrowArrayStream::new(Box::new(reader))
}

fn take(ds: &Ds, ids: &[u64]) -> (u32, LanceIoStats) {
    let cols = cstrs(&["id", "embedding", "category"]);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(
        lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), ids.len(), cols.ptrs.as_ptr(), cols.ptrs.len(), &mut stream),
        0,
        "{}",
        last_message()
    );
    let (batches, st) = collect_with_stats(&mut stream);
    (digest_of(&batches), st)
}

/// Scans (all columns; a filter), two searches and a take of rows both found: the digests of
/// every result and the summed I/O stats.
fn workload(ds: &Ds) -> (Vec<u32>, LanceIoStats) {
    let mut total = LanceIoStats::default();
    let mut digests = Vec::new();
    let (d, st, row_ids) = scan_with(ds, &["id", "category", "embedding", "embedding_f16"], None);
    digests.push(d);
    add_io(&mut total, &st);
    let (d, st, _) = scan_with(ds, &["id", "category"], Some("id >= 1500 AND id < 1700"));
    digests.push(d);
    add_io(&mut total, &st);
    let mut take_ids = Vec::new();
    for seed in [42, 977] {
        let (d, st, ids) = search(ds, seed);
        digests.push(d);
        add_io(&mut total, &st);
        take_ids.extend(ids);
    }
    take_ids.extend(row_ids.iter().step_by(97));
    let (d, st) = take(ds, &take_ids);
    digests.push(d);
    add_io(&mut total, &st);
    (digests, total)
}

fn session_stats() -> LanceSessionStats {
    let mut s = LanceSessionStats { struct_size: std::mem::size_of::<LanceSessionStats>(), ..Default::default() };
    assert_eq!(lance_session_stats_v2(&mut s), 0, "{}", last_message());
    s
}

fn configure(dir: Option<&str>, memory: u64, disk: u64, block: u64) {
    let mut o = std::mem::MaybeUninit::<LanceSessionOptions>::uninit();
    assert_eq!(lance_session_options_default_v2(o.as_mut_ptr(), std::mem::size_of::<LanceSessionOptions>()), 0);
    let mut o = unsafe { o.assume_init() };
    let d = dir.map(cstr);
    o.data_cache_memory_bytes = memory;
    o.data_cache_disk_bytes = disk;
    o.data_cache_block_bytes = block;
    o.data_cache_disk_dir = d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr());
    assert_eq!(lance_session_configure_v2(&o), 0, "{}", last_message());
}

fn digests_line(d: &[u32]) -> String {
    d.iter().map(|x| format!("{x:08x}")).collect::<Vec<_>>().join(",")
}

/// One process of a scenario (see the tests below); prints `DIGESTS=` and `CHILD-OK`.
#[test]
#[ignore = "run by the data cache tests in their own processes"]
fn child_data_cache() {
    let Ok(scenario) = std::env::var(SCENARIO) else { return };
    let s = shared();
    let tables: Vec<String> = std::env::var(TABLES).unwrap().split(',').map(String::from).collect();
    let table = &tables[0];
    let dir = std::env::var(DIR).ok();
    let log = PathBuf::from(std::env::var(LOG).unwrap());
    match scenario.as_str() {
        "fill" | "replay" | "damaged" | "locked" => {
            configure(dir.as_deref(), 32 << 20, 64 << 20, 4 << 10);
            let ds = open_s3(table, &s.endpoint).unwrap();
            let server_before = data_requests(&log, table);
            let (first, st1) = workload(&ds);
            let stats = session_stats();
            let expect_disk = scenario != "locked";
            assert_eq!(stats.data_cache_disk_enabled, expect_disk as u64, "{stats:?}");
            match scenario.as_str() {
                "fill" | "locked" => {
                    assert!(
                        st1.read_requests > 0 && st1.data_cache_misses > 0,
                        "a cold workload read nothing: {st1:?} {:?}",
                        session_stats()
                    );
                }
                "replay" => {
                    // A new process has no credential checked yet: each object the disk tier
                    // serves costs one HEAD with this process's credentials (no data read).
                    if st1.read_bytes != 0 || st1.data_cache_misses != 0 {
                        let lines = data_request_lines(&log, table, &["\"GET ", "\"HEAD "]);
                        let tail: Vec<&String> = lines.iter().rev().take(30).collect();
                        panic!("a restarted process read storage: {st1:?} {:?}\n{tail:#?}", session_stats());
                    }
                    assert!(st1.data_cache_hits > 0, "{st1:?}");
                    std::thread::sleep(Duration::from_millis(200));
                    let heads: Vec<String> = data_request_lines(&log, table, &["\"HEAD "]);
                    let new_heads = &heads[heads.len().saturating_sub(st1.read_requests as usize)..];
                    let objects: std::collections::HashSet<&str> =
                        new_heads.iter().filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/'))).collect();
                    // One check per object, or a few where reads of one object started at once
                    // (each finds no grant yet); never a data read.
                    assert!(!objects.is_empty() && new_heads.len() <= 4 * objects.len(), "{new_heads:#?}");
                    assert_eq!(data_requests(&log, table), server_before + new_heads.len(), "the server saw data reads");
                }
                _ => {
                    // Damaged entries were re-read from storage (and only those).
                    assert!(st1.read_requests > 0, "nothing was re-read from the damaged tier: {st1:?}");
                    assert!(st1.data_cache_hits > 0, "no intact entry survived the damage: {st1:?}");
                }
            }
            // The same work again in this process: nothing from storage.
            let mid = data_requests(&log, table);
            let (second, st2) = workload(&ds);
            assert_eq!(first, second, "results differ on the second run");
            assert_eq!(st2.read_requests, 0, "a repeated workload read storage: {st2:?}");
            assert!(st2.data_cache_hits > 0 && st2.data_cache_misses == 0, "{st2:?}");
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(data_requests(&log, table), mid, "the server saw data requests on the repeat");
            if scenario == "fill" {
                // A column not read before: read once (Lance coalesces the small test files'
                // pages, so it may already be cached; the unit tests check partial reads
                // block by block), then never again.
                let (d3, _, _) = scan_with(&ds, &["id", "embedding_hnsw"], None);
                let (d4, st4, _) = scan_with(&ds, &["id", "embedding_hnsw"], None);
                assert_eq!(d3, d4);
                assert_eq!(st4.read_requests, 0, "{st4:?}");
            }
            assert_eq!(lance_session_flush_data_cache(), 0, "{}", last_message());
            let stats = session_stats();
            println!(
                "ERRORS={} HITS={} MISSES={} DROPS={}",
                stats.data_cache_errors, stats.data_cache_hits, stats.data_cache_misses, stats.data_cache_disk_write_drops
            );
            if scenario == "fill" {
                // Everything the workload read reached the disk tier (the restart relies on it).
                assert_eq!(stats.data_cache_disk_write_drops, 0, "{stats:?}");
            }
            println!("DIGESTS={}", digests_line(&first));
        }
        "budget" => {
            let (memory, disk, block) = (256u64 << 10, 512u64 << 10, 4u64 << 10);
            configure(dir.as_deref(), memory, disk, block);
            let handles: Vec<Arc<Ds>> = tables.iter().map(|t| Arc::new(open_s3(t, &s.endpoint).unwrap())).collect();
            let expected: Vec<Vec<u32>> = handles.iter().map(|h| workload(h).0).collect();
            let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let monitor = {
                let (peak, stop) = (peak.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let st = session_stats();
                        assert!(st.data_cache_memory_bytes <= memory, "memory tier over budget: {st:?}");
                        assert!(st.data_cache_disk_bytes <= disk, "disk tier over budget: {st:?}");
                        peak.fetch_max(st.data_cache_memory_bytes, std::sync::atomic::Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(5));
                    }
                })
            };
            let workers: Vec<_> = (0..8)
                .map(|t| {
                    let (h, exp) = (handles[t % handles.len()].clone(), expected[t % handles.len()].clone());
                    std::thread::spawn(move || {
                        let (got, _) = workload(&h);
                        assert_eq!(got, exp, "thread {t}: results changed under eviction");
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            monitor.join().unwrap();
            assert_eq!(lance_session_flush_data_cache(), 0);
            let st = session_stats();
            assert!(st.data_cache_memory_bytes <= memory && st.data_cache_disk_bytes <= disk, "{st:?}");
            assert!(st.data_cache_storage_bytes >= 4 * disk, "the workload was not 4x the disk budget: {st:?}");
            assert!(st.data_cache_evictions > 0, "{st:?}");
            assert!(st.data_cache_disk_enabled == 1 && st.data_cache_disk_bytes > 0, "{st:?}");
            println!(
                "BUDGET memory_peak={} memory_budget={memory} disk={} disk_budget={disk} fetched={} evictions={}",
                peak.load(std::sync::atomic::Ordering::SeqCst),
                st.data_cache_disk_bytes,
                st.data_cache_storage_bytes,
                st.data_cache_evictions
            );
        }
        other => panic!("unknown scenario {other}"),
    }
    println!("CHILD-OK");
}

fn run(scenario: &str, tables: &[&str], dir: &Path) -> String {
    let s = shared();
    let moto = s.moto.as_ref().expect("parent owns the server");
    run_child(
        "datacache::child_data_cache",
        &[
            (SCENARIO, OsStr::new(scenario)),
            (TABLES, OsStr::new(&tables.join(","))),
            (DIR, dir.as_os_str()),
            (LOG, moto.log_path().as_os_str()),
            ("LANCE_HOST_TEST_S3_ENDPOINT", OsStr::new(&s.endpoint)),
            ("LANCE_HOST_TEST_S3_ROOT", OsStr::new(s.facts.get("root"))),
        ],
    )
}

fn digests(out: &str) -> String {
    out.lines().find_map(|l| l.strip_prefix("DIGESTS=")).expect("DIGESTS line").to_string()
}

/// The cache's files (the lock file aside).
fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name() != Some(OsStr::new(lance_host::datacache::LOCK_FILE)) && p.metadata().unwrap().len() > 0 {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Same work in the same process, then in a restarted process on the same disk tier: no data
/// request either time; then damage (flipped bytes, a truncated file, a deleted file): results
/// stay those of storage, the damage is re-read once and the tier is whole again.
#[test]
fn disk_tier_serves_restarts_and_repairs_damage() {
    let table = private_table("restart");
    let dir = tempfile::tempdir().unwrap();
    let fill = run("fill", &[&table], dir.path());
    for l in fill.lines().filter(|l| l.starts_with("ERRORS=")) {
        println!("FILL-PROCESS {l}");
    }
    let truth = digests(&fill);
    let replay = run("replay", &[&table], dir.path());
    assert_eq!(digests(&replay), truth, "the restarted process returned other results");

    let files = cache_files(dir.path());
    assert!(!files.is_empty(), "the disk tier wrote no file");
    // Flip bytes all over the first file, truncate the second (if any), delete the last.
    {
        use std::io::{Seek, SeekFrom, Write};
        let len = files[0].metadata().unwrap().len();
        let mut f = std::fs::OpenOptions::new().write(true).open(&files[0]).unwrap();
        let mut pos = 4096;
        while pos < len {
            f.seek(SeekFrom::Start(pos)).unwrap();
            f.write_all(&[0xA5; 16]).unwrap();
            pos += 7919;
        }
    }
    if files.len() > 2 {
        let f = std::fs::OpenOptions::new().write(true).open(&files[1]).unwrap();
        f.set_len(files[1].metadata().unwrap().len() / 3).unwrap();
        std::fs::remove_file(files.last().unwrap()).unwrap();
    }
    let damaged = run("damaged", &[&table], dir.path());
    for l in damaged.lines().filter(|l| l.starts_with("ERRORS=")) {
        println!("DAMAGED-PROCESS {l}");
    }
    assert_eq!(digests(&damaged), truth, "a damaged disk tier changed the results");
    // Repaired: the next process reads nothing from storage again.
    let again = run("replay", &[&table], dir.path());
    assert_eq!(digests(&again), truth);
}

/// A second process configured with a directory another process holds runs with the memory
/// tier only (and says so), with correct results.
#[test]
fn a_locked_directory_means_memory_only() {
    let table = private_table("locked");
    let dir = tempfile::tempdir().unwrap();
    let lock = std::fs::File::create(dir.path().join(lance_host::datacache::LOCK_FILE)).unwrap();
    lock.try_lock().unwrap();
    let out = run("locked", &[&table], dir.path());
    drop(lock);
    // Nothing was written into the held directory.
    assert!(cache_files(dir.path()).is_empty(), "a process without the lock wrote the disk tier");
    let fill = run("fill", &[&table], dir.path());
    assert_eq!(digests(&out), digests(&fill));
}

/// Memory and disk usage stay within budget while 8 threads work over three tables (together
/// far more than both budgets), and every result stays right.
#[test]
fn budgets_hold_under_eight_threads() {
    let tables: Vec<String> = (0..3).map(|i| private_table(&format!("budget{i}"))).collect();
    let dir = tempfile::tempdir().unwrap();
    let refs: Vec<&str> = tables.iter().map(String::as_str).collect();
    let out = run("budget", &refs, dir.path());
    let line = out.lines().find(|l| l.starts_with("BUDGET ")).unwrap_or_else(|| panic!("{out}"));
    println!("{line}");
}

/// In this process (default settings: the 256 MiB memory tier): the second identical scan,
/// search and take make no request; a table overwritten at the same path is read fresh.
#[test]
fn default_cache_repeats_without_requests_and_never_serves_stale_data() {
    let s = shared();
    let moto = s.moto.as_ref().expect("parent owns the server");
    let table = private_table("default");
    let ds = open_s3(&table, &s.endpoint).unwrap();
    let (first, st1) = workload(&ds);
    assert!(st1.read_requests > 0, "{st1:?}");
    let before = data_requests(moto.log_path(), &table);
    let (second, st2) = workload(&ds);
    assert_eq!(first, second);
    assert_eq!(st2.read_requests, 0, "{st2:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(data_requests(moto.log_path(), &table), before, "the server saw data requests");

    // Overwrite the table at the same path with other rows.
    let opts = s3_options(&s.endpoint);
    let t = table.clone();
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            lance_host_testkit::write_batch(&t, lance_host_testkit::vectors_batch(5000, 5600), lance::dataset::WriteMode::Overwrite, &opts)
                .await
                .expect("overwrite")
        })
    })
    .join()
    .unwrap();
    let fresh = open_s3(&table, &s.endpoint).unwrap();
    let mut o = default_opts();
    let c = cstrs(&["id"]);
    o.columns = c.ptrs.as_ptr();
    o.num_columns = 1;
    let ids = i64_column(&scan(&fresh, &o).unwrap(), "id");
    assert_eq!(ids, (5000..5600).collect::<Vec<i64>>(), "the overwritten table returned old rows");
    // The pinned old snapshot still reads its own (immutable) files, from the cache.
    let (old_again, st3) = workload(&ds);
    assert_eq!(old_again, first);
    assert_eq!(st3.read_requests, 0, "{st3:?}");
}

/// Storage faults while the cache fills: the failed reads insert nothing, the next read goes to
/// storage again and returns the right rows.
#[test]
fn faults_while_filling_do_not_poison_the_cache() {
    use lance_host_testkit::Faults;
    let s = shared();
    let table = private_table("faults");
    let truth = workload(&open_s3(&table, &s.endpoint).unwrap()).0;
    let moto_port: u16 = s.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = lance_host_testkit::FaultProxy::start(moto_port).unwrap();
    let ep = format!("http://127.0.0.1:{}", proxy.port);
    let mut opts = s3_options(&ep);
    opts.insert("client_max_retries".into(), "0".into());
    let ds = open_s3_with(&table, &opts).unwrap();
    let cols = cstrs(&["id", "category", "embedding"]);
    let mut o = default_opts();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = cols.ptrs.len();
    for faults in [
        Faults { truncate_next: 1000, ..Default::default() },
        Faults { status_burst: Some((503, u32::MAX)), ..Default::default() },
        Faults { reset_next: 1000, ..Default::default() },
    ] {
        proxy.set(faults);
        assert!(scan(&ds, &o).is_err(), "a scan through a failing server succeeded");
    }
    proxy.set(Faults::default());
    let (digests, st) = workload(&ds);
    assert_eq!(digests, truth, "results after faults differ from storage");
    assert!(st.data_cache_misses > 0 && st.read_requests > 0, "{st:?}");
    let (_, again) = workload(&ds);
    assert_eq!(again.read_requests, 0, "{again:?}");
}

/// The storage option `lance_host.data_cache=false` keeps one table out of the cache: its
/// repeated reads go to storage every time; a value other than true/false is refused at open.
#[test]
fn a_table_can_opt_out_of_the_cache() {
    let s = shared();
    let table = private_table("optout");
    let mut opts = s3_options(&s.endpoint);
    opts.insert("lance_host.data_cache".into(), "sometimes".into());
    let e = open_s3_with(&table, &opts).err().expect("opened with a bad data cache option");
    assert_eq!(e.0, lance_host::LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT as i32, "{e:?}");
    assert!(e.1.contains("lance_host.data_cache"), "{e:?}");
    opts.insert("lance_host.data_cache".into(), "false".into());
    let ds = open_s3_with(&table, &opts).unwrap();
    let (d1, st1, _) = scan_with(&ds, &["id", "embedding"], None);
    let (d2, st2, _) = scan_with(&ds, &["id", "embedding"], None);
    assert_eq!(d1, d2);
    // The repeat still goes to storage (fewer requests: file metadata sits in Lance's metadata
    // cache, which the option does not touch).
    assert!(st1.read_requests > 0 && st2.read_requests > 0, "{st1:?} {st2:?}");
    assert_eq!(st2.data_cache_hits + st2.data_cache_misses, 0, "{st2:?}");
}

/// A host built with the 0.2 header passes the 0.2 sizes of the structs that grew in 0.3: the
/// library writes only those bytes (canaries after them stay) and fills what 0.2 knew.
#[test]
fn structs_of_the_0_2_header_still_work() {
    const IO_0_2: usize = 56;
    const SESSION_STATS_0_2: usize = 72;
    let s = shared();
    let table = private_table("abi02");
    let ds = open_s3(&table, &s.endpoint).unwrap();
    let mut o = default_opts();
    let c = cstrs(&["id"]);
    o.columns = c.ptrs.as_ptr();
    o.num_columns = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let (_, full) = collect_with_stats(&mut stream);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let mut a = arrow::ffi::FFI_ArrowArray::empty();
    while unsafe { (stream.get_next.unwrap())(&mut stream, &mut a) } == 0 && !a.is_released() {
        a = arrow::ffi::FFI_ArrowArray::empty();
    }
    // An 0.2-sized LanceIoStats in a larger buffer of canaries.
    let canary = 0xABAB_ABAB_ABAB_ABABu64;
    let mut buf = vec![canary; 16];
    buf[0] = IO_0_2 as u64;
    assert_eq!(lance_stream_io_stats_v2(&stream, buf.as_mut_ptr() as *mut LanceIoStats), 0, "{}", last_message());
    assert!(buf[IO_0_2 / 8..].iter().all(|b| *b == canary), "bytes after the 0.2 struct were written");
    unsafe { (stream.release.unwrap())(&mut stream) };
    let requests = buf[1];
    assert!(full.read_requests > 0, "{full:?}");
    assert_eq!(requests, 0, "the repeated scan (cached) reported storage requests");
    let mut buf = vec![canary; 32];
    buf[0] = SESSION_STATS_0_2 as u64;
    assert_eq!(lance_session_stats_v2(buf.as_mut_ptr() as *mut LanceSessionStats), 0, "{}", last_message());
    assert!(buf[SESSION_STATS_0_2 / 8..].iter().all(|b| *b == canary), "bytes after the 0.2 struct were written");
}

/// Open `token` with these storage options (no storage request: the token carries the manifest).
fn open_token_with(token: &[u8], opts: &lance_host_testkit::StorageOptions) -> Ds {
    let pairs: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (_keep, ptrs) = kv(&pairs);
    let p = lance_host::ffi::dataset::lance_snapshot_open(token.as_ptr(), token.len(), ptrs.as_ptr());
    assert!(!p.is_null(), "{}", last_message());
    Ds(p)
}

/// Every split of the scan plan scanned, and every split of the vector plan searched, each
/// drained: the first error (the call's or the stream's), or the rows read.
fn splits_through(ds: &Ds) -> Result<usize, String> {
    let mut rows = 0;
    let mut plan = std::ptr::null_mut();
    if lance_dataset_plan_scan(ds.ptr(), 0, &mut plan) != 0 {
        return Err(last_message());
    }
    let col = cstr("embedding");
    let query = lance_host_testkit::vector_of(7);
    let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
    lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>());
    let mut q = unsafe { q.assume_init() };
    q.column = col.as_ptr();
    q.vector = query.as_ptr() as _;
    q.dimension = query.len();
    q.k = 10;
    rows += drain_plan(plan, |split, stream| lance_split_scan_v2(ds.ptr(), split, &default_opts(), stream))?;
    let mut plan = std::ptr::null_mut();
    if lance_dataset_plan_vector_search(ds.ptr(), col.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan) != 0 {
        return Err(last_message());
    }
    rows += drain_plan(plan, |split, stream| lance_split_search_v2(ds.ptr(), split, &q, stream))?;
    Ok(rows)
}

/// Run `start` on every split of `plan` and drain each stream; frees the plan. The rows read,
/// or the first error (the call's or the stream's).
fn drain_plan(
    plan: *mut LanceSplitPlan,
    start: impl Fn(*const LanceSplit, &mut FFI_ArrowArrayStream) -> i32,
) -> Result<usize, String> {
    let mut result = Ok(0);
    for i in 0..lance_split_plan_count(plan) {
        let split = lance_split_plan_get(plan, i);
        let mut stream = FFI_ArrowArrayStream::empty();
        let code = start(split, &mut stream);
        lance_split_free(split);
        if code != 0 {
            result = Err(format!("code {code}: {}", last_message()));
            break;
        }
        match read_stream(stream) {
            Ok(b) => result = result.map(|n| n + total_rows(&b)),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    lance_split_plan_free(plan);
    result
}

/// A server with authentication (the fault proxy refuses other access keys): after a read with
/// good credentials filled the cache, the same splits read from the same snapshot token with a
/// wrong key are refused (LANCE_ERR_PERMISSION_DENIED; 0.10.5 returned the cached rows); the
/// good key again makes no request; another accepted credential pays one HEAD per object the
/// cache serves it (and reads nothing else from storage).
#[test]
fn wrong_credentials_are_refused_although_the_data_is_cached() {
    use lance_host_testkit::Faults;
    let s = shared();
    let table = private_table("credentials");
    let moto_port: u16 = s.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = lance_host_testkit::FaultProxy::start(moto_port).unwrap();
    let good = s3_options(&format!("http://127.0.0.1:{}", proxy.port));
    let key = good["aws_access_key_id"].clone();
    proxy.set(Faults { allowed_access_key: Some(key.clone()), ..Default::default() });
    let ds = open_s3_with(&table, &good).unwrap();
    let mut token_ptr = std::ptr::null_mut();
    let mut token_len = 0usize;
    assert_eq!(lance_host::ffi::dataset::lance_dataset_export_snapshot(ds.ptr(), &mut token_ptr, &mut token_len), 0);
    let token = unsafe { std::slice::from_raw_parts(token_ptr, token_len) }.to_vec();
    lance_bytes_free(token_ptr, token_len);

    let rows = splits_through(&open_token_with(&token, &good)).expect("good credentials read");
    assert!(rows > 0);
    let mut wrong = good.clone();
    wrong.insert("aws_access_key_id".into(), "AKIDSOMEONEELSE".into());
    let before = proxy.counts();
    let err = splits_through(&open_token_with(&token, &wrong)).expect_err("a wrong key read the cached rows");
    assert!(err.contains("PERMISSION_DENIED") || err.contains("ermission"), "{err}");
    let after = proxy.counts();
    assert!(after.denied > before.denied, "the refusal did not come from the server: {after:?}");

    // The good key again: served from the cache, no request.
    let (d1, _) = workload(&open_token_with(&token, &good));
    let (d2, st2) = workload(&open_token_with(&token, &good));
    assert_eq!(d1, d2);
    assert_eq!(st2.read_requests, 0, "{st2:?}");
    // Another accepted credential (same key, another session token): one HEAD per object the
    // cache serves, nothing else.
    let mut other = good.clone();
    other.insert("aws_session_token".into(), "another-session".into());
    let (d3, st3) = workload(&open_token_with(&token, &other));
    assert_eq!(d3, d1);
    assert_eq!(st3.data_cache_misses, 0, "{st3:?}");
    assert!(st3.read_requests > 0 && st3.read_bytes == 0, "{st3:?}");
    let (_, st4) = workload(&open_token_with(&token, &other));
    assert_eq!(st4.read_requests, 0, "{st4:?}");
    eprintln!("grant checks for a new credential: {} HEAD requests for the workload", st3.read_requests);
}
