//! lance-host benchmark program. `bench/bench.sh` drives it (with `bench/run.py`) against
//! pylance on the same table; each invocation does one side of one piece of work in its own
//! process so peak RSS and page faults are per process.
//!
//!   lance-host-bench write <uri> <facts.json> [rows]      write the table + ground truth
//!   lance-host-bench host <work> <uri> <facts.json>        lance-host through its C ABI
//!   lance-host-bench native <work> <uri> <facts.json>      native Lance (Rust API)
//!
//!   lance-host-bench prewarm <mode> <nprobes> <uri> <facts.json>   prewarm benchmark (bench/prewarm.py)
//!   lance-host-bench engine-sizes|engine-token|engine-worker|engine-cancel ...  (bench/engine.py)
//!
//! Work: scan, scan_vec, filter, scan_2t, take, search8, search32, search8_2t, search8_seg.
//! Each side opens the table, runs the work once as warm-up, then `BENCH_ITERS` timed times
//! (search work: once per query vector) and prints one JSON line with the timings, rows and
//! recall@10. Between iterations it prints `MARK <i>` and waits for a line on stdin when
//! `BENCH_HANDSHAKE=1`, so the driver can attribute object-store requests to iterations.
//! Storage options come from `BENCH_S3_ENDPOINT` for `s3://` URIs.

mod batch;
mod fts;
mod host;
mod engine;
mod prewarm;

use std::collections::BinaryHeap;
use std::ffi::CString;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{
    Array, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
    RecordBatchIterator, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lance::dataset::{Dataset, WriteMode, WriteParams};
use lance::index::vector::VectorIndexParams;
use lance::index::DatasetIndexExt;
use lance_host::ffi::dataset::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::take::*;
use lance_index::IndexType;
use lance_linalg::distance::MetricType;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use host::Host;

const DIM: usize = 128;
const CENTERS: usize = 256;
const QUERIES: usize = 20;
const K: usize = 10;
const REFINE: u32 = 4;
/// Rows per write batch (the writer makes at least one page per batch and column).
/// `BENCH_WRITE_CHUNK` overrides it to measure the effect of page size on readers.
fn chunk() -> usize {
    std::env::var("BENCH_WRITE_CHUNK").ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(50_000)
}
/// The table is written as this many fragments (rows / FRAGMENTS rows each).
const FRAGMENTS: usize = 30;

// ---- Data ----------------------------------------------------------------------------------

fn centers() -> Vec<Vec<f32>> {
    let mut r = StdRng::seed_from_u64(1);
    (0..CENTERS).map(|_| (0..DIM).map(|_| r.random_range(-1.0f32..1.0)).collect()).collect()
}

/// The query vectors: near cluster centres, never equal to a stored vector.
fn queries() -> Vec<Vec<f32>> {
    let c = centers();
    let mut r = StdRng::seed_from_u64(2);
    (0..QUERIES)
        .map(|i| c[(i * 37) % CENTERS].iter().map(|x| x + r.random_range(-0.15f32..0.15)).collect())
        .collect()
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("cat", DataType::Utf8, false),
        Field::new("price", DataType::Float64, false),
        Field::new("ts", DataType::Int64, false),
        Field::new("payload", DataType::Utf8, false),
        Field::new(
            "vec",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), DIM as i32),
            false,
        ),
    ]))
}

/// Exact top-k of every query, kept while the data is generated.
struct Truth {
    heaps: Vec<BinaryHeap<(OrdF32, i64)>>,
}

/// f32 ordered by `total_cmp`, for the heaps.
#[derive(Clone, Copy)]
struct OrdF32(f32);
impl PartialEq for OrdF32 {
    fn eq(&self, o: &Self) -> bool {
        self.0.total_cmp(&o.0).is_eq()
    }
}
impl Eq for OrdF32 {}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for OrdF32 {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

impl Truth {
    fn observe(&mut self, qs: &[Vec<f32>], id: i64, v: &[f32]) {
        for (q, heap) in qs.iter().zip(&mut self.heaps) {
            let d: f32 = q.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum();
            if heap.len() < K {
                heap.push((OrdF32(d), id));
            } else if (OrdF32(d), id) < *heap.peek().unwrap() {
                heap.pop();
                heap.push((OrdF32(d), id));
            }
        }
    }
    fn ids(&self) -> Vec<Vec<i64>> {
        self.heaps
            .iter()
            .map(|h| {
                let mut v: Vec<_> = h.iter().copied().collect();
                v.sort();
                v.into_iter().map(|x| x.1).collect()
            })
            .collect()
    }
}

fn make_batch(start: i64, n: usize, centers: &[Vec<f32>], qs: &[Vec<f32>], truth: &Mutex<Truth>) -> RecordBatch {
    let mut r = StdRng::seed_from_u64(1000 + start as u64);
    let ids: Vec<i64> = (start..start + n as i64).collect();
    let mut flat = Vec::with_capacity(n * DIM);
    {
        let mut t = truth.lock().unwrap();
        for id in &ids {
            let c = &centers[r.random_range(0..CENTERS)];
            let v: Vec<f32> = c.iter().map(|x| x + r.random_range(-0.3f32..0.3)).collect();
            t.observe(qs, *id, &v);
            flat.extend_from_slice(&v);
        }
    }
    let cats: Vec<String> = ids.iter().map(|i| format!("cat-{:02}", (i * 7919) % 20)).collect();
    let prices: Vec<f64> = ids.iter().map(|_| r.random_range(0.0..100.0)).collect();
    let ts: Vec<i64> = ids.iter().map(|i| 1_700_000_000_000 + i * 1000).collect();
    let payload: Vec<String> = ids
        .iter()
        .map(|i| format!("payload-{i:012}-{}", "x".repeat(40 + (*i as usize % 24))))
        .collect();
    let vec = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        DIM as i32,
        Arc::new(Float32Array::from(flat)),
        None,
    )
    .unwrap();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(cats)),
            Arc::new(Float64Array::from(prices)),
            Arc::new(Int64Array::from(ts)),
            Arc::new(StringArray::from(payload)),
            Arc::new(vec),
        ],
    )
    .unwrap()
}

fn storage_options(uri: &str) -> Vec<(String, String)> {
    match std::env::var("BENCH_S3_ENDPOINT") {
        Ok(ep) if uri.starts_with("s3://") => vec![
            ("aws_endpoint".into(), ep),
            ("aws_region".into(), "us-east-1".into()),
            ("aws_access_key_id".into(), "testing".into()),
            ("aws_secret_access_key".into(), "testing".into()),
            ("allow_http".into(), "true".into()),
            ("aws_virtual_hosted_style_request".into(), "false".into()),
        ],
        _ => vec![],
    }
}

async fn write_part(
    uri: &str,
    start: i64,
    rows: usize,
    mode: WriteMode,
    per_file: usize,
    truth: &Arc<Mutex<Truth>>,
) -> Dataset {
    let c = Arc::new(centers());
    let qs = Arc::new(queries());
    let t = truth.clone();
    let chunk = chunk();
    let batches = (0..rows).step_by(chunk).map(move |off| {
        Ok(make_batch(start + off as i64, chunk.min(rows - off), &c, &qs, &t))
    });
    let params = WriteParams {
        mode,
        max_rows_per_file: per_file,
        data_storage_version: Some(lance_file::version::LanceFileVersion::V2_1),
        ..Default::default()
    };
    Dataset::write(RecordBatchIterator::new(batches, schema()), uri, Some(params))
        .await
        .unwrap()
}

/// Three parts: 47 % indexed by segment 1 of `vec_idx`, 43 % appended and indexed by segment 2
/// (`optimize_indices`), 10 % appended afterwards (no segment covers it); BTREE on `id`.
async fn write_table(uri: &str, rows: usize) -> serde_json::Value {
    let truth = Arc::new(Mutex::new(Truth { heaps: (0..QUERIES).map(|_| BinaryHeap::new()).collect() }));
    let per_file = rows.div_ceil(FRAGMENTS).max(1);
    let a = per_file * (FRAGMENTS * 47 / 100);
    let b = per_file * (FRAGMENTS * 90 / 100) - a;
    let tail = rows - a - b;
    let t0 = Instant::now();
    let mut ds = write_part(uri, 0, a, WriteMode::Create, per_file, &truth).await;
    eprintln!("part 1 ({a} rows) written in {:?}", t0.elapsed());
    let pq = VectorIndexParams::ivf_pq(256, 8, 16, MetricType::L2, 20);
    ds.create_index(&["vec"], IndexType::Vector, Some("vec_idx".into()), &pq, true).await.unwrap();
    eprintln!("IVF_PQ segment 1 built at {:?}", t0.elapsed());
    let mut ds = write_part(uri, a as i64, b, WriteMode::Append, per_file, &truth).await;
    let mut append = lance_index::optimize::OptimizeOptions::append();
    append.index_names = Some(vec!["vec_idx".into()]);
    ds.optimize_indices(&append).await.unwrap();
    eprintln!("segment 2 built at {:?}", t0.elapsed());
    let btree = lance_index::scalar::ScalarIndexParams::for_builtin(lance_index::scalar::BuiltinIndexType::BTree);
    ds.create_index(&["id"], IndexType::Scalar, Some("id_btree".into()), &btree, true).await.unwrap();
    let ds = write_part(uri, (a + b) as i64, tail, WriteMode::Append, per_file, &truth).await;
    eprintln!("tail ({tail} rows) written at {:?}", t0.elapsed());
    let truth = truth.lock().unwrap().ids();
    let take = take_ids(&ds).await;
    serde_json::json!({
        "take_ids": take,
        "rows": rows,
        "fragments": ds.get_fragments().len(),
        "segment_rows": [a, b],
        "tail_rows": tail,
        "queries": queries(),
        "truth": truth,
        "refine_factor": REFINE,
        "k": K,
    })
}

// ---- Work ------------------------------------------------------------------------------------

struct Facts {
    queries: Vec<Vec<f32>>,
    truth: Vec<Vec<i64>>,
    take_ids: Vec<u64>,
}

fn load_facts(path: &str) -> Facts {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    Facts {
        queries: serde_json::from_value(v["queries"].clone()).unwrap(),
        truth: serde_json::from_value(v["truth"].clone()).unwrap(),
        take_ids: serde_json::from_value(v["take_ids"].clone()).unwrap(),
    }
}

/// 1,000 distinct row ids spread over the table's fragments (row ids are addresses:
/// fragment id << 32 | offset), sorted.
async fn take_ids(ds: &Dataset) -> Vec<u64> {
    let mut r = StdRng::seed_from_u64(5);
    let mut frags = Vec::new();
    for f in ds.get_fragments() {
        frags.push((f.id() as u64, f.physical_rows().await.unwrap() as u64));
    }
    let mut ids: Vec<u64> = (0..1000)
        .map(|_| {
            let (f, n) = frags[r.random_range(0..frags.len())];
            (f << 32) | r.random_range(0..n)
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn recall(found: &[i64], truth: &[i64]) -> f64 {
    found.iter().filter(|i| truth.contains(i)).count() as f64 / truth.len() as f64
}

/// The session's data cache from the environment, before first use: BENCH_DATA_CACHE = `off`
/// (no data cache) or `on` (memory tier of BENCH_DATA_CACHE_MEM bytes, default the library's;
/// disk tier in BENCH_DATA_CACHE_DIR of BENCH_DATA_CACHE_DISK bytes when a directory is given).
/// Unset: the library's defaults.
fn configure_data_cache() {
    use lance_host::ffi::session::*;
    let Ok(mode) = std::env::var("BENCH_DATA_CACHE") else { return };
    let mut o = std::mem::MaybeUninit::<LanceSessionOptions>::uninit();
    assert_eq!(lance_session_options_default_v2(o.as_mut_ptr(), std::mem::size_of::<LanceSessionOptions>()), 0);
    let mut o = unsafe { o.assume_init() };
    let dir = std::env::var("BENCH_DATA_CACHE_DIR").ok().map(|d| CString::new(d).unwrap());
    match mode.as_str() {
        "off" => o.data_cache_disabled = 1,
        "on" => {
            o.data_cache_memory_bytes = env_u64("BENCH_DATA_CACHE_MEM");
            if let Some(d) = &dir {
                o.data_cache_disk_dir = d.as_ptr();
                o.data_cache_disk_bytes = env_u64("BENCH_DATA_CACHE_DISK");
            }
        }
        other => panic!("BENCH_DATA_CACHE={other}: use on or off"),
    }
    assert_eq!(lance_session_configure_v2(&o), 0, "cannot configure the data cache");
}

/// Data cache figures of the session (0s without one), for the bench's JSON line.
fn data_cache_json() -> serde_json::Value {
    use lance_host::ffi::session::*;
    let mut s = LanceSessionStats { struct_size: std::mem::size_of::<LanceSessionStats>(), ..Default::default() };
    if lance_session_stats_v2(&mut s) != 0 {
        return serde_json::Value::Null;
    }
    serde_json::json!({
        "hits": s.data_cache_hits, "misses": s.data_cache_misses, "hit_bytes": s.data_cache_hit_bytes,
        "storage_requests": s.data_cache_storage_requests, "storage_bytes": s.data_cache_storage_bytes,
        "memory_bytes": s.data_cache_memory_bytes, "disk_bytes": s.data_cache_disk_bytes,
        "disk_enabled": s.data_cache_disk_enabled, "disk_write_drops": s.data_cache_disk_write_drops,
    })
}

fn env_u64(name: &str) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// One measured iteration's outcome.
struct Outcome {
    rows: usize,
    ids: Vec<i64>,
}

fn cstrs(v: &[&str]) -> (Vec<CString>, Vec<*const std::ffi::c_char>) {
    let owned: Vec<CString> = v.iter().map(|s| CString::new(*s).unwrap()).collect();
    let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
    (owned, ptrs)
}

/// Bytes read by every lance-host stream drained so far (all / index files), from each
/// stream's own I/O statistics read just before it is released.
static READ_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static INDEX_READ_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn drain(mut stream: FFI_ArrowArrayStream) -> Vec<RecordBatch> {
    let mut batches = Vec::new();
    let mut schema = arrow::ffi::FFI_ArrowSchema::empty();
    // SAFETY: a live stream; get_schema/get_next follow the Arrow C stream contract.
    assert_eq!(unsafe { (stream.get_schema.unwrap())(&mut stream, &mut schema) }, 0);
    loop {
        let mut array = arrow::ffi::FFI_ArrowArray::empty();
        assert_eq!(unsafe { (stream.get_next.unwrap())(&mut stream, &mut array) }, 0);
        if array.is_released() {
            break;
        }
        let data = unsafe { arrow::ffi::from_ffi(array, &schema) }.unwrap();
        batches.push(RecordBatch::from(arrow_array::StructArray::from(data)));
    }
    let mut io = LanceIoStats::default();
    // Streams of other producers (the bench's own merge inputs) have no statistics.
    if lance_stream_io_stats_v2(&stream, &mut io) == 0 {
        READ_BYTES.fetch_add(io.read_bytes, std::sync::atomic::Ordering::Relaxed);
        INDEX_READ_BYTES.fetch_add(io.index_read_bytes, std::sync::atomic::Ordering::Relaxed);
    }
    batches
}

fn i64s(batches: &[RecordBatch], name: &str) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            b.column_by_name(name).unwrap().as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec()
        })
        .collect()
}

fn u64s(batches: &[RecordBatch], name: &str) -> Vec<u64> {
    batches
        .iter()
        .flat_map(|b| {
            b.column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::UInt64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect()
}

struct Native {
    rt: tokio::runtime::Runtime,
    ds: Arc<Dataset>,
}

impl Native {
    fn open(uri: &str) -> Native {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let opts: std::collections::HashMap<String, String> = storage_options(uri).into_iter().collect();
        let ds = rt.block_on(async {
            lance::dataset::builder::DatasetBuilder::from_uri(uri)
                .with_storage_options(opts)
                .load()
                .await
                .unwrap()
        });
        Native { rt, ds: Arc::new(ds) }
    }

    fn scan(&self, cols: &[&str], filter: Option<&str>) -> usize {
        self.rt.block_on(async {
            let mut sc = self.ds.scan();
            sc.project(cols).unwrap();
            if let Some(f) = filter {
                sc.filter(f).unwrap();
            }
            let io = env_u64("BENCH_IO_BUFFER");
            if io > 0 {
                sc.io_buffer_size(io);
            }
            let s = sc.try_into_stream().await.unwrap();
            s.try_fold(0, |n, b| async move { Ok(n + b.num_rows()) }).await.unwrap()
        })
    }

    fn take(&self, ids: &[u64]) -> usize {
        self.rt.block_on(async {
            let proj = self.ds.schema().project(&["id", "price"]).unwrap();
            self.ds.take_rows(ids, proj).await.unwrap().num_rows()
        })
    }

    fn search(&self, q: &[f32], nprobes: u32) -> Vec<i64> {
        self.rt.block_on(async {
            let mut sc = self.ds.scan();
            sc.nearest("vec", &Float32Array::from(q.to_vec()), K).unwrap();
            sc.nprobes(nprobes as usize);
            sc.refine(REFINE);
            sc.project(&["id"]).unwrap();
            let b = sc.try_into_batch().await.unwrap();
            i64s(&[b], "id")
        })
    }
}

fn mark(label: &str) {
    if std::env::var("BENCH_HANDSHAKE").as_deref() == Ok("1") {
        println!("MARK {label}");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).unwrap();
    }
}

fn run_side(side: &str, work: &str, uri: &str, facts: &Facts) {
    let iters = env_u64("BENCH_ITERS").max(1) as usize;
    let ids = facts.take_ids.clone();
    let host = (side == "host").then(|| Host::open(uri));
    let native = (side == "native").then(|| Native::open(uri));
    let scan_cols = ["id", "cat", "price", "ts", "payload"];
    let vec_cols = ["id", "cat", "price", "ts", "payload", "vec"];
    let is_search = work.starts_with("search");
    let once = |i: usize| -> Outcome {
        let q = &facts.queries[i % facts.queries.len()];
        match (work, &host, &native) {
            ("scan", Some(h), _) => Outcome { rows: h.scan(&scan_cols, None), ids: vec![] },
            ("scan", _, Some(n)) => Outcome { rows: n.scan(&scan_cols, None), ids: vec![] },
            ("scan_vec", Some(h), _) => Outcome { rows: h.scan(&vec_cols, None), ids: vec![] },
            ("scan_vec", _, Some(n)) => Outcome { rows: n.scan(&vec_cols, None), ids: vec![] },
            ("filter", Some(h), _) => Outcome { rows: h.scan(&["id", "price"], Some("price < 10")), ids: vec![] },
            ("filter", _, Some(n)) => Outcome { rows: n.scan(&["id", "price"], Some("price < 10")), ids: vec![] },
            ("scan_2t", Some(h), _) => Outcome { rows: h.scan_2t(&scan_cols), ids: vec![] },
            ("take", Some(h), _) => Outcome { rows: h.take(&ids), ids: vec![] },
            ("take", _, Some(n)) => Outcome { rows: n.take(&ids), ids: vec![] },
            ("search8", Some(h), _) => { let r = h.search(q, 8, 1, true); Outcome { rows: r.len(), ids: r } }
            ("search32", Some(h), _) => { let r = h.search(q, 32, 1, true); Outcome { rows: r.len(), ids: r } }
            ("search8_2t", Some(h), _) => { let r = h.search(q, 8, 2, true); Outcome { rows: r.len(), ids: r } }
            ("search8_seg", Some(h), _) => { let r = h.search(q, 8, 1, false); Outcome { rows: r.len(), ids: r } }
            ("search8" | "search8_2t" | "search8_seg", _, Some(n)) => { let r = n.search(q, 8); Outcome { rows: r.len(), ids: r } }
            ("search32", _, Some(n)) => { let r = n.search(q, 32); Outcome { rows: r.len(), ids: r } }
            _ => panic!("work {work} is not defined for side {side}"),
        }
    };
    // Warm-up (a query vector not among the measured ones for search work); with BENCH_COLD=1
    // it is measured and reported as the process's cold iteration.
    let cold = std::env::var("BENCH_COLD").as_deref() == Ok("1");
    if cold {
        mark("begin cold");
    }
    let t = Instant::now();
    let _ = once(facts.queries.len() - 1);
    let cold_ms = t.elapsed().as_secs_f64() * 1e3;
    if cold {
        mark("end cold");
    }
    // BENCH_PASSES: how many times the query vectors are run (a second pass repeats the same
    // queries, e.g. to measure them warm).
    let passes = env_u64("BENCH_PASSES").max(1) as usize;
    let n = if is_search { facts.queries.len() * passes } else { iters };
    let mut ms = Vec::new();
    let mut cpu = Vec::new();
    let mut recalls = Vec::new();
    let mut rows = 0;
    for i in 0..n {
        mark(&format!("begin {i}"));
        let c = thread_cpu_ms();
        let t = Instant::now();
        let out = once(i);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        cpu.push(thread_cpu_ms() - c);
        mark(&format!("end {i}"));
        rows = out.rows;
        if is_search {
            recalls.push(recall(&out.ids, &facts.truth[i % facts.truth.len()]));
        }
    }
    let ru = rusage();
    println!(
        "{}",
        serde_json::json!({
            "side": side, "work": work, "ms": ms, "thread_cpu_ms": cpu, "rows": rows,
            "recall": if recalls.is_empty() { serde_json::Value::Null } else { (recalls.iter().sum::<f64>() / recalls.len() as f64).into() },
            "maxrss_kb": ru.0, "minflt": ru.1, "rss_file_kb": rss_file_kb(), "cold_ms": cold_ms,
            "data_cache": if side == "host" { data_cache_json() } else { serde_json::Value::Null },
        })
    );
    if let Some(h) = host {
        lance_dataset_free(h.ds);
        // The disk tier holds everything read, for the next (restarted) process.
        assert_eq!(lance_host::ffi::session::lance_session_flush_data_cache(), 0);
    }
}

/// CPU time the calling thread has used, in milliseconds.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// Resident file-backed pages (KiB) of this process now: mostly the code of the binary that
/// has run, which stays resident; what is left of the peak RSS is memory.
fn rss_file_kb() -> i64 {
    status_kb(&std::fs::read_to_string("/proc/self/status").unwrap_or_default(), "RssFile:")
}

/// The KiB figure of one `/proc/self/status` line (`VmHWM:`, `RssFile:`), or -1.
fn status_kb(status: &str, field: &str) -> i64 {
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Peak RSS (KiB) and minor page faults of this process.
fn rusage() -> (i64, i64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status_kb(&status, "VmHWM:");
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Field 10 (minflt), counted after the parenthesised command name.
    let minflt = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(7))
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1);
    (hwm, minflt)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("write") => {
            let uri = &args[2];
            let rows: usize = args.get(4).map(|a| a.parse().unwrap()).unwrap_or(3_000_000);
            let rt = tokio::runtime::Runtime::new().unwrap();
            let facts = rt.block_on(write_table(uri, rows));
            std::fs::write(&args[3], serde_json::to_string(&facts).unwrap()).unwrap();
        }
        Some("engine-sizes" | "engine-token" | "engine-worker" | "engine-cancel") => engine::run_engine(&args),
        Some("prewarm") => {
            // prewarm <mode> <nprobes> <uri> <facts.json>
            let facts = load_facts(&args[5]);
            prewarm::run_prewarm(&args[2], args[3].parse().unwrap(), &args[4], &facts);
        }
        Some("fts") => fts::run(&args[2], &args[3], &storage_options(&args[2])),
        Some("batch") => batch::run(
            &args[2],
            &args[3],
            &args[4],
            args[5].parse().unwrap(),
            args[6].parse().unwrap(),
            args[7].parse().unwrap(),
        ),
        Some(side @ ("host" | "native")) => {
            let facts = load_facts(&args[4]);
            run_side(side, &args[2], &args[3], &facts);
        }
        _ => {
            eprintln!("usage: lance-host-bench write <uri> <facts.json> [rows] | host|native <work> <uri> <facts.json> | prewarm <mode> <nprobes> <uri> <facts.json>");
            std::process::exit(2);
        }
    }
}
