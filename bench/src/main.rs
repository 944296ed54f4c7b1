//! lance-host benchmark: the same work done through lance-host's C ABI (Arrow C Stream, the
//! global session) and through native Lance, on one generated table. Prints a Markdown report.
//!
//!   cargo run --release -p lance-host-bench [rows]
//!
//! Each measurement is the median of several alternating runs; both sides read the same
//! files with warm OS and metadata caches.

use std::ffi::CString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::types::Float32Type;
use arrow_array::{
    FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
    RecordBatchIterator, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lance::dataset::{Dataset, WriteParams};
use lance::index::vector::VectorIndexParams;
use lance::index::DatasetIndexExt;
use lance_host::ffi::dataset::*;
use lance_host::ffi::plan::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::take::*;
use lance_index::IndexType;
use lance_linalg::distance::MetricType;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const DIM: i32 = 32;
const RUNS: usize = 15;

fn batch(start: i64, n: i64, rng: &mut StdRng) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("value", DataType::Float64, false),
        Field::new("name", DataType::Utf8, false),
        Field::new(
            "vec",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), DIM),
            false,
        ),
    ]));
    let ids: Vec<i64> = (start..start + n).collect();
    let values: Vec<f64> = ids.iter().map(|_| rng.random::<f64>()).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("name-{i:08}")).collect();
    let vecs = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        ids.iter()
            .map(|_| Some((0..DIM).map(|_| Some(rng.random::<f32>())).collect::<Vec<_>>())),
        DIM,
    );
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(Float64Array::from(values)),
            Arc::new(StringArray::from(names)),
            Arc::new(vecs),
        ],
    )
    .unwrap()
}

async fn write_table(uri: &str, rows: i64) -> Dataset {
    let mut rng = StdRng::seed_from_u64(7);
    let chunk = 50_000.min(rows);
    let batches: Vec<_> = (0..rows)
        .step_by(chunk as usize)
        .map(|s| Ok(batch(s, chunk.min(rows - s), &mut rng)))
        .collect();
    let schema = batches[0].as_ref().unwrap().schema();
    let params = WriteParams {
        max_rows_per_file: (rows as usize / 4).max(1),
        ..Default::default()
    };
    let mut ds = Dataset::write(RecordBatchIterator::new(batches, schema), uri, Some(params))
        .await
        .unwrap();
    let pq = VectorIndexParams::ivf_pq(16, 8, 8, MetricType::L2, 20);
    ds.create_index(&["vec"], IndexType::Vector, Some("vec_idx".into()), &pq, true)
        .await
        .unwrap();
    ds
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn host_stream_rows(stream: FFI_ArrowArrayStream) -> usize {
    ArrowArrayStreamReader::try_new(stream)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum()
}

struct Row {
    name: &'static str,
    native: Duration,
    host: Duration,
    rows: usize,
}

fn main() {
    let rows: i64 = std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("bench.lance").to_str().unwrap().to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    eprintln!("writing {rows} rows + IVF_PQ index ...");
    rt.block_on(write_table(&uri, rows));
    let native = Arc::new(rt.block_on(Dataset::open(&uri)).unwrap());
    let curi = CString::new(uri.clone()).unwrap();
    let host = lance_dataset_open(curi.as_ptr(), std::ptr::null(), 0);
    assert!(!host.is_null());

    let query: Vec<f32> = {
        let mut r = StdRng::seed_from_u64(99);
        (0..DIM).map(|_| r.random::<f32>()).collect()
    };
    let mut results = Vec::new();

    // Helper: run both sides alternately.
    let mut measure = |name: &'static str, native_fn: &mut dyn FnMut() -> usize, host_fn: &mut dyn FnMut() -> usize| {
        let (n0, h0) = (native_fn(), host_fn());
        assert_eq!(n0, h0, "{name}: native and lance-host returned different row counts");
        let (mut tn, mut th) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let t = Instant::now();
            native_fn();
            tn.push(t.elapsed());
            let t = Instant::now();
            host_fn();
            th.push(t.elapsed());
        }
        results.push(Row { name, native: median(tn), host: median(th), rows: n0 });
    };

    // 1. Full scan, every column.
    measure(
        "full scan (all columns)",
        &mut || {
            rt.block_on(async {
                let s = native.scan().try_into_stream().await.unwrap();
                s.try_fold(0, |n, b| async move { Ok(n + b.num_rows()) }).await.unwrap()
            })
        },
        &mut || {
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_dataset_scan(host, std::ptr::null(), &mut st), 0);
            host_stream_rows(st)
        },
    );

    // 2. Filtered, projected scan.
    let cols = [CString::new("id").unwrap(), CString::new("value").unwrap()];
    let col_ptrs: Vec<_> = cols.iter().map(|c| c.as_ptr()).collect();
    let filter = CString::new("value > 0.9").unwrap();
    measure(
        "filtered scan (2 columns, 10% selective)",
        &mut || {
            rt.block_on(async {
                let mut sc = native.scan();
                sc.project(&["id", "value"]).unwrap();
                sc.filter("value > 0.9").unwrap();
                let s = sc.try_into_stream().await.unwrap();
                s.try_fold(0, |n, b| async move { Ok(n + b.num_rows()) }).await.unwrap()
            })
        },
        &mut || {
            let mut o = LanceScanOptions::default();
            o.columns = col_ptrs.as_ptr();
            o.num_columns = 2;
            o.filter_sql = filter.as_ptr();
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_dataset_scan(host, &o, &mut st), 0);
            host_stream_rows(st)
        },
    );

    // 3. Take 1,000 rows by row id.
    let mut rng = StdRng::seed_from_u64(5);
    let frag_rows = (rows / 4) as u64;
    let ids: Vec<u64> = (0..1000)
        .map(|_| {
            let f = rng.random_range(0..4u64);
            (f << 32) | rng.random_range(0..frag_rows)
        })
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    measure(
        "take 1,000 rows by _rowid (id, name)",
        &mut || {
            rt.block_on(async {
                let proj = native.schema().project(&["id", "name"]).unwrap();
                native.take_rows(&sorted, proj).await.unwrap().num_rows()
            })
        },
        &mut || {
            let names = [CString::new("id").unwrap(), CString::new("name").unwrap()];
            let p: Vec<_> = names.iter().map(|c| c.as_ptr()).collect();
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_dataset_take_rows(host, sorted.as_ptr(), sorted.len(), p.as_ptr(), 2, &mut st), 0);
            host_stream_rows(st)
        },
    );

    // 4. Vector search, k = 10: native search vs. plan + per-split search + merge.
    let col = CString::new("vec").unwrap();
    measure(
        "vector search k=10 nprobes=8 (plan+split search+merge)",
        &mut || {
            rt.block_on(async {
                let mut sc = native.scan();
                sc.nearest("vec", &Float32Array::from(query.clone()), 10).unwrap();
                sc.nprobes(8);
                sc.refine(1);
                sc.project(&["id"]).unwrap();
                sc.try_into_batch().await.unwrap().num_rows()
            })
        },
        &mut || {
            let mut plan = std::ptr::null_mut();
            assert_eq!(lance_dataset_plan_vector_search(host, col.as_ptr(), 0, true, &mut plan), 0);
            let mut q = LanceVectorQuery::default();
            q.column = col.as_ptr();
            q.vector = query.as_ptr() as _;
            q.dimension = DIM as usize;
            q.k = 10;
            q.nprobes = 8;
            let mut streams = Vec::new();
            for i in 0..lance_split_plan_count(plan) {
                let s = lance_split_plan_get(plan, i);
                let mut st = FFI_ArrowArrayStream::empty();
                assert_eq!(lance_split_search(host, s, &q, &mut st), 0);
                streams.push(st);
                lance_split_free(s);
            }
            lance_split_plan_free(plan);
            let mut out = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), 10, 0, &mut out), 0);
            host_stream_rows(out)
        },
    );
    lance_dataset_free(host);

    let profile = if cfg!(debug_assertions) { "dev (unoptimized)" } else { "release" };
    println!("| work ({rows} rows, {RUNS} runs, median) | native Lance | lance-host (C ABI) | difference | rows |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for r in &results {
        let diff = (r.host.as_secs_f64() / r.native.as_secs_f64() - 1.0) * 100.0;
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:+.1}% | {} |",
            r.name,
            r.native.as_secs_f64() * 1e3,
            r.host.as_secs_f64() * 1e3,
            diff,
            r.rows
        );
    }
    println!("\nbuild profile: {profile}; {} cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));
}
