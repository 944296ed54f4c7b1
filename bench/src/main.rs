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

struct Host {
    ds: *mut LanceDataset,
}
unsafe impl Send for Host {}
unsafe impl Sync for Host {}

impl Host {
    fn open(uri: &str) -> Host {
        configure_data_cache();
        let opts = storage_options(uri);
        let owned: Vec<CString> = opts.iter().flat_map(|(k, v)| [CString::new(k.as_str()).unwrap(), CString::new(v.as_str()).unwrap()]).collect();
        let mut ptrs: Vec<*const std::ffi::c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let c = CString::new(uri).unwrap();
        let ds = lance_dataset_open(c.as_ptr(), if opts.is_empty() { std::ptr::null() } else { ptrs.as_ptr() }, 0);
        assert!(!ds.is_null(), "open failed");
        Host { ds }
    }

    fn scan_opts(&self, cols: &[*const std::ffi::c_char], filter: Option<&CString>) -> LanceScanOptions {
        let mut o = LanceScanOptions::default();
        o.columns = cols.as_ptr();
        o.num_columns = cols.len();
        o.filter_sql = filter.map(|f| f.as_ptr()).unwrap_or(std::ptr::null());
        o.io_buffer_bytes = env_u64("BENCH_IO_BUFFER");
        o.batch_readahead = env_u64("BENCH_BATCH_READAHEAD") as u32;
        o.fragment_readahead = env_u64("BENCH_FRAGMENT_READAHEAD") as u32;
        o
    }

    fn scan(&self, cols: &[&str], filter: Option<&str>) -> usize {
        let (_o, ptrs) = cstrs(cols);
        let f = filter.map(|f| CString::new(f).unwrap());
        let o = self.scan_opts(&ptrs, f.as_ref());
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_scan_v2(self.ds, &o, &mut st), 0);
        ArrowArrayStreamReader::try_new(st).unwrap().map(|b| b.unwrap().num_rows()).sum()
    }

    fn scan_2t(&self, cols: &[&str]) -> usize {
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_scan(self.ds, 0, &mut plan), 0);
        let n = lance_split_plan_count(plan);
        let splits: Vec<usize> = (0..n).map(|i| lance_split_plan_get(plan, i) as usize).collect();
        lance_split_plan_free(plan);
        let total: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|t| {
                    let splits = &splits;
                    s.spawn(move || {
                        let (_o, ptrs) = cstrs(cols);
                        let o = self.scan_opts(&ptrs, None);
                        let mut rows = 0;
                        for sp in splits.iter().skip(t).step_by(2) {
                            let mut st = FFI_ArrowArrayStream::empty();
                            assert_eq!(lance_split_scan_v2(self.ds, *sp as *const LanceSplit, &o, &mut st), 0);
                            rows += ArrowArrayStreamReader::try_new(st).unwrap().map(|b| b.unwrap().num_rows()).sum::<usize>();
                        }
                        rows
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        for sp in splits {
            lance_split_free(sp as *mut LanceSplit);
        }
        total
    }

    fn take(&self, ids: &[u64]) -> usize {
        let (_o, ptrs) = cstrs(&["id", "price"]);
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_take_rows(self.ds, ids.as_ptr(), ids.len(), ptrs.as_ptr(), 2, &mut st), 0);
        ArrowArrayStreamReader::try_new(st).unwrap().map(|b| b.unwrap().num_rows()).sum()
    }

    /// One index-segment split alone (its own re-rank), the winners' ids taken by row id.
    fn search_split(&self, split: *const LanceSplit, q: &[f32], nprobes: u32) -> Vec<i64> {
        let col = CString::new("vec").unwrap();
        let (_o, cols) = cstrs(&["_rowid"]);
        let mut query = LanceVectorQuery::default();
        query.column = col.as_ptr();
        query.vector = q.as_ptr() as _;
        query.dimension = q.len();
        query.k = K as u64;
        query.nprobes = nprobes;
        query.refine_factor = REFINE;
        query.columns = cols.as_ptr();
        query.num_columns = 1;
        query.with_row_id = true;
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_search_v2(self.ds, split, &query, &mut st), 0);
        let rowids = u64s(&drain(st), "_rowid");
        let (_o, idcol) = cstrs(&["id"]);
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_take_rows(self.ds, rowids.as_ptr(), rowids.len(), idcol.as_ptr(), 1, &mut st), 0);
        i64s(&drain(st), "id")
    }

    /// Plan + every split + merge (+ one global refine), `threads` workers; `defer`: the
    /// index-segment splits return approximate candidates re-ranked once after the merge.
    fn search(&self, q: &[f32], nprobes: u32, threads: usize, defer: bool) -> Vec<i64> {
        let col = CString::new("vec").unwrap();
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_vector_search(self.ds, col.as_ptr(), 0, true, u64::MAX, &mut plan), 0);
        let n = lance_split_plan_count(plan);
        let splits: Vec<usize> = (0..n).map(|i| lance_split_plan_get(plan, i) as usize).collect();
        lance_split_plan_free(plan);
        let (_o, cols) = cstrs(&["_rowid"]);
        let mut query = LanceVectorQuery::default();
        query.column = col.as_ptr();
        query.vector = q.as_ptr() as _;
        query.dimension = q.len();
        query.k = K as u64;
        query.nprobes = nprobes;
        query.refine_factor = REFINE;
        query.defer_refine = defer;
        query.columns = cols.as_ptr();
        query.num_columns = 1;
        query.with_row_id = true;
        let qaddr = &query as *const LanceVectorQuery as usize;
        let mut results: Vec<(bool, FFI_ArrowArrayStream)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let splits = &splits;
                    s.spawn(move || {
                        // Start every split of this worker first (they run concurrently on the
                        // library's runtime), then collect their results.
                        let started: Vec<(bool, FFI_ArrowArrayStream)> = splits
                            .iter()
                            .skip(t)
                            .step_by(threads)
                            .map(|sp| {
                                let sp = *sp as *const LanceSplit;
                                let mut st = FFI_ArrowArrayStream::empty();
                                let rc = lance_split_search_v2(self.ds, sp, qaddr as *const LanceVectorQuery, &mut st);
                                assert_eq!(rc, 0);
                                (lance_split_kind(sp) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32, st)
                            })
                            .collect();
                        let mut out = Vec::new();
                        for (seg, st) in started {
                            // Workers hand finished results to the coordinator.
                            let batches = drain(st);
                            let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| Arc::new(Schema::empty()));
                            let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
                            out.push((seg, FFI_ArrowArrayStream::new(Box::new(reader))));
                        }
                        out
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        for sp in splits {
            lance_split_free(sp as *mut LanceSplit);
        }
        let mut finals: Vec<FFI_ArrowArrayStream> = Vec::new();
        if defer {
            let mut approx: Vec<FFI_ArrowArrayStream> = Vec::new();
            for (seg, st) in results.drain(..) {
                if seg { approx.push(st) } else { finals.push(st) }
            }
            let mut merged = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_topk_merge(approx.as_mut_ptr(), approx.len(), K as u64 * REFINE as u64, 0, &mut merged), 0);
            let mut refined = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_dataset_refine_v2(self.ds, &query, &mut merged, &mut refined), 0);
            finals.push(refined);
        } else {
            finals.extend(results.drain(..).map(|r| r.1));
        }
        let mut out = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(finals.as_mut_ptr(), finals.len(), K as u64, 0, &mut out), 0);
        let top = drain(out);
        // Late materialization: the winners' ids.
        let rowids = u64s(&top, "_rowid");
        let (_o, idcol) = cstrs(&["id"]);
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_take_rows(self.ds, rowids.as_ptr(), rowids.len(), idcol.as_ptr(), 1, &mut st), 0);
        i64s(&drain(st), "id")
    }
}

/// Prewarm benchmark on one table (`s3://` through the local server): `mode` is
/// - `cold`: the 20 query vectors at `nprobes`, no prewarm;
/// - `warm`: a prewarm of every segment of `vec_idx`, then the same queries;
/// - `segment`: a prewarm of the first index-segment split's segment only, then the 20 queries
///   on that split alone;
/// - `interference`: one thread runs 30 queries while, after its third, the main thread
///   prewarms (`BENCH_PREWARM=0`: it does not), with a timestamp per query.
/// Prints a MARK pair around the prewarm and each query, then one JSON line.
fn run_prewarm(mode: &str, nprobes: u32, uri: &str, facts: &Facts) {
    use lance_host::ffi::index::*;
    use lance_host::ffi::session::*;
    use std::sync::atomic::Ordering::Relaxed;
    let host = Host::open(uri);
    let name = CString::new("vec_idx").unwrap();
    let t0 = Instant::now();
    let mut prewarm = serde_json::Value::Null;
    let do_prewarm = |uuids: Option<&[u8]>| -> serde_json::Value {
        mark("begin prewarm");
        let t = Instant::now();
        let mut io = LanceIoStats::default();
        let rc = match uuids {
            None => lance_dataset_prewarm_index_with_stats_v2(host.ds, name.as_ptr(), &mut io),
            Some(u) => lance_dataset_prewarm_index_segments_v2(host.ds, name.as_ptr(), u.as_ptr(), u.len(), &mut io),
        };
        assert_eq!(rc, 0);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        mark("end prewarm");
        serde_json::json!({"ms": ms, "read_requests": io.read_requests, "read_bytes": io.read_bytes,
            "index_read_requests": io.index_read_requests, "index_read_bytes": io.index_read_bytes,
            "segments_missed": io.index_cache_misses, "segments_hit": io.index_cache_hits})
    };
    let mut queries = Vec::new();
    let mut one = |i: usize, q: &[f32], run: &dyn Fn(&[f32]) -> Vec<i64>| {
        let (b0, i0) = (READ_BYTES.load(Relaxed), INDEX_READ_BYTES.load(Relaxed));
        mark(&format!("begin q{i}"));
        let t = Instant::now();
        let ids = run(q);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        mark(&format!("end q{i}"));
        let (b1, i1) = (READ_BYTES.load(Relaxed), INDEX_READ_BYTES.load(Relaxed));
        queries.push(serde_json::json!({"ms": ms, "index_bytes": i1 - i0, "other_bytes": (b1 - b0) - (i1 - i0),
            "recall": recall(&ids, &facts.truth[i])}));
    };
    match mode {
        "cold" | "warm" => {
            if mode == "warm" {
                prewarm = do_prewarm(None);
            }
            for (i, q) in facts.queries.iter().enumerate() {
                one(i, q, &|q| host.search(q, nprobes, 1, true));
            }
        }
        "segment" => {
            let col = CString::new("vec").unwrap();
            let mut plan = std::ptr::null_mut();
            assert_eq!(lance_dataset_plan_vector_search(host.ds, col.as_ptr(), 0, true, u64::MAX, &mut plan), 0);
            let split = (0..lance_split_plan_count(plan))
                .map(|i| lance_split_plan_get(plan, i))
                .find(|sp| {
                    let seg = lance_split_kind(*sp) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32;
                    if !seg {
                        lance_split_free(*sp);
                    }
                    seg
                })
                .expect("an index segment split");
            lance_split_plan_free(plan);
            let mut uuid = [0u8; 16];
            assert_eq!(lance_split_segment_uuid(split, uuid.as_mut_ptr()), 0);
            prewarm = do_prewarm(Some(&uuid));
            let split_addr = split as usize;
            for (i, q) in facts.queries.iter().enumerate() {
                one(i, q, &|q| host.search_split(split_addr as *const LanceSplit, q, nprobes));
            }
            lance_split_free(split);
        }
        "interference" => {
            let with = std::env::var("BENCH_PREWARM").as_deref() != Ok("0");
            let done = std::sync::atomic::AtomicUsize::new(0);
            let lat: Vec<(f64, f64)> = std::thread::scope(|s| {
                let fg = s.spawn(|| {
                    (0..30)
                        .map(|i| {
                            let q = &facts.queries[i % facts.queries.len()];
                            let start = t0.elapsed().as_secs_f64() * 1e3;
                            let t = Instant::now();
                            host.search(q, nprobes, 1, true);
                            done.fetch_add(1, Relaxed);
                            (start, t.elapsed().as_secs_f64() * 1e3)
                        })
                        .collect()
                });
                while done.load(Relaxed) < 3 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                if with {
                    let start = t0.elapsed().as_secs_f64() * 1e3;
                    let mut io = LanceIoStats::default();
                    assert_eq!(lance_dataset_prewarm_index_with_stats_v2(host.ds, name.as_ptr(), &mut io), 0);
                    let end = t0.elapsed().as_secs_f64() * 1e3;
                    prewarm = serde_json::json!({"start_ms": start, "end_ms": end});
                }
                fg.join().unwrap()
            });
            queries = lat.iter().map(|(s, ms)| serde_json::json!({"start_ms": s, "ms": ms})).collect();
        }
        other => panic!("unknown prewarm mode {other}"),
    }
    let mut st = LanceSessionStats::default();
    assert_eq!(lance_session_stats_v2(&mut st), 0);
    let ru = rusage();
    println!(
        "{}",
        serde_json::json!({"mode": mode, "nprobes": nprobes, "prewarm": prewarm, "queries": queries,
            "maxrss_kb": ru.0, "index_cache_bytes": st.index_bytes, "index_cache_entries": st.index_entries})
    );
    lance_dataset_free(host.ds);
}

/// Engine-facing measurements (bench/engine.py):
/// - `engine-sizes <dir>`: tables of 10, 100 and 1,000 fragments; bytes of the snapshot token,
///   of one scan split, and of the manifest file;
/// - `engine-token <uri> <file>`: a coordinator pins the table and writes its snapshot token;
/// - `engine-worker <plain|token> <uri> <file>`: a cold worker opens the pinned table (from the
///   token or by URI and version) and scans its first split, MARK pairs around both;
/// - `engine-cancel <uri>`: through a delaying proxy in front of `BENCH_S3_ENDPOINT`, how long
///   `get_next` takes to return after `lance_stream_cancel`, and how far a call context's
///   deadline overshoots.
fn run_engine(args: &[String]) {
    use lance_host::ffi::session::*;
    match args[1].as_str() {
        "engine-sizes" => {
            let dir = std::path::Path::new(&args[2]);
            let mut out = Vec::new();
            for n in [10usize, 100, 1000] {
                let uri = dir.join(format!("frags{n}.lance")).to_string_lossy().into_owned();
                let _ = std::fs::remove_dir_all(&uri);
                let rt = tokio::runtime::Runtime::new().unwrap();
                rt.block_on(async {
                    let batch = lance_host_testkit::people_batch(0, n as i64 * 10);
                    let params = WriteParams { max_rows_per_file: 10, max_rows_per_group: 10, ..Default::default() };
                    let schema = batch.schema();
                    Dataset::write(RecordBatchIterator::new(vec![Ok(batch)], schema), uri.as_str(), Some(params)).await.unwrap();
                });
                let host = Host::open(&uri);
                let mut p = std::ptr::null_mut();
                let mut len = 0usize;
                assert_eq!(lance_dataset_export_snapshot(host.ds, &mut p, &mut len), 0);
                let token = len;
                lance_bytes_free(p, len);
                let mut plan = std::ptr::null_mut();
                assert_eq!(lance_dataset_plan_scan(host.ds, 0, &mut plan), 0);
                let split = lance_split_plan_get(plan, 0);
                assert_eq!(lance_split_serialize(split, &mut p, &mut len), 0);
                let split_bytes = len;
                lance_bytes_free(p, len);
                lance_split_free(split);
                lance_split_plan_free(plan);
                let manifest: u64 = std::fs::read_dir(std::path::Path::new(&uri).join("_versions"))
                    .unwrap()
                    .map(|e| e.unwrap().metadata().unwrap().len())
                    .max()
                    .unwrap_or(0);
                lance_dataset_free(host.ds);
                out.push(serde_json::json!({"fragments": n, "token_bytes": token, "split_bytes": split_bytes, "manifest_file_bytes": manifest}));
            }
            println!("{}", serde_json::Value::Array(out));
        }
        "engine-token" => {
            let host = Host::open(&args[2]);
            let mut p = std::ptr::null_mut();
            let mut len = 0usize;
            assert_eq!(lance_dataset_export_snapshot(host.ds, &mut p, &mut len), 0);
            std::fs::write(&args[3], unsafe { std::slice::from_raw_parts(p, len) }).unwrap();
            lance_bytes_free(p, len);
            println!("{}", serde_json::json!({"token_bytes": len, "version": lance_dataset_version(host.ds)}));
            lance_dataset_free(host.ds);
        }
        "engine-worker" => {
            let (mode, uri) = (&args[2], &args[3]);
            let token = std::fs::read(&args[4]).unwrap();
            let opts = storage_options(uri);
            let owned: Vec<CString> = opts.iter().flat_map(|(k, v)| [CString::new(k.as_str()).unwrap(), CString::new(v.as_str()).unwrap()]).collect();
            let mut ptrs: Vec<*const std::ffi::c_char> = owned.iter().map(|c| c.as_ptr()).collect();
            ptrs.push(std::ptr::null());
            mark("begin open");
            let t = Instant::now();
            let ds = if mode == "token" {
                lance_snapshot_open(token.as_ptr(), token.len(), ptrs.as_ptr())
            } else {
                // What a worker does with a split: open the split's table at its version.
                let version = u64::from_le_bytes(token[5..13].try_into().unwrap());
                let c = CString::new(uri.as_str()).unwrap();
                lance_dataset_open(c.as_ptr(), ptrs.as_ptr(), version)
            };
            assert!(!ds.is_null());
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            mark("end open");
            mark("begin scan");
            let mut plan = std::ptr::null_mut();
            assert_eq!(lance_dataset_plan_scan(ds, 0, &mut plan), 0);
            let split = lance_split_plan_get(plan, 0);
            let (_o, cols) = cstrs(&["id"]);
            let mut o = LanceScanOptions::default();
            o.columns = cols.as_ptr();
            o.num_columns = 1;
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_scan_v2(ds, split, &o, &mut st), 0);
            let rows: usize = drain(st).iter().map(|b| b.num_rows()).sum();
            mark("end scan");
            lance_split_free(split);
            lance_split_plan_free(plan);
            lance_dataset_free(ds);
            println!("{}", serde_json::json!({"mode": mode, "open_ms": open_ms, "rows": rows}));
        }
        "engine-cancel" => {
            let ep = std::env::var("BENCH_S3_ENDPOINT").unwrap();
            let port: u16 = ep.rsplit(':').next().unwrap().parse().unwrap();
            let proxy = lance_host_testkit::DelayProxy::start(port, std::time::Duration::from_millis(20)).unwrap();
            std::env::set_var("BENCH_S3_ENDPOINT", format!("http://127.0.0.1:{}", proxy.port));
            let host = Host::open(&args[2]);
            let (_o, cols) = cstrs(&["id", "vec"]);
            let mut o = LanceScanOptions::default();
            o.columns = cols.as_ptr();
            o.num_columns = 2;
            o.batch_size = 256;
            let mut cancel_ms = Vec::new();
            let mut deadline_over_ms = Vec::new();
            let get_next = |st: &mut FFI_ArrowArrayStream| -> i32 {
                let mut a = arrow::ffi::FFI_ArrowArray::empty();
                unsafe { (st.get_next.unwrap())(st, &mut a) }
            };
            for i in 0..20u64 {
                let mut st = FFI_ArrowArrayStream::empty();
                assert_eq!(lance_dataset_scan_v2(host.ds, &o, &mut st), 0);
                let addr = &st as *const FFI_ArrowArrayStream as usize;
                let after = std::time::Duration::from_millis(100 + 15 * i);
                let canceller = std::thread::spawn(move || {
                    std::thread::sleep(after);
                    let at = Instant::now();
                    assert_eq!(lance_stream_cancel(addr as *const FFI_ArrowArrayStream), 0);
                    at
                });
                let rc = loop {
                    let rc = get_next(&mut st);
                    if rc != 0 {
                        break rc;
                    }
                };
                let back = Instant::now();
                let at = canceller.join().unwrap();
                assert_eq!(rc, 125);
                cancel_ms.push(back.saturating_duration_since(at).as_secs_f64() * 1e3);
                unsafe { (st.release.unwrap())(&mut st) };
                // A deadline instead of a cancel.
                let budget = 100 + 15 * i;
                let ctx = lance_call_context_new(budget);
                let started = Instant::now();
                assert_eq!(lance_call_context_enter(ctx), 0);
                let mut st = FFI_ArrowArrayStream::empty();
                let rc = lance_dataset_scan_v2(host.ds, &o, &mut st);
                assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
                if rc == 0 {
                    while get_next(&mut st) == 0 {}
                    unsafe { (st.release.unwrap())(&mut st) };
                }
                deadline_over_ms.push(started.elapsed().as_secs_f64() * 1e3 - budget as f64);
                lance_call_context_free(ctx);
            }
            lance_dataset_free(host.ds);
            println!("{}", serde_json::json!({"cancel_ms": cancel_ms, "deadline_overshoot_ms": deadline_over_ms}));
        }
        other => panic!("unknown engine work {other}"),
    }
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
        Some("engine-sizes" | "engine-token" | "engine-worker" | "engine-cancel") => run_engine(&args),
        Some("prewarm") => {
            // prewarm <mode> <nprobes> <uri> <facts.json>
            let facts = load_facts(&args[5]);
            run_prewarm(&args[2], args[3].parse().unwrap(), &args[4], &facts);
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
