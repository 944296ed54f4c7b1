//! Object storage: tables and catalogs on a real S3-compatible server (moto, started by the
//! tests on 127.0.0.1), per-operation I/O statistics, the prewarm proof counted by the library
//! and by the server's request log, concurrent attribution, and faults.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::catalog::*;
use lance_host::ffi::dataset::*;
use lance_host::ffi::index::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::take::*;
use lance_host::LanceErrorCode::*;
use lance_host_testkit::{Facts, StorageOptions};

use crate::common::*;

const BUCKET: &str = "lance-host-test";
const SECRET: &str = "SENTINEL-aws-secret-5b2f";
const TOKEN: &str = "SENTINEL-session-token-91c4";

/// A moto S3 server on 127.0.0.1; stopped on drop.
pub struct Moto {
    child: Option<Child>,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Moto {
    pub fn start(extra_env: &[(&str, &str)]) -> Moto {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("moto.log");
        let port = free_port();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/integration/moto_server.py");
        let mut cmd = Command::new("python3");
        cmd.args([script, &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .expect("cannot start python3 for the moto server (install moto[server]; ./test.sh does)");
        let mut moto = Moto { child: Some(child), port, log, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = moto.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("moto exited ({status}): {}", moto.log_text());
            }
            assert!(Instant::now() < deadline, "moto did not start: {}", moto.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Raw HTTP, so creating the bucket needs no client library.
    pub fn create_bucket(&self, name: &str) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "PUT /{name} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200") || resp.starts_with("HTTP/1.0 200"), "{resp}");
    }

    /// The server's access log.
    pub fn log_path(&self) -> &std::path::Path {
        &self.log
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Request lines of the server's access log, without the terminal colours the server puts
    /// around some of them (e.g. every 206 range read).
    pub fn requests(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .map(strip_ansi)
            .filter(|l| l.contains("\"GET ") || l.contains("\"HEAD ") || l.contains("\"PUT ") || l.contains("\"POST "))
            .collect()
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Remove ANSI colour sequences (`ESC [ ... m`) from a log line.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Storage options for `endpoint` (path-style, plain HTTP, bounded retries).
pub fn s3_options(endpoint: &str) -> StorageOptions {
    [
        ("aws_access_key_id", "AKIDLANCEHOSTTEST"),
        ("aws_secret_access_key", SECRET),
        ("aws_session_token", TOKEN),
        ("aws_region", "us-east-1"),
        ("aws_endpoint", endpoint),
        ("allow_http", "true"),
        ("aws_virtual_hosted_style_request", "false"),
        ("client_max_retries", "1"),
        ("client_retry_timeout", "5"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn write_tables(endpoint: &str, root: &str) -> Facts {
    let opts = s3_options(endpoint);
    let root = root.to_string();
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(lance_host_testkit::write_remote_tables(&root, &opts))
            .expect("write tables to S3")
    })
    .join()
    .unwrap()
}

/// The shared server with the test tables (or, in a child process, its parent's server).
pub(crate) struct Shared {
    pub(crate) moto: Option<Moto>,
    pub(crate) endpoint: String,
    pub(crate) facts: Facts,
}

pub(crate) fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        if let (Ok(endpoint), Ok(root)) = (std::env::var("LANCE_HOST_TEST_S3_ENDPOINT"), std::env::var("LANCE_HOST_TEST_S3_ROOT")) {
            let facts = Facts(
                [
                    ("root".to_string(), root.clone()),
                    ("vectors.uri".to_string(), format!("{root}/vectors.lance")),
                    ("people.uri".to_string(), format!("{root}/people.lance")),
                ]
                .into_iter()
                .collect(),
            );
            return Shared { moto: None, endpoint, facts };
        }
        let moto = Moto::start(&[]);
        moto.create_bucket(BUCKET);
        let endpoint = moto.endpoint();
        let facts = write_tables(&endpoint, &format!("s3://{BUCKET}/wh"));
        Shared { moto: Some(moto), endpoint, facts }
    })
}

/// A copy of the testkit's `vectors` table of one test's own under the shared root, so the
/// server log and the caches show only that test's requests; returns its URI.
pub(crate) fn private_vectors_table(name: &str) -> String {
    let s = shared();
    let table = format!("{}/{name}/vectors.lance", s.facts.get("root"));
    let (t, opts) = (table.clone(), s3_options(&s.endpoint));
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            let mut facts = Facts::default();
            lance_host_testkit::write_vectors(&t, &mut facts, &opts).await.expect("write table");
        })
    })
    .join()
    .unwrap();
    table
}

pub(crate) fn open_s3(uri: &str, endpoint: &str) -> Result<Ds, (i32, String)> {
    open_s3_with(uri, &s3_options(endpoint))
}

/// Open `uri` at its latest version with these storage options.
pub(crate) fn open_s3_with(uri: &str, opts: &StorageOptions) -> Result<Ds, (i32, String)> {
    let u = cstr(uri);
    let pairs: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (_keep, ptrs) = kv(&pairs);
    let p = lance_dataset_open(u.as_ptr(), ptrs.as_ptr(), 0);
    if p.is_null() {
        Err((last_code(), last_message()))
    } else {
        Ok(Ds(p))
    }
}

/// Scan into a stream, drain it through the C callbacks and return rows and stats read from
/// the still-live stream at its end.
fn scan_stats(ds: &Ds, opts: &LanceScanOptions) -> (usize, LanceIoStats) {
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), opts, &mut stream), 0, "{}", last_message());
    drain_in_place(&mut stream)
}

/// Drain a live C stream in place with its callbacks, read its stats, then release it.

#[test]
fn s3_scan_catalog_and_take() {
    let s = shared();
    let people = s.facts.get("people.uri").to_string();
    let ds = open_s3(&people, &s.endpoint).unwrap();
    let mut n = 0;
    assert_eq!(lance_dataset_count_rows(ds.ptr(), &mut n), 0);
    let expected_rows = fixture().facts.get_u64("people.v3.rows");
    assert_eq!(n, expected_rows);
    let (rows, stats) = scan_stats(&ds, &default_opts());
    assert_eq!(rows as u64, expected_rows);
    // Read from storage or (when another test read the table first) from the data cache.
    assert!(stats.read_bytes + stats.data_cache_hit_bytes > 0, "{stats:?}");
    assert_eq!(stats.index_read_requests, 0);
    // Stats of a released or foreign stream are refused.
    let mut st = LanceIoStats::default();
    let empty = FFI_ArrowArrayStream::empty();
    assert_err(lance_stream_io_stats_v2(&empty, &mut st), LANCE_ERR_INVALID_ARGUMENT, "not created by lance-host");

    // A directory catalog rooted in the bucket.
    let root = s.facts.get("root").to_string();
    let mut props: Vec<(String, String)> = vec![("root".into(), root.clone())];
    for (k, v) in s3_options(&s.endpoint) {
        props.push((format!("storage.{k}"), v));
    }
    let pairs: Vec<(&str, &str)> = props.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (_keep, ptrs) = kv(&pairs);
    let cat = lance_catalog_open(ptrs.as_ptr());
    assert!(!cat.is_null(), "{}", last_message());
    let mut list = std::ptr::null_mut();
    assert_eq!(lance_catalog_list_tables(cat, std::ptr::null(), 0, &mut list), 0, "{}", last_message());
    let names: Vec<String> = (0..lance_string_list_count(list))
        .map(|i| unsafe { std::ffi::CStr::from_ptr(lance_string_list_get(list, i)) }.to_string_lossy().into_owned())
        .collect();
    lance_string_list_free(list);
    assert_eq!(names, ["people", "vectors"]);
    let t = cstr("people");
    let via_catalog = lance_catalog_open_table(cat, std::ptr::null(), 0, t.as_ptr(), 1);
    assert!(!via_catalog.is_null(), "{}", last_message());
    let via_catalog = Ds(via_catalog);
    let mut n1 = 0;
    lance_dataset_count_rows(via_catalog.ptr(), &mut n1);
    assert_eq!(n1, fixture().facts.get_u64("people.v1.rows"));
    lance_catalog_free(cat);

    // Take on S3, with its own statistics.
    let vectors = open_s3(s.facts.get("vectors.uri"), &s.endpoint).unwrap();
    let ids = [0u64, 5, 1];
    let cols = cstrs(&["id"]);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_take_rows(vectors.ptr(), ids.as_ptr(), 3, cols.ptrs.as_ptr(), 1, &mut stream), 0, "{}", last_message());
    let mut tst = LanceIoStats::default();
    assert_eq!(lance_stream_io_stats_v2(&stream, &mut tst), 0);
    assert!(tst.read_requests + tst.data_cache_hits > 0, "{tst:?}");
    let (rows, _) = drain_in_place(&mut stream);
    assert_eq!(rows, 3);
}

/// Search every INDEX_SEGMENT split of `emb_pq` through `ds`; returns summed stream stats.
fn index_search_stats(ds: &Ds) -> LanceIoStats {
    let col = cstr("embedding");
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_vector_search(ds.ptr(), col.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan), 0, "{}", last_message());
    let query: Vec<f32> = lance_host_testkit::vector_of(42);
    let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
    lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>());
    let mut q = unsafe { q.assume_init() };
    q.column = col.as_ptr();
    q.vector = query.as_ptr() as _;
    q.dimension = query.len();
    q.k = 5;
    q.nprobes = 4;
    let mut total = LanceIoStats::default();
    let mut searched = 0;
    for i in 0..lance_split_plan_count(plan) {
        let split = lance_split_plan_get(plan, i);
        if lance_split_kind(split) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32 {
            let mut stream = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_search_v2(ds.ptr(), split, &q, &mut stream), 0, "{}", last_message());
            let (rows, st) = drain_in_place(&mut stream);
            assert_eq!(rows, 5);
            total.read_requests += st.read_requests;
            total.index_read_requests += st.index_read_requests;
            total.index_read_bytes += st.index_read_bytes;
            total.index_cache_hits += st.index_cache_hits;
            total.index_cache_misses += st.index_cache_misses;
            searched += 1;
        }
        lance_split_free(split);
    }
    lance_split_plan_free(plan);
    assert_eq!(searched, 2);
    total
}

const SCENARIO: &str = "LANCE_HOST_TEST_S3_SCENARIO";
/// A table of the scenario's own (default: the shared `vectors` table).
const TABLE: &str = "LANCE_HOST_TEST_S3_TABLE";

/// Runs in a fresh process (empty caches) for one scenario: "cold" or "prewarm".
#[test]
#[ignore = "run by prewarm_removes_remote_index_reads in its own processes"]
fn child_s3_scenario() {
    let Ok(scenario) = std::env::var(SCENARIO) else { return };
    let s = shared();
    let uri = std::env::var(TABLE).unwrap_or_else(|_| s.facts.get("vectors.uri").to_string());
    match scenario.as_str() {
        "cold" => {
            let ds = open_s3(&uri, &s.endpoint).unwrap();
            let st = index_search_stats(&ds);
            assert!(st.index_read_requests > 0 && st.index_read_bytes > 0, "cold search read no index files: {st:?}");
            println!("COLD index_read_requests={}", st.index_read_requests);
        }
        "prewarm" => {
            let warm = open_s3(&uri, &s.endpoint).unwrap();
            let name = cstr("emb_pq");
            let mut pst = LanceIoStats::default();
            assert_eq!(lance_dataset_prewarm_index_with_stats_v2(warm.ptr(), name.as_ptr(), &mut pst), 0, "{}", last_message());
            assert!(pst.index_read_requests > 0, "prewarm read no index files: {pst:?}");
            assert_eq!((pst.index_cache_misses, pst.index_cache_hits), (2, 0), "a cold prewarm of 2 segments: {pst:?}");
            // Again: everything is cached, nothing is read.
            let mut again = LanceIoStats::default();
            assert_eq!(lance_dataset_prewarm_index_with_stats_v2(warm.ptr(), name.as_ptr(), &mut again), 0, "{}", last_message());
            assert_eq!((again.index_cache_hits, again.index_cache_misses, again.index_read_requests), (2, 0, 0), "{again:?}");
            drop(warm);
            println!("MARK-AFTER-PREWARM");
            let fresh = open_s3(&uri, &s.endpoint).unwrap();
            let st = index_search_stats(&fresh);
            assert_eq!(st.index_read_requests, 0, "index files read after prewarm: {st:?}");
            assert_eq!(st.index_cache_misses, 0, "{st:?}");
            assert!(st.index_cache_hits > 0, "{st:?}");
            println!("PREWARM prewarm_index_reads={} search_index_reads=0", pst.index_read_requests);
        }
        "prewarm_only" => {
            // Only a prewarm in this process: the parent checks the server log for what it read.
            let warm = open_s3(&uri, &s.endpoint).unwrap();
            println!("MARK-OPENED");
            let name = cstr("emb_pq");
            let mut pst = LanceIoStats::default();
            assert_eq!(lance_dataset_prewarm_index_with_stats_v2(warm.ptr(), name.as_ptr(), &mut pst), 0, "{}", last_message());
            println!("PREWARM-ONLY index_reads={} reads={}", pst.index_read_requests, pst.read_requests);
        }
        "segment" => {
            // Warm one segment (the first INDEX_SEGMENT split's), then search both segments.
            let ds = open_s3(&uri, &s.endpoint).unwrap();
            let col = cstr("embedding");
            let mut plan = std::ptr::null_mut();
            assert_eq!(lance_dataset_plan_vector_search(ds.ptr(), col.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan), 0);
            let segs: Vec<*mut LanceSplit> = (0..lance_split_plan_count(plan))
                .map(|i| lance_split_plan_get(plan, i))
                .filter(|sp| lance_split_kind(*sp) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32)
                .collect();
            assert_eq!(segs.len(), 2);
            let mut uuid = [0u8; 16];
            assert_eq!(lance_split_segment_uuid(segs[0], uuid.as_mut_ptr()), 0);
            let name = cstr("emb_pq");
            let mut pst = LanceIoStats::default();
            assert_eq!(lance_dataset_prewarm_index_segments_v2(ds.ptr(), name.as_ptr(), uuid.as_ptr(), 16, &mut pst), 0, "{}", last_message());
            assert_eq!((pst.index_cache_misses, pst.index_cache_hits), (1, 0), "{pst:?}");
            assert!(pst.index_read_requests > 0, "{pst:?}");
            let query: Vec<f32> = lance_host_testkit::vector_of(42);
            let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
            lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>());
            let mut q = unsafe { q.assume_init() };
            q.column = col.as_ptr();
            q.vector = query.as_ptr() as _;
            q.dimension = query.len();
            q.k = 5;
            q.nprobes = 4;
            let mut reads = Vec::new();
            for sp in &segs {
                let mut stream = FFI_ArrowArrayStream::empty();
                assert_eq!(lance_split_search_v2(ds.ptr(), *sp, &q, &mut stream), 0, "{}", last_message());
                reads.push(drain_in_place(&mut stream).1.index_read_requests);
            }
            assert_eq!(reads[0], 0, "the warmed segment read index files");
            assert!(reads[1] > 0, "the segment nobody warmed read no index file");
            for sp in segs {
                lance_split_free(sp);
            }
            lance_split_plan_free(plan);
            println!("SEGMENT warmed_reads=0 cold_reads={}", reads[1]);
        }
        other => panic!("unknown scenario {other}"),
    }
    println!("CHILD-OK");
}

fn run_scenario(scenario: &str) -> String {
    run_scenario_on(scenario, &shared().facts.get("vectors.uri").to_string())
}

fn run_scenario_on(scenario: &str, table: &str) -> String {
    let s = shared();
    run_child(
        "s3::child_s3_scenario",
        &[
            (SCENARIO, std::ffi::OsStr::new(scenario)),
            (TABLE, std::ffi::OsStr::new(table)),
            ("LANCE_HOST_TEST_S3_ENDPOINT", std::ffi::OsStr::new(&s.endpoint)),
            ("LANCE_HOST_TEST_S3_ROOT", std::ffi::OsStr::new(s.facts.get("root"))),
        ],
    )
}

fn index_gets(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.contains("\"GET ") && l.contains("/_indices/")).count()
}

#[test]
fn prewarm_removes_remote_index_reads() {
    let s = shared();
    let moto = s.moto.as_ref().expect("parent owns the server");
    // Only this table's requests: other tests use the same server at the same time.
    let path = format!("{}/", s.facts.get("vectors.uri").trim_start_matches("s3://"));
    let mine = |from: usize| -> Vec<String> {
        moto.requests()[from..].iter().filter(|l| l.contains(&path)).cloned().collect()
    };
    // Cold: a search reads index files — by the library's count and by the server's log.
    let before = moto.requests().len();
    run_scenario("cold");
    let cold = mine(before);
    assert!(index_gets(&cold) > 0, "server saw no index reads for a cold search");
    // Prewarm in a fresh process, then search through another fresh handle.
    let before = moto.requests().len();
    let out = run_scenario("prewarm");
    assert!(out.contains("search_index_reads=0"));
    let lines = mine(before);
    assert!(index_gets(&lines) > 0, "the prewarm itself read no index files");
    // The server log has no marker; the library's counts separate the phases, and the
    // server log of the whole prewarm process may only hold index reads of the prewarm.
    let prewarm_reads: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("PREWARM prewarm_index_reads="))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(
        index_gets(&lines),
        prewarm_reads,
        "server saw index reads beyond the prewarm's own: {lines:#?}"
    );
}

/// A prewarm reads index files and deletion files only: no data file, no query.
#[test]
fn prewarm_reads_no_data_file_and_warms_single_segments() {
    let s = shared();
    let moto = s.moto.as_ref().expect("parent owns the server");
    // A table of this test's own, so other tests' requests cannot mix into its server log.
    let table = private_vectors_table("prewarm_only");
    let path = table.trim_start_matches("s3://");
    let before = moto.requests().len();
    let out = run_scenario_on("prewarm_only", &table);
    let lines: Vec<String> = moto.requests()[before..].iter().filter(|l| l.contains(path)).cloned().collect();
    // The server log of this process: everything after its open is the prewarm's.
    let start = lines
        .iter()
        .rposition(|l| l.contains("_versions/") || l.contains(".manifest"))
        .expect("the open read a manifest");
    let prewarm_lines = &lines[start + 1..];
    let data: Vec<&String> = prewarm_lines.iter().filter(|l| l.contains("/data/")).collect();
    assert!(data.is_empty(), "the prewarm read data files: {data:#?}");
    let index_reads: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("PREWARM-ONLY index_reads="))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(index_reads > 0);
    assert_eq!(index_gets(prewarm_lines), index_reads, "server and library disagree: {prewarm_lines:#?}");
    let out = run_scenario_on("segment", &table);
    assert!(out.contains("SEGMENT warmed_reads=0"));
}

#[test]
fn concurrent_scans_report_their_own_requests() {
    let s = shared();
    // Outside the data cache: every scan's reads reach storage, so each has requests to count.
    let mut opts = s3_options(&s.endpoint);
    opts.insert("lance_host.data_cache".into(), "false".into());
    let people = Arc::new(open_s3_with(s.facts.get("people.uri"), &opts).unwrap());
    let vectors = Arc::new(open_s3_with(s.facts.get("vectors.uri"), &opts).unwrap());
    let cols_a: Arc<[&str]> = Arc::from(vec!["id", "name", "embedding"]);
    let cols_b: Arc<[&str]> = Arc::from(vec!["id", "category"]);
    fn run(ds: &Ds, names: &[&str], batch: u64) -> (usize, LanceIoStats) {
        let cols = cstrs(names);
        let mut o = default_opts();
        o.columns = cols.ptrs.as_ptr();
        o.num_columns = cols.ptrs.len();
        o.batch_size = batch;
        scan_stats(ds, &o)
    }
    // Solo runs (the second one is the steady state: metadata cached).
    run(&people, &cols_a, 50);
    run(&vectors, &cols_b, 64);
    let (ra, solo_a) = run(&people, &cols_a, 50);
    let (rb, solo_b) = run(&vectors, &cols_b, 64);
    assert_ne!(solo_a.read_requests, solo_b.read_requests, "pick scans with different costs");
    for _ in 0..3 {
        let (p, ca) = (people.clone(), cols_a.clone());
        let (v, cb) = (vectors.clone(), cols_b.clone());
        let ta = std::thread::spawn(move || run(&p, &ca, 50));
        let tb = std::thread::spawn(move || run(&v, &cb, 64));
        let (ra2, a) = ta.join().unwrap();
        let (rb2, b) = tb.join().unwrap();
        assert_eq!((ra2, rb2), (ra, rb));
        assert_eq!(a.read_requests, solo_a.read_requests, "scan A: {a:?} vs solo {solo_a:?}");
        assert_eq!(b.read_requests, solo_b.read_requests, "scan B: {b:?} vs solo {solo_b:?}");
        assert_eq!(a.read_bytes, solo_a.read_bytes);
        assert_eq!(b.read_bytes, solo_b.read_bytes);
    }
}

#[test]
fn wrong_credentials_are_a_clear_error() {
    // moto with authentication enforced: no access key is known, so any is wrong.
    let moto = Moto::start(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]);
    let uri = format!("s3://{BUCKET}/wh/people.lance");
    let start = Instant::now();
    let (code, msg) = open_s3(&uri, &moto.endpoint()).err().expect("opened with wrong credentials");
    assert!(
        code == LANCE_ERR_UNAUTHENTICATED as i32 || code == LANCE_ERR_PERMISSION_DENIED as i32,
        "code {code}: {msg}"
    );
    println!("wrong credentials: {msg}");
    assert!(msg.contains("s3://lance-host-test/wh/people.lance"), "{msg}");
    assert!(!msg.contains(SECRET) && !msg.contains(TOKEN), "secret leaked: {msg}");
    // The server's XML body is summarised: its error code and message, not request ids.
    assert!(!msg.contains("<Error>") && !msg.contains("RequestId") && !msg.contains("<?xml"), "{msg}");
    assert!(msg.contains("S3 error ") && msg.contains("403"), "{msg}");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
fn server_down_is_a_bounded_io_error() {
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let start = Instant::now();
    let (code, msg) = open_s3(&format!("s3://{BUCKET}/wh/people.lance"), &endpoint)
        .err()
        .expect("opened against a dead endpoint");
    assert_eq!(code, LANCE_ERR_IO as i32, "{msg}");
    assert!(!msg.contains(SECRET) && !msg.contains(TOKEN), "secret leaked: {msg}");
    assert!(start.elapsed() < Duration::from_secs(60), "took {:?}", start.elapsed());
}

#[test]
fn server_stopping_mid_stream_fails_the_stream() {
    let mut moto = Moto::start(&[]);
    moto.create_bucket(BUCKET);
    let facts = write_tables(&moto.endpoint(), &format!("s3://{BUCKET}/mid"));
    let ds = open_s3(facts.get("vectors.uri"), &moto.endpoint()).unwrap();
    let mut o = default_opts();
    o.batch_size = 20;
    o.batch_readahead = 1;
    o.fragment_readahead = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0);
    let mut first = arrow::ffi::FFI_ArrowArray::empty();
    assert_eq!(unsafe { (stream.get_next.unwrap())(&mut stream, &mut first) }, 0);
    assert!(!first.is_released());
    drop(first);
    moto.stop();
    let start = Instant::now();
    let mut failed = None;
    loop {
        let mut array = arrow::ffi::FFI_ArrowArray::empty();
        let rc = unsafe { (stream.get_next.unwrap())(&mut stream, &mut array) };
        if rc != 0 {
            let msg = unsafe { std::ffi::CStr::from_ptr((stream.get_last_error.unwrap())(&mut stream)) };
            failed = Some(msg.to_string_lossy().into_owned());
            break;
        }
        if array.is_released() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "stream hangs after the server stopped");
    }
    unsafe { (stream.release.unwrap())(&mut stream) };
    let msg = failed.expect("the stream ended normally although the server stopped mid-way");
    assert!(!msg.contains(SECRET) && !msg.contains(TOKEN), "secret leaked: {msg}");
    assert!(start.elapsed() < Duration::from_secs(120));
}

#[test]
fn scan_reads_ahead_on_the_runtime_before_the_host_asks() {
    // The host thread only receives finished batches: after the stream is created and before
    // the first `get_next`, runtime workers have already read data for it.
    let s = shared();
    let ds = open_s3(s.facts.get("people.uri"), &s.endpoint).unwrap();
    let mut o = default_opts();
    o.batch_size = 100;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut stats = LanceIoStats::default();
    loop {
        assert_eq!(lance_stream_io_stats_v2(&stream, &mut stats), 0);
        // Read from storage, or from the data cache when another test read the table first.
        if stats.read_bytes + stats.data_cache_hit_bytes > 0 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(stats.read_bytes + stats.data_cache_hit_bytes > 0, "no read before the first get_next: {stats:?}");
    let (rows, _) = drain_in_place(&mut stream);
    assert_eq!(rows as u64, fixture().facts.get_u64("people.v3.rows"));
}

/// Counts on `s3://`: without a filter nothing is read; with a BTREE-answerable filter the
/// index is read and the count equals the scan's.
#[test]
fn counts_on_s3_read_no_data_without_a_filter() {
    let s = shared();
    let ds = open_s3(s.facts.get("vectors.uri"), &s.endpoint).unwrap();
    let mut n = 0u64;
    let mut io = LanceIoStats::default();
    assert_eq!(lance_dataset_count_rows_where_v2(ds.ptr(), std::ptr::null(), &mut n, &mut io), 0, "{}", last_message());
    assert_eq!(io.read_requests, 0, "an unfiltered count read storage: {io:?}");
    let (rows, _) = scan_stats(&ds, &default_opts());
    assert_eq!(n as usize, rows);
    let f = cstr("id < 300");
    assert_eq!(lance_dataset_count_rows_where_v2(ds.ptr(), f.as_ptr(), &mut n, &mut io), 0, "{}", last_message());
    assert!(io.index_read_requests > 0 || io.read_requests == 0, "the BTREE was not used: {io:?}");
    let mut o = default_opts();
    o.filter_sql = f.as_ptr();
    assert_eq!(n as usize, scan_stats(&ds, &o).0);
    assert!(n > 0);
}

#[test]
fn aggregates_on_s3_count_from_the_manifest_and_read_only_their_columns() {
    use lance_host::ffi::aggregate::*;
    let s = shared();
    let ds = open_s3(s.facts.get("vectors.uri"), &s.endpoint).unwrap();
    let run = |function: i32, column: Option<&str>| -> (Vec<arrow::array::RecordBatch>, LanceIoStats) {
        let col = column.map(cstr);
        let columns = [col.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())];
        let functions = [function];
        let mut spec = std::mem::MaybeUninit::<LanceAggregateSpec>::uninit();
        assert_eq!(lance_aggregate_init_v2(spec.as_mut_ptr(), std::mem::size_of::<LanceAggregateSpec>()), 0);
        let mut spec = unsafe { spec.assume_init() };
        spec.functions = functions.as_ptr();
        spec.columns = columns.as_ptr();
        spec.num_aggregates = 1;
        let mut out = FFI_ArrowArrayStream::empty();
        let mut io = LanceIoStats::default();
        assert_eq!(lance_dataset_aggregate(ds.ptr(), &spec, &mut out, &mut io), 0, "{}", last_message());
        let batches = arrow::ffi_stream::ArrowArrayStreamReader::try_new(out).unwrap().map(|b| b.unwrap()).collect();
        (batches, io)
    };
    let value = |b: &[arrow::array::RecordBatch]| {
        let c = b[0].column(0).as_any().downcast_ref::<arrow::array::Int64Array>().unwrap().value(0);
        c
    };
    // COUNT(*) without a filter: the manifest's counts, no request
    let (count, io) = run(1, None);
    assert_eq!(io.read_requests, 0, "COUNT(*) read storage: {io:?}");
    let (rows, full) = scan_stats(&ds, &default_opts());
    assert_eq!(value(&count) as usize, rows);
    // SUM(id) reads the id column only: far fewer bytes than the scan of every column
    let (sum, io) = run(3, Some("id"));
    assert!(io.read_requests > 0 || io.data_cache_hits > 0, "{io:?}");
    assert!(io.read_bytes + io.data_cache_hit_bytes < (full.read_bytes + full.data_cache_hit_bytes) / 4, "sum {io:?} vs scan {full:?}");
    // the session's data cache serves an aggregate as it serves a scan
    let (again, io2) = run(3, Some("id"));
    assert_eq!(value(&again), value(&sum));
    assert!(io2.data_cache_hits > 0 && io2.read_requests <= io.read_requests && io2.data_cache_misses == 0, "{io2:?} after {io:?}");
    let mut o = default_opts();
    let id = cstr("id");
    let cols = [id.as_ptr()];
    o.columns = cols.as_ptr();
    o.num_columns = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let ids: i64 = arrow::ffi_stream::ArrowArrayStreamReader::try_new(stream)
        .unwrap()
        .map(|b| b.unwrap().column(0).as_any().downcast_ref::<arrow::array::Int64Array>().unwrap().iter().flatten().sum::<i64>())
        .sum();
    assert_eq!(value(&sum), ids);
}

/// A deliberately slow store (a delaying proxy in front of the S3-compatible server): a scan
/// cancelled while the host is blocked in `get_next` returns promptly with ECANCELED and its
/// I/O stops; a call context's deadline ends a stream with ETIMEDOUT and a blocking prewarm
/// cancelled from another thread returns LANCE_ERR_CANCELLED promptly.
///
/// Every request through the proxy takes `DELAY`; "promptly" means well before the request in
/// flight could have answered (an implementation that waited for it would take at least
/// `DELAY`), with hundreds of milliseconds to spare for a loaded machine's scheduling.
#[test]
fn cancel_and_deadlines_on_a_slow_store() {
    use lance_host::ffi::session::*;
    const DELAY: Duration = Duration::from_millis(1000);
    let s = shared();
    let moto_port: u16 = s.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let table = private_vectors_table("slow");
    let proxy = lance_host_testkit::DelayProxy::start(moto_port, DELAY).unwrap();
    let slow = format!("http://127.0.0.1:{}", proxy.port);
    let ds = open_s3(&table, &slow).unwrap();

    let get_next = |st: &mut FFI_ArrowArrayStream| -> i32 {
        let mut a = arrow::ffi::FFI_ArrowArray::empty();
        unsafe { (st.get_next.unwrap())(st, &mut a) }
    };
    // 1. Cancel a scan from another thread while this one waits in get_next.
    let mut o = default_opts();
    o.batch_size = 64;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let addr = &stream as *const FFI_ArrowArrayStream as usize;
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        assert_eq!(lance_stream_cancel(addr as *const FFI_ArrowArrayStream), 0);
        at
    });
    let mut batches = 0;
    let rc = loop {
        let rc = get_next(&mut stream);
        if rc != 0 {
            break rc;
        }
        batches += 1;
        assert!(batches < 10_000, "the scan finished before it was cancelled; slow the proxy down");
    };
    let returned = Instant::now();
    let cancelled_at = canceller.join().unwrap();
    assert_eq!(rc, 125, "get_next after cancel");
    let latency = returned.saturating_duration_since(cancelled_at);
    assert!(latency < DELAY * 7 / 10, "get_next returned {latency:?} after the cancel");
    // The work stops: reads already on the wire may still complete (and be counted), but no
    // new ones start — the counters settle and then stay put. A window longer than a request
    // takes sees every read that was on the wire complete.
    let io = |st: &FFI_ArrowArrayStream| {
        let mut s = LanceIoStats::default();
        assert_eq!(lance_stream_io_stats_v2(st, &mut s), 0);
        (s.read_requests, s.read_bytes)
    };
    let at_cancel = io(&stream);
    let mut settled = at_cancel;
    loop {
        std::thread::sleep(DELAY * 3 / 2);
        let now = io(&stream);
        if now == settled {
            break;
        }
        settled = now;
        assert!(cancelled_at.elapsed() < DELAY * 10, "reads still growing {:?} after the cancel", DELAY * 10);
    }
    std::thread::sleep(DELAY);
    assert_eq!(io(&stream), settled, "I/O went on after the cancel");
    assert!(settled.0 - at_cancel.0 <= 16, "{} reads completed after the cancel", settled.0 - at_cancel.0);
    unsafe { (stream.release.unwrap())(&mut stream) };
    println!("CANCEL latency_ms={:.1} batches_before={batches}", latency.as_secs_f64() * 1e3);

    // 2. A deadline ends a stream with ETIMEDOUT. Through a second slow proxy: another
    // endpoint, so none of the blocks part 1 read come from the data cache.
    let proxy2 = lance_host_testkit::DelayProxy::start(moto_port, DELAY).unwrap();
    let ds2 = open_s3(&table, &format!("http://127.0.0.1:{}", proxy2.port)).unwrap();
    let ctx = lance_call_context_new(400);
    let started = Instant::now();
    assert_eq!(lance_call_context_enter(ctx), 0);
    let mut stream = FFI_ArrowArrayStream::empty();
    let rc = lance_dataset_scan_v2(ds2.ptr(), &o, &mut stream);
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    assert_eq!(rc, 0, "{}", last_message());
    let rc = loop {
        let mut a = arrow::ffi::FFI_ArrowArray::empty();
        let rc = unsafe { (stream.get_next.unwrap())(&mut stream, &mut a) };
        if rc != 0 {
            break rc;
        }
        assert!(!a.is_released(), "the scan ended within its deadline; slow the proxy down");
    };
    let took = started.elapsed();
    assert_eq!(rc, 110, "get_next after the deadline");
    // Stopped by the deadline, not by the first reads' answers (which arrive after DELAY).
    assert!(took >= Duration::from_millis(400) && took < DELAY * 95 / 100, "deadline 400 ms, stopped after {took:?}");
    unsafe { (stream.release.unwrap())(&mut stream) };
    lance_call_context_free(ctx);

    // 3. A blocking prewarm (cold, through the slow store) cancelled from another thread.
    let ctx = lance_call_context_new(0);
    let ctx_addr = ctx as usize;
    assert_eq!(lance_call_context_enter(ctx), 0);
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let at = Instant::now();
        assert_eq!(lance_call_context_cancel(ctx_addr as *const LanceCallContext), 0);
        at
    });
    let name = cstr("emb_pq");
    let rc = lance_dataset_prewarm_index(ds.ptr(), name.as_ptr());
    let returned = Instant::now();
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    let cancelled_at = canceller.join().unwrap();
    assert_eq!(rc, LANCE_ERR_CANCELLED as i32, "{}", last_message());
    let latency = returned.saturating_duration_since(cancelled_at);
    assert!(latency < DELAY * 7 / 10, "prewarm returned {latency:?} after the cancel");
    lance_call_context_free(ctx);
    drop(ds);
    drop(ds2);
    drop(proxy);
    drop(proxy2);
}

const TOKEN_FILE: &str = "LANCE_HOST_TEST_SNAPSHOT_TOKEN";

/// Worker side of the shipped-snapshot test, in a fresh process (empty caches): open the table
/// from the token (or, for "plain", from the split), then scan every scan split.
#[test]
#[ignore = "run by shipped_snapshot_spares_workers_the_manifest_read in its own processes"]
fn child_snapshot_worker() {
    let Ok(mode) = std::env::var("LANCE_HOST_TEST_SNAPSHOT_MODE") else { return };
    let s = shared();
    let opts = s3_options(&s.endpoint);
    let pairs: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (_keep, ptrs) = kv(&pairs);
    let token = std::fs::read(std::env::var(TOKEN_FILE).unwrap()).unwrap();
    let splits: Vec<Vec<u8>> = std::fs::read(std::env::var(TOKEN_FILE).unwrap() + ".splits")
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| (0..l.len()).step_by(2).map(|i| u8::from_str_radix(std::str::from_utf8(&l[i..i + 2]).unwrap(), 16).unwrap()).collect())
        .collect();
    if mode == "token_vector" {
        // Open from the token and plan a vector search: the index metadata Lance needs for it
        // lives in the manifest file's index section.
        let ds = lance_snapshot_open(token.as_ptr(), token.len(), ptrs.as_ptr());
        assert!(!ds.is_null(), "{}", last_message());
        let ds = Ds(ds);
        let col = cstr("embedding");
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_vector_search(ds.ptr(), col.as_ptr(), 1, true, 0, &mut plan), 0, "{}", last_message());
        lance_split_plan_free(plan);
        println!("ROWS 0");
        println!("CHILD-OK");
        return;
    }
    let mut rows = 0;
    for bytes in &splits {
        let split = lance_split_deserialize(bytes.as_ptr(), bytes.len());
        assert!(!split.is_null(), "{}", last_message());
        let ds = if mode == "token" {
            lance_snapshot_open(token.as_ptr(), token.len(), ptrs.as_ptr())
        } else {
            lance_split_open_dataset(split, ptrs.as_ptr())
        };
        assert!(!ds.is_null(), "{}", last_message());
        let ds = Ds(ds);
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_scan_v2(ds.ptr(), split, &default_opts(), &mut stream), 0, "{}", last_message());
        rows += drain_in_place(&mut stream).0;
        lance_split_free(split);
    }
    println!("ROWS {rows}");
    println!("CHILD-OK");
}

#[test]
fn shipped_snapshot_spares_workers_the_manifest_read() {
    let s = shared();
    let moto = s.moto.as_ref().expect("parent owns the server");
    // A table of this test's own, so the server log shows only its workers.
    let table = private_vectors_table("token");
    // Coordinator: pin, plan, export the token and the splits.
    let ds = open_s3(&table, &s.endpoint).unwrap();
    let mut p = std::ptr::null_mut();
    let mut n = 0usize;
    assert_eq!(lance_dataset_export_snapshot(ds.ptr(), &mut p, &mut n), 0, "{}", last_message());
    let token = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
    lance_bytes_free(p, n);
    assert!(!String::from_utf8_lossy(&token).contains(SECRET), "the token carries a secret");
    let dir = tempfile::tempdir().unwrap();
    let token_path = dir.path().join("token");
    std::fs::write(&token_path, &token).unwrap();
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan(ds.ptr(), 0, &mut plan), 0);
    let mut lines = String::new();
    for i in 0..lance_split_plan_count(plan) {
        let sp = lance_split_plan_get(plan, i);
        assert_eq!(lance_split_serialize(sp, &mut p, &mut n), 0);
        let b = unsafe { std::slice::from_raw_parts(p, n) };
        lines.push_str(&b.iter().map(|x| format!("{x:02x}")).collect::<String>());
        lines.push('\n');
        lance_bytes_free(p, n);
        lance_split_free(sp);
    }
    lance_split_plan_free(plan);
    std::fs::write(token_path.with_extension("splits"), lines).unwrap();
    let path = table.trim_start_matches("s3://").to_string() + "/";
    let worker = |mode: &str| -> (usize, usize, usize) {
        let before = moto.requests().len();
        let out = run_child(
            "s3::child_snapshot_worker",
            &[
                ("LANCE_HOST_TEST_SNAPSHOT_MODE", std::ffi::OsStr::new(mode)),
                (TOKEN_FILE, token_path.as_os_str()),
                ("LANCE_HOST_TEST_S3_ENDPOINT", std::ffi::OsStr::new(&s.endpoint)),
                ("LANCE_HOST_TEST_S3_ROOT", std::ffi::OsStr::new(s.facts.get("root"))),
            ],
        );
        std::thread::sleep(Duration::from_millis(200));
        let manifest_lines: Vec<String> = moto.requests()[before..]
            .iter()
            .filter(|l| l.contains(&path) && (l.contains("/_versions/") || l.contains(".manifest")))
            .cloned()
            .collect();
        // GETs read the manifest; HEADs only resolve where the version's manifest is.
        let manifest_reads = manifest_lines.iter().filter(|l| l.contains("\"GET ")).count();
        let heads = manifest_lines.iter().filter(|l| l.contains("\"HEAD ")).count();
        println!("SNAPSHOT {mode}: manifest GETs {manifest_reads}, HEADs {heads}");
        let rows = out.lines().find_map(|l| l.strip_prefix("ROWS ")).unwrap().parse().unwrap();
        (manifest_reads, heads, rows)
    };
    let (plain_reads, plain_heads, plain_rows) = worker("plain");
    let (token_reads, token_heads, token_rows) = worker("token");
    // Vector planning on a token-opened handle: the token carries the index metadata too, so
    // not even the manifest file's index section is read.
    let (vector_reads, vector_heads, _) = worker("token_vector");
    assert_eq!(vector_reads, 0, "a vector plan from a token read the manifest");
    assert!(plain_reads > 0, "workers opening from the split read no manifest: the check is void");
    assert!(plain_heads > 0, "workers opening from the split asked nothing of the manifest: the check is void");
    assert_eq!(token_reads, 0, "workers opening from the token read (GET) the manifest");
    // The token carries where the manifest lives too: no request asks storage for it (HEAD).
    assert_eq!((token_heads, vector_heads), (0, 0), "workers opening from the token asked where the manifest is");
    assert_eq!(token_rows, plain_rows);
    let mut total = 0u64;
    assert_eq!(lance_dataset_count_rows(ds.ptr(), &mut total), 0);
    assert_eq!(token_rows as u64, total);
    println!("SNAPSHOT token_bytes={} manifest_reads plain={plain_reads} token={token_reads} token_vector_plan={vector_reads}", token.len());
    // Damaged tokens are CORRUPT, never a wrong table.
    let mut bad = token.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x40;
    assert!(lance_snapshot_open(bad.as_ptr(), bad.len(), std::ptr::null()).is_null());
    assert_err(last_code(), LANCE_ERR_CORRUPT, "checksum");
    assert!(lance_snapshot_open(token.as_ptr(), token.len() - 3, std::ptr::null()).is_null());
    assert_err(last_code(), LANCE_ERR_CORRUPT, "snapshot token");
    assert!(lance_snapshot_open(b"LHSP....".as_ptr(), 8, std::ptr::null()).is_null());
    assert_err(last_code(), LANCE_ERR_CORRUPT, "bad magic");
    let mut future = token.clone();
    future[4] = 9;
    assert!(lance_snapshot_open(future.as_ptr(), future.len(), std::ptr::null()).is_null());
    assert_err(last_code(), LANCE_ERR_NOT_SUPPORTED, "format 9");
    assert!(lance_snapshot_open(std::ptr::null(), 4, std::ptr::null()).is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "bytes");
}

/// Open through `endpoint` with bounded retries, outside the data cache: these tests are about
/// what storage faults do to reads, so every read must reach storage (the data cache's own
/// fault test is in `datacache`).
fn open_with(uri: &str, endpoint: &str, retries: &str) -> Result<Ds, (i32, String)> {
    let mut opts = s3_options(endpoint);
    opts.insert("lance_host.data_cache".into(), "false".into());
    opts.insert("client_max_retries".into(), retries.into());
    opts.insert("client_retry_timeout".into(), "20".into());
    open_s3_with(uri, &opts)
}

/// (rows, sum of ids, sum of the embedding's first element) of a full scan, or the stream's
/// errno and message.
fn scan_checksum(ds: &Ds) -> Result<(usize, i64, f64), (i32, String)> {
    let mut stream = FFI_ArrowArrayStream::empty();
    let mut o = default_opts();
    o.batch_size = 100;
    if lance_dataset_scan_v2(ds.ptr(), &o, &mut stream) != 0 {
        return Err((last_code(), last_message()));
    }
    let mut schema = arrow::ffi::FFI_ArrowSchema::empty();
    assert_eq!(unsafe { (stream.get_schema.unwrap())(&mut stream, &mut schema) }, 0);
    let (mut rows, mut ids, mut emb) = (0usize, 0i64, 0f64);
    let out = loop {
        let mut a = arrow::ffi::FFI_ArrowArray::empty();
        let rc = unsafe { (stream.get_next.unwrap())(&mut stream, &mut a) };
        if rc != 0 {
            let msg = unsafe { std::ffi::CStr::from_ptr((stream.get_last_error.unwrap())(&mut stream)) }.to_string_lossy().into_owned();
            break Err((rc, msg));
        }
        if a.is_released() {
            break Ok((rows, ids, emb));
        }
        let data = unsafe { arrow::ffi::from_ffi(a, &schema) }.unwrap();
        let b = arrow::record_batch::RecordBatch::from(arrow::array::StructArray::from(data));
        rows += b.num_rows();
        ids += i64_column(&[b.clone()], "id").iter().sum::<i64>();
        let e = b.column_by_name("embedding").unwrap().as_any().downcast_ref::<arrow::array::FixedSizeListArray>().unwrap();
        for i in 0..arrow::array::Array::len(e) {
            emb += e.value(i).as_any().downcast_ref::<arrow::array::Float32Array>().unwrap().value(0) as f64;
        }
    };
    unsafe { (stream.release.unwrap())(&mut stream) };
    out
}

/// TCP connections of this machine to `port` on the client side that still hold a socket
/// (every state but TIME_WAIT, which has none, and LISTEN). Only this process talks to the
/// test's own proxy, so these are the library's connections to it; counting all of the
/// process's file descriptors would also count what tests running beside this one open.
fn connections_to(port: u16) -> usize {
    // Without the table the count would be 0 whatever the library does: fail instead.
    let v4 = std::fs::read_to_string("/proc/net/tcp").expect("cannot read /proc/net/tcp");
    [Some(v4), std::fs::read_to_string("/proc/net/tcp6").ok()]
        .into_iter()
        .flatten()
        .flat_map(|t| t.lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let remote_port = cols.get(2).and_then(|a| a.rsplit(':').next()).and_then(|p| u16::from_str_radix(p, 16).ok());
            let state = cols.get(3).copied().unwrap_or("");
            remote_port == Some(port) && state != "06" && state != "0A"
        })
        .count()
}

/// Storage faults between the library and the S3-compatible server (a fault-injecting proxy):
/// transient faults within the retry budget give exactly the fault-free result; persistent ones
/// fail with a clear error in bounded time; nothing hangs, nothing is wrong, and repeating the
/// faults does not grow the process's open sockets.
#[test]
fn storage_faults_are_retried_or_reported_clearly() {
    let s = shared();
    let uri = s.facts.get("vectors.uri").to_string();
    let moto_port: u16 = s.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let truth = scan_checksum(&open_s3(&uri, &s.endpoint).unwrap()).unwrap();
    let proxy = lance_host_testkit::FaultProxy::start(moto_port).unwrap();
    let ep = format!("http://127.0.0.1:{}", proxy.port);
    use lance_host_testkit::Faults;
    let mut fds = Vec::new();
    let mut lines = Vec::new();
    for round in 0..2 {
        let transient = [
            ("latency 40 ms", Faults { latency: Duration::from_millis(40), ..Default::default() }),
            ("503 burst of 2", Faults { status_burst: Some((503, 2)), ..Default::default() }),
            ("500 burst of 2", Faults { status_burst: Some((500, 2)), ..Default::default() }),
            ("2 connections reset mid-body", Faults { reset_next: 2, ..Default::default() }),
            ("2 truncated bodies", Faults { truncate_next: 2, ..Default::default() }),
        ];
        for (name, f) in transient {
            proxy.set(f);
            let before = proxy.counts();
            let t = Instant::now();
            let ds = open_with(&uri, &ep, "4").unwrap_or_else(|e| panic!("{name}: open failed: {e:?}"));
            let got = scan_checksum(&ds);
            let after = proxy.counts();
            assert_eq!(got, Ok(truth), "{name}: the result differs from the fault-free scan");
            let injected = (after.statuses + after.resets + after.truncations) - (before.statuses + before.resets + before.truncations);
            assert!(name.starts_with("latency") || injected > 0, "{name}: no fault was injected");
            lines.push(format!("{name}: correct in {:?} ({injected} faults)", t.elapsed()));
        }
        // Persistent faults: a clear error, in bounded time.
        proxy.set(Faults { status_burst: Some((503, u32::MAX)), ..Default::default() });
        let t = Instant::now();
        let e = open_with(&uri, &ep, "2").err().expect("opened through a server that always answers 503");
        assert!(t.elapsed() < Duration::from_secs(60), "took {:?}", t.elapsed());
        assert_eq!(e.0, LANCE_ERR_IO as i32, "{e:?}");
        assert!(e.1.contains("503"), "{e:?}");
        lines.push(format!("persistent 503: {} after {:?}", e.1.chars().take(160).collect::<String>(), t.elapsed()));
        // A data file that answers 404 persistently (opened before the fault).
        proxy.set(Faults::default());
        let ds = open_with(&uri, &ep, "2").unwrap();
        proxy.set(Faults { not_found: Some("/data/".into()), ..Default::default() });
        let t = Instant::now();
        let e = scan_checksum(&ds).expect_err("scanned data files that answer 404");
        assert!(t.elapsed() < Duration::from_secs(60));
        assert_eq!(e.0, 2, "errno of a missing data file: {e:?}");
        assert!(e.1.contains("vectors.lance") && e.1.contains("version"), "{e:?}");
        lines.push(format!("persistent 404 on data files: errno {} ({})", e.0, e.1.chars().take(160).collect::<String>()));
        proxy.set(Faults::default());
        drop(ds);
        std::thread::sleep(Duration::from_millis(500));
        fds.push(connections_to(proxy.port));
        let _ = round;
    }
    // Repeating every fault does not leave sockets behind.
    assert!(fds[1] <= fds[0] + 4, "connections to the proxy grew from {} to {}", fds[0], fds[1]);
    println!("FAULT connections to the proxy after each round: {fds:?}");
    for l in lines {
        println!("FAULT {l}");
    }
}

/// Records when a stream's wake callback ran (the callback of `lance_stream_poll_next`).
struct WakeLog {
    at: std::sync::Mutex<Vec<Instant>>,
}

unsafe extern "C" fn record_wake(user_data: *mut std::ffi::c_void) {
    // SAFETY: the test passes a `WakeLog` that outlives the stream.
    let log = unsafe { &*(user_data as *const WakeLog) };
    log.at.lock().unwrap().push(Instant::now());
}

fn wait_woken(log: &WakeLog, within: Duration) -> Option<Instant> {
    let started = Instant::now();
    while started.elapsed() < within {
        if let Some(t) = log.at.lock().unwrap().first() {
            return Some(*t);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

/// Non-blocking streams on slow stores: a parked stream is woken by a cancellation and by its
/// deadline alone (on a store where every request takes 2 s: long before any read could
/// finish, with a second to spare for a loaded machine), never after its release, and the next
/// poll reports why it stopped; on a store where requests take 700 ms it reads to the end.
#[test]
fn poll_wakes_on_cancel_and_deadline_without_data() {
    use lance_host::ffi::session::*;
    let s = shared();
    let moto_port: u16 = s.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let table = private_vectors_table("pollwake");
    let proxy = lance_host_testkit::DelayProxy::start(moto_port, Duration::from_millis(700)).unwrap();
    let ds = open_s3(&table, &format!("http://127.0.0.1:{}", proxy.port)).unwrap();
    const SLOW: Duration = Duration::from_millis(2000);
    let slow_proxy = lance_host_testkit::DelayProxy::start(moto_port, SLOW).unwrap();
    let slow = open_s3(&table, &format!("http://127.0.0.1:{}", slow_proxy.port)).unwrap();
    let log = WakeLog { at: std::sync::Mutex::new(Vec::new()) };
    let user = &log as *const WakeLog as *mut std::ffi::c_void;
    let poll = |st: &mut FFI_ArrowArrayStream| -> (i32, i32) {
        let mut a = arrow::ffi::FFI_ArrowArray::empty();
        let mut status = -1;
        let rc = lance_stream_poll_next(st, &mut a, Some(record_wake), user, &mut status);
        (rc, status)
    };
    let o = default_opts();

    // 1. Cancellation wakes a parked stream at once.
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(slow.ptr(), &o, &mut stream), 0, "{}", last_message());
    assert_eq!(poll(&mut stream), (0, LancePollStatus::LANCE_POLL_PENDING as i32));
    std::thread::sleep(Duration::from_millis(50));
    assert!(log.at.lock().unwrap().is_empty(), "woken before anything happened");
    let cancelled = Instant::now();
    assert_eq!(lance_stream_cancel(&stream), 0);
    let woke = wait_woken(&log, Duration::from_secs(5)).expect("no wake-up after the cancel");
    assert!(woke.duration_since(cancelled) < SLOW * 3 / 4, "woken {:?} after the cancel", woke.duration_since(cancelled));
    assert_eq!(poll(&mut stream).0, LANCE_ERR_CANCELLED as i32, "{}", last_message());
    assert_eq!(poll(&mut stream).0, LANCE_ERR_CANCELLED as i32, "a failed stream keeps failing");
    unsafe { (stream.release.unwrap())(&mut stream) };
    log.at.lock().unwrap().clear();

    // 2. A deadline wakes a parked stream when it passes.
    let ctx = lance_call_context_new(250);
    assert_eq!(lance_call_context_enter(ctx), 0);
    let started = Instant::now();
    let mut stream = FFI_ArrowArrayStream::empty();
    let rc = lance_dataset_scan_v2(slow.ptr(), &o, &mut stream);
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    assert_eq!(rc, 0, "{}", last_message());
    assert_eq!(poll(&mut stream), (0, LancePollStatus::LANCE_POLL_PENDING as i32));
    let woke = wait_woken(&log, Duration::from_secs(5)).expect("no wake-up at the deadline");
    let after = woke.duration_since(started);
    assert!(after >= Duration::from_millis(250) && after < SLOW * 3 / 4, "woken after {after:?}, deadline 250 ms");
    assert_eq!(poll(&mut stream).0, LANCE_ERR_TIMEOUT as i32, "{}", last_message());
    unsafe { (stream.release.unwrap())(&mut stream) };
    lance_call_context_free(ctx);
    log.at.lock().unwrap().clear();

    // 3. Released while parked: the read that completes later wakes nobody.
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    assert_eq!(poll(&mut stream), (0, LancePollStatus::LANCE_POLL_PENDING as i32));
    unsafe { (stream.release.unwrap())(&mut stream) };
    std::thread::sleep(Duration::from_millis(1500));
    assert!(log.at.lock().unwrap().is_empty(), "woken after release");

    // 4. Without interference the parked stream is woken by its data and reads to the end.
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let (mut rows, mut wakes) = (0i64, 0);
    loop {
        log.at.lock().unwrap().clear();
        let mut a = arrow::ffi::FFI_ArrowArray::empty();
        let mut status = -1;
        assert_eq!(lance_stream_poll_next(&mut stream, &mut a, Some(record_wake), user, &mut status), 0, "{}", last_message());
        match status {
            x if x == LancePollStatus::LANCE_POLL_READY as i32 => rows += a.len() as i64,
            x if x == LancePollStatus::LANCE_POLL_PENDING as i32 => {
                wait_woken(&log, Duration::from_secs(60)).expect("a pending stream was never woken");
                wakes += 1;
            }
            _ => break,
        }
    }
    let mut expected = 0u64;
    assert_eq!(lance_dataset_count_rows(ds.ptr(), &mut expected), 0);
    assert_eq!(rows as u64, expected, "rows read through poll");
    assert!(wakes > 0);
    unsafe { (stream.release.unwrap())(&mut stream) };
    drop(ds);
    drop(slow);
    drop(proxy);
    drop(slow_proxy);
}

/// Blob range reads on s3://: each read is ranged GETs of the blob's objects for about the
/// bytes asked for (the server's log and the library's count), never a whole-object GET; the
/// bytes equal what was written.
#[test]
fn blob_range_reads_on_s3_are_ranged_requests_only() {
    use crate::blob::{info, read, row_ids, take};
    use lance_host::ffi::blob::*;
    use lance_host::ffi::handles::LanceIoStats;
    let s = shared();
    let moto = s.moto.as_ref().expect("parent owns the server");
    let table = format!("{}/blobs_private/blobs.lance", s.facts.get("root"));
    let (t, opts) = (table.clone(), s3_options(&s.endpoint));
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            let mut facts = Facts::default();
            lance_host_testkit::write_blobs(&t, &mut facts, &opts).await.expect("write blobs");
        })
    })
    .join()
    .unwrap();
    let ds = open_s3(&table, &s.endpoint).unwrap();
    let rows = row_ids(&ds);
    let ids: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let b = take(&ds, "payload", &ids).unwrap_or_else(|_| panic!("{}", last_message()));
    let path = format!("{}/", table.trim_start_matches("s3://"));
    let io = |b: *const LanceBlobs| {
        let mut s = LanceIoStats { struct_size: std::mem::size_of::<LanceIoStats>(), ..Default::default() };
        assert_eq!(lance_blobs_io_stats(b, &mut s), 0);
        s
    };
    let (mut reads, mut checked_big) = (0, false);
    for (i, (_, id)) in rows.iter().enumerate() {
        let Some(n) = lance_host_testkit::blob_len(*id) else { continue };
        if n == 0 {
            continue;
        }
        let inf = info(b, i);
        for (off, len) in crate::blob::ranges(n) {
            let before_log = moto.requests().len();
            let before = io(b);
            let got = read(b, i, off as u64, len).unwrap();
            let after = io(b);
            assert!(got.iter().enumerate().all(|(j, v)| *v == lance_host_testkit::blob_byte(*id, off + j)), "row {id} {off}+{len}");
            let lines: Vec<String> = moto.requests()[before_log..].iter().filter(|l| l.contains(&path)).cloned().collect();
            let gets: Vec<&String> = lines.iter().filter(|l| l.contains("\"GET ")).collect();
            assert!(!gets.is_empty(), "no GET for row {id} {off}+{len}");
            assert_eq!(gets.len(), lines.len(), "only GETs: {lines:#?}");
            assert!(gets.iter().all(|l| l.contains("\" 206 ")), "whole-object GET for a range read: {gets:#?}");
            let (requests, bytes) = (after.read_requests - before.read_requests, after.read_bytes - before.read_bytes);
            assert_eq!(requests as usize, gets.len(), "library and server disagree");
            assert!(bytes >= len as u64 && bytes <= len as u64 + 4096, "read {bytes} bytes for a {len}-byte range of a {n}-byte blob (kind {})", inf.kind);
            checked_big |= inf.kind == LanceBlobKind::LANCE_BLOB_DEDICATED as i32 && len < n / 100;
            reads += 1;
        }
    }
    assert!(checked_big, "no small range of a dedicated blob was read");
    println!("BLOB-S3 ranged_reads={reads}");
    lance_blobs_free(b);
}
