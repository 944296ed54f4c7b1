//! lance-host-stress: N threads of mixed operations through lance-host's C ABI on shared and
//! per-thread handles, every result checked against values known in advance; optionally a
//! concurrent writer that appends, deletes, updates, compacts, optimizes indexes and cleans up
//! old versions while readers hold pinned handles.
//!
//!   lance-host-stress [--threads 8] [--seconds 10] [--writer] [--warehouse DIR]
//! With --writer the run lasts until the writer made each kind of commit once (at most ten
//! times --seconds).
//!                     [--index-cache-mb N] [--metadata-cache-mb N]
//!
//! Without `--warehouse` the testkit writes a fresh one into a temporary directory. Prints one
//! JSON report line (operations, wrong results, errors by code, RSS at start and end); exits
//! with 1 when any result was wrong or any error was not one the scenario allows.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{Float32Type, Int64Type, UInt64Type};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use lance_host::ffi::catalog::*;
use lance_host::ffi::dataset::*;
use lance_host::ffi::error::*;
use lance_host::ffi::index::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::session::*;
use lance_host::ffi::take::*;
use lance_host_testkit as tk;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Opts {
    threads: usize,
    seconds: f64,
    writer: bool,
    warehouse: Option<String>,
    /// Session cache budgets in MiB (0 = the library's defaults).
    index_cache_mb: u64,
    metadata_cache_mb: u64,
}

fn parse_args() -> Opts {
    let mut o = Opts { threads: 8, seconds: 10.0, writer: false, warehouse: None, index_cache_mb: 0, metadata_cache_mb: 0 };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--threads" => {
                o.threads = args[i + 1].parse().expect("--threads N");
                i += 1;
            }
            "--seconds" => {
                o.seconds = args[i + 1].parse().expect("--seconds S");
                i += 1;
            }
            "--writer" => o.writer = true,
            "--warehouse" => {
                o.warehouse = Some(args[i + 1].clone());
                i += 1;
            }
            "--index-cache-mb" => {
                o.index_cache_mb = args[i + 1].parse().expect("--index-cache-mb N");
                i += 1;
            }
            "--metadata-cache-mb" => {
                o.metadata_cache_mb = args[i + 1].parse().expect("--metadata-cache-mb N");
                i += 1;
            }
            other => {
                eprintln!("unknown argument {other}\nusage: lance-host-stress [--threads N] [--seconds S] [--writer] [--warehouse DIR] [--index-cache-mb N] [--metadata-cache-mb N]");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    o
}

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(-1.0)
}

fn last_error() -> (String, String) {
    let code = lance_last_error_code() as i32;
    let name = unsafe { CStr::from_ptr(lance_error_code_name(code)) }.to_string_lossy().into_owned();
    let msg = unsafe { CStr::from_ptr(lance_last_error_message()) }.to_string_lossy().into_owned();
    (name, msg)
}

/// An owned dataset handle.
struct Ds(*mut LanceDataset);
unsafe impl Send for Ds {}
unsafe impl Sync for Ds {}
impl Drop for Ds {
    fn drop(&mut self) {
        lance_dataset_free(self.0);
    }
}

fn open(uri: &str, version: u64) -> Result<Ds, (String, String)> {
    let c = CString::new(uri).unwrap();
    let p = lance_dataset_open(c.as_ptr(), std::ptr::null(), version);
    if p.is_null() {
        Err(last_error())
    } else {
        Ok(Ds(p))
    }
}

fn read(stream: FFI_ArrowArrayStream) -> Result<Vec<RecordBatch>, (String, String)> {
    let reader = ArrowArrayStreamReader::try_new(stream).map_err(|e| ("STREAM".into(), e.to_string()))?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ("STREAM".to_string(), e.to_string()))
}

fn ids(batches: &[RecordBatch], col: &str) -> Vec<i64> {
    batches.iter().flat_map(|b| b.column_by_name(col).unwrap().as_primitive::<Int64Type>().values().to_vec()).collect()
}

fn u64s(batches: &[RecordBatch], col: &str) -> Vec<u64> {
    batches.iter().flat_map(|b| b.column_by_name(col).unwrap().as_primitive::<UInt64Type>().values().to_vec()).collect()
}

/// Scan `id` (optionally filtered / restricted to fragments): (rows, sum of ids).
fn scan_ids(ds: &Ds, filter: Option<&str>, frags: Option<&[u64]>, split: Option<*const LanceSplit>) -> Result<(u64, i64), (String, String)> {
    let cols = [CString::new("id").unwrap()];
    let ptrs: Vec<*const c_char> = cols.iter().map(|c| c.as_ptr()).collect();
    let f = filter.map(|f| CString::new(f).unwrap());
    let mut o = LanceScanOptions::default();
    o.columns = ptrs.as_ptr();
    o.num_columns = 1;
    o.filter_sql = f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr());
    if let Some(fr) = frags {
        o.fragment_ids = fr.as_ptr();
        o.num_fragment_ids = fr.len();
    }
    let mut st = FFI_ArrowArrayStream::empty();
    let rc = match split {
        Some(s) => lance_split_scan_v2(ds.0, s, &o, &mut st),
        None => lance_dataset_scan_v2(ds.0, &o, &mut st),
    };
    if rc != 0 {
        return Err(last_error());
    }
    let b = read(st)?;
    let v = ids(&b, "id");
    Ok((v.len() as u64, v.iter().sum()))
}

/// What the fixture table holds, known before the run.
struct Expect {
    uri: String,
    root: String,
    version: u64,
    count: u64,
    sum: i64,
    filtered: (u64, i64),
    rowid_to_id: Vec<(u64, i64)>,
    queries: Vec<(Vec<f32>, Vec<i64>)>,
}

const FILTER: &str = "id < 1000";

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn expect(uri: &str, root: &str, total_ids: i64) -> Expect {
    let visible: Vec<i64> = (0..total_ids).filter(|i| !tk::vector_deleted(*i)).collect();
    let ds = open(uri, 0).expect("open fixture");
    let version = lance_dataset_version(ds.0);
    // Row ids of every visible row, from one scan (the take checks use them).
    let cols = [CString::new("id").unwrap()];
    let ptrs: Vec<*const c_char> = cols.iter().map(|c| c.as_ptr()).collect();
    let mut o = LanceScanOptions::default();
    o.columns = ptrs.as_ptr();
    o.num_columns = 1;
    o.with_row_id = true;
    let mut st = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.0, &o, &mut st), 0);
    let b = read(st).unwrap();
    let rowid_to_id: Vec<(u64, i64)> = u64s(&b, "_rowid").into_iter().zip(ids(&b, "id")).collect();
    assert_eq!(rowid_to_id.len(), visible.len(), "fixture rows differ from the testkit's description");
    let queries = (0..8)
        .map(|s| {
            let q: Vec<f32> = tk::vector_of(s * 263 + 11).iter().map(|x| x + 0.03).collect();
            let mut all: Vec<(f32, i64)> = visible.iter().map(|i| (l2(&q, &tk::vector_of(*i)), *i)).collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            (q, all.into_iter().take(10).map(|x| x.1).collect())
        })
        .collect();
    let f: Vec<i64> = visible.iter().copied().filter(|i| *i < 1000).collect();
    Expect {
        uri: uri.to_string(),
        root: root.to_string(),
        version,
        count: visible.len() as u64,
        sum: visible.iter().sum(),
        filtered: (f.len() as u64, f.iter().sum()),
        rowid_to_id,
        queries,
    }
}

#[derive(Default)]
struct Report {
    ops: BTreeMap<&'static str, u64>,
    wrong: u64,
    wrong_examples: Vec<String>,
    errors: BTreeMap<String, u64>,
    error_examples: Vec<String>,
}

impl Report {
    fn ok(&mut self, kind: &'static str) {
        *self.ops.entry(kind).or_default() += 1;
    }
    fn wrong(&mut self, kind: &'static str, what: String) {
        self.ok(kind);
        self.wrong += 1;
        if self.wrong_examples.len() < 5 {
            self.wrong_examples.push(format!("{kind}: {what}"));
        }
    }
    fn error(&mut self, kind: &'static str, (code, msg): (String, String)) {
        self.ok(kind);
        *self.errors.entry(code.clone()).or_default() += 1;
        if self.error_examples.len() < 5 {
            self.error_examples.push(format!("{kind}: {code}: {}", msg.chars().take(300).collect::<String>()));
        }
    }
    fn merge(&mut self, o: Report) {
        for (k, v) in o.ops {
            *self.ops.entry(k).or_default() += v;
        }
        self.wrong += o.wrong;
        self.wrong_examples.extend(o.wrong_examples.into_iter().take(5 - self.wrong_examples.len().min(5)));
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.error_examples.extend(o.error_examples.into_iter().take(5 - self.error_examples.len().min(5)));
    }
}

/// Plan, search every split of `column` (flat when `use_index` is false), merge the top 10.
fn search(ds: &Ds, q: &[f32], use_index: bool) -> Result<Vec<(i64, f32)>, (String, String)> {
    let col = CString::new("embedding").unwrap();
    let mut plan = std::ptr::null_mut();
    if lance_dataset_plan_vector_search(ds.0, col.as_ptr(), 1, use_index, 0, &mut plan) != 0 {
        return Err(last_error());
    }
    let cols = [CString::new("id").unwrap()];
    let ptrs: Vec<*const c_char> = cols.iter().map(|c| c.as_ptr()).collect();
    let mut query = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
    lance_vector_query_init_v2(query.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>());
    let mut query = unsafe { query.assume_init() };
    query.column = col.as_ptr();
    query.vector = q.as_ptr() as *const _;
    query.dimension = q.len();
    query.k = 10;
    query.nprobes = 4;
    query.columns = ptrs.as_ptr();
    query.num_columns = 1;
    let mut streams = Vec::new();
    let mut failed = None;
    for i in 0..lance_split_plan_count(plan) {
        let s = lance_split_plan_get(plan, i);
        let mut st = FFI_ArrowArrayStream::empty();
        if lance_split_search_v2(ds.0, s, &query, &mut st) == 0 {
            streams.push(st);
        } else if failed.is_none() {
            failed = Some(last_error());
        }
        lance_split_free(s);
    }
    lance_split_plan_free(plan);
    if let Some(e) = failed {
        return Err(e);
    }
    let mut out = FFI_ArrowArrayStream::empty();
    if lance_topk_merge(streams.as_mut_ptr(), streams.len(), 10, 0, &mut out) != 0 {
        return Err(last_error());
    }
    let b = read(out)?;
    let d: Vec<f32> = b
        .iter()
        .flat_map(|b| b.column_by_name("_distance").unwrap().as_primitive::<Float32Type>().values().to_vec())
        .collect();
    Ok(ids(&b, "id").into_iter().zip(d).collect())
}

fn reader_thread(t: usize, e: Arc<Expect>, shared: Arc<Ds>, stop: Arc<AtomicBool>) -> Report {
    let mut r = Report::default();
    let mut rng = StdRng::seed_from_u64(t as u64 * 7919 + 1);
    let own = open(&e.uri, e.version).expect("open");
    while !stop.load(Ordering::Relaxed) {
        let ds: &Ds = if rng.random_bool(0.5) { &shared } else { &own };
        match rng.random_range(0..10) {
            0 => match open(&e.uri, e.version) {
                Ok(d) if lance_dataset_version(d.0) == e.version => r.ok("open"),
                Ok(d) => r.wrong("open", format!("pinned open gave version {}", lance_dataset_version(d.0))),
                Err(err) => r.error("open", err),
            },
            1 => {
                let root = CString::new(e.root.clone()).unwrap();
                let key = CString::new("root").unwrap();
                let props = [key.as_ptr(), root.as_ptr(), std::ptr::null()];
                let cat = lance_catalog_open(props.as_ptr());
                if cat.is_null() {
                    r.error("catalog", last_error());
                    continue;
                }
                let mut list = std::ptr::null_mut();
                if lance_catalog_list_tables(cat, std::ptr::null(), 0, &mut list) != 0 {
                    r.error("catalog", last_error());
                } else {
                    let names: Vec<String> = (0..lance_string_list_count(list))
                        .map(|i| unsafe { CStr::from_ptr(lance_string_list_get(list, i)) }.to_string_lossy().into_owned())
                        .collect();
                    if names.iter().any(|n| n == "vectors") {
                        r.ok("catalog");
                    } else {
                        r.wrong("catalog", format!("tables {names:?}"));
                    }
                    lance_string_list_free(list);
                }
                lance_catalog_free(cat);
            }
            2 => match scan_ids(ds, Some(FILTER), None, None) {
                Ok(got) if got == e.filtered => r.ok("filtered scan"),
                Ok(got) => r.wrong("filtered scan", format!("{got:?} != {:?}", e.filtered)),
                Err(err) => r.error("filtered scan", err),
            },
            3 => {
                let mut plan = std::ptr::null_mut();
                if lance_dataset_plan_scan(ds.0, 0, &mut plan) != 0 {
                    r.error("split scan", last_error());
                    continue;
                }
                let mut total = (0u64, 0i64);
                let mut err = None;
                for i in 0..lance_split_plan_count(plan) {
                    let s = lance_split_plan_get(plan, i);
                    match scan_ids(ds, None, None, Some(s)) {
                        Ok((n, sum)) => total = (total.0 + n, total.1 + sum),
                        Err(x) => err = Some(x),
                    }
                    lance_split_free(s);
                }
                lance_split_plan_free(plan);
                match err {
                    Some(x) => r.error("split scan", x),
                    None if total == (e.count, e.sum) => r.ok("split scan"),
                    None => r.wrong("split scan", format!("{total:?}")),
                }
            }
            4 => {
                let (q, truth) = &e.queries[rng.random_range(0..e.queries.len())];
                match search(ds, q, false) {
                    Ok(got) if got.iter().map(|x| x.0).collect::<Vec<_>>() == *truth => r.ok("flat search"),
                    Ok(got) => r.wrong("flat search", format!("{got:?} != {truth:?}")),
                    Err(x) => r.error("flat search", x),
                }
            }
            5 => {
                let (q, _) = &e.queries[rng.random_range(0..e.queries.len())];
                match search(ds, q, true) {
                    Ok(got) if got.len() == 10
                        && got.windows(2).all(|w| w[0].1 <= w[1].1)
                        && got.iter().all(|(id, _)| !tk::vector_deleted(*id)) =>
                    {
                        r.ok("index search")
                    }
                    Ok(got) => r.wrong("index search", format!("{got:?}")),
                    Err(x) => r.error("index search", x),
                }
            }
            6 => {
                let picks: Vec<(u64, i64)> = (0..rng.random_range(1..40)).map(|_| e.rowid_to_id[rng.random_range(0..e.rowid_to_id.len())]).collect();
                let rowids: Vec<u64> = picks.iter().map(|p| p.0).collect();
                let col = [CString::new("id").unwrap()];
                let ptrs: Vec<*const c_char> = col.iter().map(|c| c.as_ptr()).collect();
                let mut st = FFI_ArrowArrayStream::empty();
                if lance_dataset_take_rows(ds.0, rowids.as_ptr(), rowids.len(), ptrs.as_ptr(), 1, &mut st) != 0 {
                    r.error("take", last_error());
                    continue;
                }
                match read(st) {
                    Ok(b) if ids(&b, "id") == picks.iter().map(|p| p.1).collect::<Vec<_>>() => r.ok("take"),
                    Ok(b) => r.wrong("take", format!("{:?}", ids(&b, "id"))),
                    Err(x) => r.error("take", x),
                }
            }
            7 => {
                let name = CString::new("emb_pq").unwrap();
                if lance_dataset_prewarm_index(ds.0, name.as_ptr()) == 0 {
                    r.ok("prewarm");
                } else {
                    r.error("prewarm", last_error());
                }
            }
            8 => {
                let f = CString::new(FILTER).unwrap();
                let (mut n, mut m) = (0u64, 0u64);
                if lance_dataset_count_rows_where_v2(ds.0, std::ptr::null(), &mut n, std::ptr::null_mut()) != 0
                    || lance_dataset_count_rows_where_v2(ds.0, f.as_ptr(), &mut m, std::ptr::null_mut()) != 0
                {
                    r.error("count", last_error());
                } else if (n, m) == (e.count, e.filtered.0) {
                    r.ok("count");
                } else {
                    r.wrong("count", format!("({n}, {m})"));
                }
            }
            _ => {
                let mut s = LanceSessionStats::default();
                if lance_session_stats_v2(&mut s) == 0 {
                    r.ok("session stats");
                } else {
                    r.error("session stats", last_error());
                }
            }
        }
    }
    r
}

/// Writer scenario: readers pin a version and check that every scan of it returns exactly the
/// rows it returned when pinned — or fails with an error that names the table, never a partial
/// result. A reader whose scan fails re-pins the latest version, which must not go backwards.
fn pinned_reader(t: usize, uri: String, stop: Arc<AtomicBool>, pins: Arc<AtomicU64>) -> Report {
    let mut r = Report::default();
    let mut rng = StdRng::seed_from_u64(t as u64 + 99);
    let mut last_version = 0;
    'outer: while !stop.load(Ordering::Relaxed) {
        let ds = match open(&uri, 0) {
            Ok(d) => d,
            Err(x) => {
                r.error("pin", x);
                continue;
            }
        };
        let v = lance_dataset_version(ds.0);
        if v < last_version {
            r.wrong("pin", format!("a new handle saw version {v} after {last_version}"));
        }
        last_version = v;
        pins.fetch_add(1, Ordering::Relaxed);
        let Ok(pinned) = scan_ids(&ds, None, None, None) else { continue };
        r.ok("pin");
        for _ in 0..rng.random_range(3..30) {
            if stop.load(Ordering::Relaxed) {
                break 'outer;
            }
            let filter = rng.random_bool(0.3).then_some(FILTER);
            let check = if filter.is_some() { None } else { Some(pinned) };
            match scan_ids(&ds, filter, None, None) {
                Ok(got) if check.is_none_or(|c| c == got) => r.ok("pinned scan"),
                Ok(got) => r.wrong("pinned scan", format!("version {v}: {got:?} != {pinned:?}")),
                Err((code, msg)) => {
                    // Files of this version were removed by cleanup: a clear error, then re-pin.
                    let clear = (code == "LANCE_ERR_NOT_FOUND" || code == "LANCE_ERR_IO" || code == "STREAM")
                        && msg.contains("vectors_w.lance");
                    if clear {
                        *r.errors.entry(format!("expected after cleanup: {code}")).or_default() += 1;
                        *r.ops.entry("pinned scan").or_default() += 1;
                    } else {
                        r.error("pinned scan", (code, msg));
                    }
                    continue 'outer;
                }
            }
        }
    }
    r
}

/// The kinds of commit the writer cycles through.
const WRITER_KINDS: [&str; 6] = ["append", "delete", "update", "compact", "optimize", "cleanup"];

fn writer(uri: String, stop: Arc<AtomicBool>, steps: Arc<AtomicU64>) -> (u64, BTreeMap<&'static str, u64>, Vec<String>) {
    use lance::index::DatasetIndexExt;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut commits = 0;
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut next_id = 100_000i64;
    let mut step = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let kind = WRITER_KINDS[(step % WRITER_KINDS.len() as u64) as usize];
        let res: lance::Result<()> = rt.block_on(async {
            let mut ds = lance::Dataset::open(&uri).await?;
            match kind {
                "append" => {
                    let b = tk::vectors_batch(next_id, next_id + 50);
                    next_id += 50;
                    tk::write_batch(&uri, b, lance::dataset::WriteMode::Append, &Default::default())
                        .await
                        .map_err(|e| lance::Error::internal(e.to_string()))?;
                }
                "delete" => ds.delete(&format!("id % 17 = {}", step % 17)).await.map(|_| ())?,
                "update" => {
                    lance::dataset::UpdateBuilder::new(Arc::new(ds))
                        .update_where(&format!("id % 13 = {}", step % 13))?
                        .set("category", "'updated'")?
                        .build()?
                        .execute()
                        .await?;
                }
                "compact" => {
                    lance::dataset::optimize::compact_files(&mut ds, Default::default(), None).await?;
                }
                "optimize" => ds.optimize_indices(&Default::default()).await?,
                _ => {
                    ds.cleanup_old_versions(chrono::Duration::zero(), Some(true), None).await?;
                }
            }
            Ok(())
        });
        match res {
            Ok(()) => {
                commits += 1;
                *kinds.entry(kind).or_default() += 1;
            }
            Err(e) if failures.len() < 5 => failures.push(format!("{kind}: {e}")),
            Err(_) => {}
        }
        step += 1;
        steps.store(step, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(50));
    }
    (commits, kinds, failures)
}

fn main() {
    let o = parse_args();
    if o.index_cache_mb > 0 || o.metadata_cache_mb > 0 {
        let mut so = std::mem::MaybeUninit::<LanceSessionOptions>::uninit();
        assert_eq!(lance_session_options_default_v2(so.as_mut_ptr(), std::mem::size_of::<LanceSessionOptions>()), 0);
        let mut so = unsafe { so.assume_init() };
        if o.index_cache_mb > 0 {
            so.index_cache_bytes = o.index_cache_mb << 20;
        }
        if o.metadata_cache_mb > 0 {
            so.metadata_cache_bytes = o.metadata_cache_mb << 20;
        }
        assert_eq!(lance_session_configure_v2(&so), 0, "session configuration rejected");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = match &o.warehouse {
        Some(w) => std::path::PathBuf::from(w),
        None => {
            let root = dir.path().join("warehouse");
            tokio::runtime::Runtime::new().unwrap().block_on(tk::write_warehouse(&root)).expect("write warehouse");
            root
        }
    };
    let root = std::fs::canonicalize(root).unwrap();
    let uri = root.join("vectors.lance").to_string_lossy().into_owned();
    let total_ids = 2100;
    let e = Arc::new(expect(&uri, &root.to_string_lossy(), total_ids));
    let shared = Arc::new(open(&uri, e.version).unwrap());
    // Warm up once so the start RSS includes the session and caches.
    let _ = reader_thread(0, e.clone(), shared.clone(), Arc::new(AtomicBool::new(true)));
    let rss_start = rss_mb();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut handles = Vec::new();
    let writer_uri = root.join("vectors_w.lance").to_string_lossy().into_owned();
    let pins = Arc::new(AtomicU64::new(0));
    let writer_steps = Arc::new(AtomicU64::new(0));
    let writer_handle = if o.writer {
        let u = writer_uri.clone();
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let mut f = tk::Facts::default();
            tk::write_vectors(&u, &mut f, &Default::default()).await.expect("write writer table");
        });
        let (u, s, n) = (writer_uri.clone(), stop.clone(), writer_steps.clone());
        Some(std::thread::spawn(move || writer(u, s, n)))
    } else {
        None
    };
    for t in 0..o.threads {
        let (e, shared, stop, pins, wu) = (e.clone(), shared.clone(), stop.clone(), pins.clone(), writer_uri.clone());
        let pinned = o.writer && t % 2 == 1;
        handles.push(std::thread::spawn(move || {
            if pinned {
                pinned_reader(t, wu, stop, pins)
            } else {
                reader_thread(t, e, shared, stop)
            }
        }));
    }
    // RSS every 10 s (or 10 samples for short runs): whether memory levels off under load.
    let step = (o.seconds / 10.0).clamp(0.1, 10.0);
    let mut samples = Vec::new();
    // With a writer the run lasts until it made every kind of commit once (a slow machine may
    // need longer than --seconds for that), but at most ten times --seconds.
    let writer_pending = || o.writer && writer_steps.load(Ordering::Relaxed) < WRITER_KINDS.len() as u64;
    while started.elapsed().as_secs_f64() < o.seconds
        || (writer_pending() && started.elapsed().as_secs_f64() < o.seconds * 10.0)
    {
        let left = (o.seconds - started.elapsed().as_secs_f64()).max(0.0);
        std::thread::sleep(Duration::from_secs_f64(if left > 0.0 { step.min(left) } else { 0.2 }));
        samples.push((started.elapsed().as_secs_f64().round(), (rss_mb() * 10.0).round() / 10.0));
    }
    stop.store(true, Ordering::Relaxed);
    let mut report = Report::default();
    for h in handles {
        report.merge(h.join().expect("a worker thread panicked"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let writer_report = writer_handle.map(|h| h.join().expect("the writer panicked"));
    drop(shared);
    let rss_end = rss_mb();
    let unexpected: u64 = report.errors.iter().filter(|(k, _)| !k.starts_with("expected after cleanup")).map(|(_, v)| v).sum();
    let total_ops: u64 = report.ops.values().sum();
    let mut out = serde_json::json!({
        "threads": o.threads,
        "seconds": elapsed,
        "ops": total_ops,
        "ops_by_kind": report.ops,
        "wrong": report.wrong,
        "wrong_examples": report.wrong_examples,
        "errors": report.errors,
        "error_examples": report.error_examples,
        "unexpected_errors": unexpected,
        "rss_start_mb": rss_start,
        "rss_end_mb": rss_end,
        "rss_samples_mb": samples,
    });
    if let Some((commits, kinds, failures)) = writer_report {
        out["writer"] = serde_json::json!({"commits": commits, "by_kind": kinds, "failures": failures, "pins": pins.load(Ordering::Relaxed)});
    }
    println!("{out}");
    if report.wrong > 0 || unexpected > 0 || total_ops == 0 {
        std::process::exit(1);
    }
}
