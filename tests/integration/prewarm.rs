//! Prewarm: no query runs, per-segment warming, the prewarm I/O report, the cache lifecycle
//! (each scenario in a fresh process), interference with foreground queries, and the verified
//! matrix of index type × file format × table location published in docs/prewarm.md.

use arrow::array::{Array, Float32Array, RecordBatch};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::catalog::*;
use lance_host::ffi::dataset::*;
use lance_host::ffi::index::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::session::*;
use lance_host_testkit as tk;

use crate::common::*;
use crate::vector::{frag_ids, index_name, plan_vector, query, query_vector, recall, splits, SplitH};

pub(crate) fn session_stats() -> LanceSessionStats {
    let mut s = LanceSessionStats::default();
    assert_eq!(lance_session_stats_v2(&mut s), 0);
    s
}

fn prewarm(ds: &Ds, name: &str) -> Result<LanceIoStats, (i32, String)> {
    let n = cstr(name);
    let mut st = LanceIoStats::default();
    match lance_dataset_prewarm_index_with_stats_v2(ds.ptr(), n.as_ptr(), &mut st) {
        0 => Ok(st),
        code => Err((code, last_message())),
    }
}

fn prewarm_segments(ds: &Ds, name: &str, uuids: &[[u8; 16]]) -> Result<LanceIoStats, (i32, String)> {
    let n = cstr(name);
    let bytes: Vec<u8> = uuids.iter().flatten().copied().collect();
    let mut st = LanceIoStats::default();
    match lance_dataset_prewarm_index_segments_v2(ds.ptr(), n.as_ptr(), bytes.as_ptr(), bytes.len(), &mut st) {
        0 => Ok(st),
        code => Err((code, last_message())),
    }
}

fn segment_uuid(s: &SplitH) -> [u8; 16] {
    let mut u = [0u8; 16];
    assert_eq!(lance_split_segment_uuid(s.0, u.as_mut_ptr()), 0, "{}", last_message());
    u
}

fn is_segment(s: &SplitH) -> bool {
    lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32
}

/// Search one split on `ds`; returns its rows and the search's I/O statistics.
fn search_split_on(ds: &Ds, split: &SplitH, q: &LanceVectorQuery) -> (Vec<RecordBatch>, LanceIoStats) {
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_split_search_v2(ds.ptr(), split.0, q, &mut stream), 0, "{}", last_message());
    collect_with_stats(&mut stream)
}

/// One query's answer: (id, distance) of the merged top-k, in order.
type Answer = Vec<(i64, f32)>;

fn answer(batches: &[RecordBatch]) -> Answer {
    let ids = i64_column(batches, "id");
    let d: Vec<f32> = batches
        .iter()
        .flat_map(|b| {
            let a = b.column_by_name("_distance").unwrap().as_any().downcast_ref::<Float32Array>().unwrap().clone();
            (0..a.len()).map(move |i| a.value(i)).collect::<Vec<_>>()
        })
        .collect();
    ids.into_iter().zip(d).collect()
}

/// Plan `column` on `ds`, search every split on `ds` (index-segment splits only when
/// `segments_only`), merge the top-k. Returns the answer and the summed I/O statistics of the
/// index-segment splits.
fn search(ds: &Ds, column: &str, vector: Vec<f32>, k: u64, nprobes: u32, refine: u32, segments_only: bool) -> (Answer, LanceIoStats) {
    search_metric(ds, column, LanceMetric::LANCE_METRIC_L2, vector, k, nprobes, refine, segments_only)
}

#[allow(clippy::too_many_arguments)]
fn search_metric(
    ds: &Ds,
    column: &str,
    metric: LanceMetric,
    vector: Vec<f32>,
    k: u64,
    nprobes: u32,
    refine: u32,
    segments_only: bool,
) -> (Answer, LanceIoStats) {
    let plan = plan_vector(ds, column, metric, true).unwrap();
    let mut q = query(column, vector, k);
    q.q.nprobes = nprobes;
    q.q.refine_factor = refine;
    let raw = q.raw();
    let mut seg_stats = LanceIoStats::default();
    let mut streams = Vec::new();
    for s in splits(&plan) {
        if segments_only && !is_segment(&s) {
            continue;
        }
        let (batches, st) = search_split_on(ds, &s, &raw);
        if is_segment(&s) {
            add_io(&mut seg_stats, &st);
        }
        let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| std::sync::Arc::new(arrow::datatypes::Schema::empty()));
        let reader = arrow::record_batch::RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        streams.push(FFI_ArrowArrayStream::new(Box::new(reader)));
    }
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), k, 0, &mut out), 0, "{}", last_message());
    (answer(&read_stream(out).unwrap()), seg_stats)
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

// ---- The verified matrix -------------------------------------------------------------------

const MATRIX_FORMATS: [&str; 3] = ["2.0", "2.1", "2.2"];
const LOCATION: &str = "LANCE_HOST_TEST_MATRIX_LOCATION";
const MATRIX_ROOT: &str = "LANCE_HOST_TEST_MATRIX_ROOT";
const REST_URI: &str = "LANCE_HOST_TEST_MATRIX_REST";
const MATRIX_QUERIES: i64 = 8;
/// Asserted for every vector cell (nprobes = all partitions, refine factor 5).
const MATRIX_MIN_RECALL: f64 = 0.9;

fn matrix_table(format: &str) -> String {
    format!("matrix_{}", format.replace('.', "_"))
}

fn open_in_location(location: &str, format: &str) -> Ds {
    let root = std::env::var(MATRIX_ROOT).unwrap();
    let table = matrix_table(format);
    match location {
        "local" => Ds::open(&format!("{root}/{table}.lance"), 0),
        "s3" => {
            let s = crate::s3::shared();
            crate::s3::open_s3(&format!("{root}/{table}.lance"), &s.endpoint).unwrap()
        }
        "rest" => {
            let uri = std::env::var(REST_URI).unwrap();
            let (_keep, props) = kv(&[("type", "rest"), ("uri", &uri)]);
            let cat = lance_catalog_open(props.as_ptr());
            assert!(!cat.is_null(), "{}", last_message());
            let t = cstr(&table);
            let ds = lance_catalog_open_table(cat, std::ptr::null(), 0, t.as_ptr(), 0);
            lance_catalog_free(cat);
            assert!(!ds.is_null(), "{}", last_message());
            Ds(ds)
        }
        other => panic!("unknown location {other}"),
    }
}

fn matrix_truth(q: &[f32], k: usize) -> Vec<i64> {
    let mut all: Vec<(f32, i64)> = (0..tk::MATRIX_ROWS)
        .filter(|i| !tk::matrix_deleted(*i))
        .map(|i| (l2(&tk::vector_of(i), q), i))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|(_, i)| i).collect()
}

/// One vector cell: prewarm cold (misses reported), plan on another handle, search every split
/// with recall checked, and 0 index-cache misses (and, on object stores, 0 index reads) in the
/// index-segment searches after the prewarm.
fn vector_cell(location: &str, format: &str, name: &str) -> String {
    let warm = open_in_location(location, format);
    let pst = prewarm(&warm, name).unwrap_or_else(|e| panic!("{location} {format} {name}: {e:?}"));
    assert!(pst.index_cache_misses >= 1 && pst.index_cache_hits == 0, "cold prewarm of {name}: {pst:?}");
    if location == "s3" {
        assert!(pst.index_read_requests > 0, "cold prewarm of {name} read no index file: {pst:?}");
    }
    let stored = unsafe { std::ffi::CStr::from_ptr(lance_dataset_storage_format(warm.ptr())) };
    assert_eq!(stored.to_str().unwrap(), format, "the table was written in another file format");
    drop(warm);
    let ds = open_in_location(location, format);
    let plan = plan_vector(&ds, name, LanceMetric::LANCE_METRIC_L2, true).unwrap();
    assert_eq!(index_name(&plan).as_deref(), Some(name));
    let all = splits(&plan);
    assert!(all.iter().any(is_segment), "{format} {name}: no index segment split");
    let flat: Vec<u64> = all.iter().filter(|s| !is_segment(s)).flat_map(frag_ids).collect();
    assert!(!flat.is_empty(), "{format} {name}: the appended fragment has no flat split");
    drop(all);
    drop(plan);
    let mut total_recall = 0.0;
    for seed in 0..MATRIX_QUERIES {
        let qv = query_vector(seed * 97 + 5);
        let before = session_stats();
        let (_, seg) = search(&ds, name, qv.clone(), 10, 2, 5, true);
        let after = session_stats();
        assert_eq!(after.index_misses, before.index_misses, "{location} {format} {name}: index-cache misses after prewarm");
        assert_eq!(seg.index_cache_misses, 0, "{location} {format} {name}: {seg:?}");
        assert_eq!(seg.index_read_requests, 0, "{location} {format} {name}: index files read after prewarm: {seg:?}");
        let (found, _) = search(&ds, name, qv.clone(), 10, 2, 5, false);
        let ids: Vec<i64> = found.iter().map(|(i, _)| *i).collect();
        assert!(ids.iter().all(|i| !tk::matrix_deleted(*i)), "{format} {name}: a deleted row was returned");
        total_recall += recall(&ids, &matrix_truth(&qv, 10));
    }
    let r = total_recall / MATRIX_QUERIES as f64;
    assert!(r >= MATRIX_MIN_RECALL, "{location} {format} {name}: recall@10 {r}");
    format!("planned · recall@10 ≥ {MATRIX_MIN_RECALL:.1} · prewarmed, 0 misses")
}

/// One scalar cell: prewarm, then a filtered scan through another handle returns exactly the
/// expected rows with 0 index-cache misses.
fn scalar_cell(location: &str, format: &str, name: &str, column: &str) -> String {
    let warm = open_in_location(location, format);
    let pst = prewarm(&warm, name).unwrap_or_else(|e| panic!("{location} {format} {name}: {e:?}"));
    assert!(pst.index_cache_misses >= 1 && pst.index_cache_hits == 0, "cold prewarm of {name}: {pst:?}");
    drop(warm);
    let ds = open_in_location(location, format);
    let (filter, expected): (&str, Vec<i64>) = if column == "id" {
        ("id >= 100 AND id < 300", (100..300).filter(|i| !tk::matrix_deleted(*i)).collect())
    } else {
        ("category = 'beta'", (0..tk::MATRIX_ROWS).filter(|i| !tk::matrix_deleted(*i) && tk::matrix_category(*i) == "beta").collect())
    };
    let f = cstr(filter);
    let cols = cstrs(&["id"]);
    let mut o = default_opts();
    o.filter_sql = f.as_ptr();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 1;
    let before = session_stats();
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0, "{}", last_message());
    let (batches, st) = collect_with_stats(&mut stream);
    let after = session_stats();
    let mut ids = i64_column(&batches, "id");
    ids.sort_unstable();
    assert_eq!(ids, expected, "{location} {format} {name}");
    assert_eq!(after.index_misses, before.index_misses, "{location} {format} {name}: index-cache misses after prewarm");
    assert_eq!(st.index_read_requests, 0, "{location} {format} {name}: {st:?}");
    "filter exact · prewarmed, 0 misses".to_string()
}

/// INVERTED: prewarm, then the distributed full-text search (plan, statistics, every split, for
/// a match and a phrase query) misses no index-cache entry and reads no index file, and every
/// hit's text holds the terms.
fn text_cell(location: &str, format: &str) -> String {
    use lance_host::ffi::fts::*;
    let (name, column) = tk::MATRIX_TEXT_INDEX;
    let warm = open_in_location(location, format);
    let pst = prewarm(&warm, name).unwrap_or_else(|e| panic!("{location} {format} {name}: {e:?}"));
    assert!(pst.index_cache_misses >= 1 && pst.index_cache_hits == 0, "cold prewarm of {name}: {pst:?}");
    drop(warm);
    let ds = open_in_location(location, format);
    let c = cstr(column);
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_fts(ds.ptr(), c.as_ptr(), 0, &mut plan), 0, "{}", last_message());
    let plan = crate::vector::Plan(plan);
    let before = session_stats();
    let mut hits = 0usize;
    for (text, kind, terms) in [
        ("t002 t009", LanceTextMatch::LANCE_TEXT_MATCH_ANY, vec!["t002", "t009"]),
        ("quick brown fox", LanceTextMatch::LANCE_TEXT_MATCH_PHRASE, vec!["quick brown fox"]),
    ] {
        let mut q = std::mem::MaybeUninit::<LanceTextQuery>::uninit();
        assert_eq!(lance_text_query_init(q.as_mut_ptr(), std::mem::size_of::<LanceTextQuery>()), 0);
        let mut q = unsafe { q.assume_init() };
        let (t, cols) = (cstr(text), cstrs(&["text"]));
        q.column = c.as_ptr();
        q.text = t.as_ptr();
        q.match_kind = kind as i32;
        q.k = 10;
        q.columns = cols.ptrs.as_ptr();
        q.num_columns = 1;
        let (mut sp, mut n) = (std::ptr::null_mut(), 0usize);
        assert_eq!(lance_dataset_fts_stats(ds.ptr(), &q, &mut sp, &mut n, std::ptr::null_mut()), 0, "{}", last_message());
        for s in splits(&plan) {
            let mut out = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_fts_search(ds.ptr(), s.0, &q, sp, n, &mut out), 0, "{}", last_message());
            let (batches, st) = collect_with_stats(&mut out);
            if lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32 {
                assert_eq!(st.index_read_requests, 0, "{location} {format} {text}: {st:?}");
                assert_eq!(st.index_cache_misses, 0, "{location} {format} {text}: {st:?}");
            }
            for b in &batches {
                let texts = b.column_by_name("text").unwrap().as_any().downcast_ref::<arrow::array::StringArray>().unwrap();
                for i in 0..texts.len() {
                    let doc = format!(" {} ", texts.value(i));
                    assert!(terms.iter().any(|t| doc.contains(&format!(" {t} "))), "{text}: {doc}");
                    hits += 1;
                }
            }
        }
        lance_bytes_free(sp, n);
    }
    let after = session_stats();
    assert!(hits > 0);
    assert_eq!(after.index_misses, before.index_misses, "{location} {format}: index-cache misses after prewarm");
    "match + phrase · prewarmed, 0 misses".to_string()
}

/// Runs in a fresh process per location: every cell of that location.
#[test]
#[ignore = "run by prewarm_matrix_is_verified_and_published in its own processes"]
fn child_matrix() {
    let Ok(location) = std::env::var(LOCATION) else { return };
    for format in MATRIX_FORMATS {
        for (name, kind) in tk::MATRIX_VECTOR_INDEXES {
            let cell = vector_cell(&location, format, name);
            println!("CELL|{kind}|{format}|{location}|{cell}");
        }
        for (name, column, kind) in tk::MATRIX_SCALAR_INDEXES {
            let cell = scalar_cell(&location, format, name, column);
            println!("CELL|{kind}|{format}|{location}|{cell}");
        }
        println!("CELL|INVERTED|{format}|{location}|{}", text_cell(&location, format));
    }
    println!("CHILD-OK");
}

fn write_matrix(root: &str, opts: tk::StorageOptions) {
    let root = root.to_string();
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            for f in MATRIX_FORMATS {
                tk::write_matrix_table(&format!("{root}/{}.lance", matrix_table(f)), f, &opts)
                    .await
                    .expect("write matrix table");
            }
        })
    })
    .join()
    .unwrap();
}

const MATRIX_BEGIN: &str = "<!-- prewarm-matrix:begin (generated by the test prewarm_matrix_is_verified_and_published) -->";
const MATRIX_END: &str = "<!-- prewarm-matrix:end -->";

#[test]
fn prewarm_matrix_is_verified_and_published() {
    let dir = tempfile::tempdir().unwrap();
    let local_root = dir.path().join("matrix");
    std::fs::create_dir_all(&local_root).unwrap();
    let local_root = std::fs::canonicalize(local_root).unwrap().to_string_lossy().into_owned();
    write_matrix(&local_root, Default::default());
    let s3 = crate::s3::shared();
    let s3_root = format!("{}/matrix", s3.facts.get("root"));
    write_matrix(&s3_root, crate::s3::s3_options(&s3.endpoint));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = rt
        .block_on(lance_host_rest_server::start(&local_root, Default::default()))
        .expect("start REST server");
    let rest_uri = server.uri();

    let mut cells = std::collections::BTreeMap::new();
    for (location, root) in [("local", &local_root), ("s3", &s3_root), ("rest", &local_root)] {
        let out = run_child(
            "prewarm::child_matrix",
            &[
                (LOCATION, std::ffi::OsStr::new(location)),
                (MATRIX_ROOT, std::ffi::OsStr::new(root)),
                (REST_URI, std::ffi::OsStr::new(&rest_uri)),
                ("LANCE_HOST_TEST_S3_ENDPOINT", std::ffi::OsStr::new(&s3.endpoint)),
                ("LANCE_HOST_TEST_S3_ROOT", std::ffi::OsStr::new(s3.facts.get("root"))),
            ],
        );
        for line in out.lines().filter_map(|l| l.strip_prefix("CELL|")) {
            let parts: Vec<&str> = line.splitn(4, '|').collect();
            cells.insert((parts[0].to_string(), parts[1].to_string(), parts[2].to_string()), parts[3].to_string());
        }
    }
    drop(server);

    // The published table: one row per index type and format, one column per location.
    let kinds: Vec<&str> = tk::MATRIX_VECTOR_INDEXES
        .iter()
        .map(|(_, k)| *k)
        .chain(tk::MATRIX_SCALAR_INDEXES.iter().map(|(_, _, k)| *k))
        .chain(["INVERTED"])
        .collect();
    let mut table = String::from(
        "| index type | file format | local directory | `s3://` (S3-compatible server) | REST catalog (local directory behind it) |\n| --- | --- | --- | --- | --- |\n",
    );
    for kind in &kinds {
        for format in MATRIX_FORMATS {
            let cell = |loc: &str| {
                cells
                    .get(&(kind.to_string(), format.to_string(), loc.to_string()))
                    .cloned()
                    .unwrap_or_else(|| panic!("no verified cell for {kind} {format} {loc}"))
            };
            table.push_str(&format!("| {kind} | {format} | {} | {} | {} |\n", cell("local"), cell("s3"), cell("rest")));
        }
    }
    assert_eq!(cells.len(), kinds.len() * MATRIX_FORMATS.len() * 3);
    let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/prewarm.md");
    let doc = std::fs::read_to_string(doc_path).unwrap();
    let begin = doc.find(MATRIX_BEGIN).map(|i| i + MATRIX_BEGIN.len() + 1);
    let end = doc.find(MATRIX_END);
    if std::env::var_os("LANCE_HOST_BLESS").is_some() {
        let (b, e) = (begin.expect("docs/prewarm.md has the matrix begin marker"), end.expect("docs/prewarm.md has the end marker"));
        let updated = format!("{}{}{}", &doc[..b], table, &doc[e..]);
        std::fs::write(doc_path, updated).unwrap();
        return;
    }
    let (b, e) = (
        begin.expect("docs/prewarm.md lacks the prewarm matrix markers"),
        end.expect("docs/prewarm.md lacks the prewarm matrix end marker"),
    );
    assert_eq!(
        &doc[b..e],
        table,
        "docs/prewarm.md's prewarm matrix differs from what the test verified; rerun with LANCE_HOST_BLESS=1"
    );
}


// ---- Cache lifecycle, interference, correctness (each scenario in a fresh process) ----------

const SCENARIO: &str = "LANCE_HOST_TEST_PREWARM_SCENARIO";

/// Run Lance itself (the writer side) on a private runtime, as another system writing the table.
fn writer<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    std::thread::spawn(move || tokio::runtime::Runtime::new().unwrap().block_on(f())).join().unwrap();
}

/// A private copy of the testkit's `vectors` table (emb_pq in 2 segments, emb_cos, tail, deletes).
fn private_vectors(dir: &std::path::Path, name: &str) -> String {
    let uri = dir.join(format!("{name}.lance")).to_string_lossy().into_owned();
    let u = uri.clone();
    writer(move || async move {
        let mut facts = tk::Facts::default();
        tk::write_vectors(&u, &mut facts, &Default::default()).await.expect("write vectors");
    });
    uri
}

fn segment_uuids(ds: &Ds, column: &str) -> Vec<[u8; 16]> {
    let plan = plan_vector(ds, column, LanceMetric::LANCE_METRIC_L2, true).unwrap();
    splits(&plan).iter().filter(|s| is_segment(s)).map(segment_uuid).collect()
}

/// Per-op index-cache misses of searching only the segment `uuid` of `column` on `ds`.
fn search_segment(ds: &Ds, column: &str, uuid: [u8; 16], seed: i64) -> (Answer, LanceIoStats) {
    let plan = plan_vector(ds, column, LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let all = splits(&plan);
    let s = all.iter().find(|s| is_segment(s) && segment_uuid(s) == uuid).expect("segment in plan");
    let mut q = query(column, query_vector(seed), 10);
    q.q.nprobes = 4;
    let (batches, st) = search_split_on(ds, s, &q.raw());
    (answer(&batches), st)
}

fn answers(ds: &Ds, seeds: &[i64], nprobes: u32) -> Vec<(Answer, LanceIoStats)> {
    seeds.iter().map(|s| search(ds, "embedding", query_vector(*s), 10, nprobes, 0, false)).collect()
}

fn configure_cache(bytes: u64) {
    let mut o = std::mem::MaybeUninit::<LanceSessionOptions>::uninit();
    assert_eq!(lance_session_options_default_v2(o.as_mut_ptr(), std::mem::size_of::<LanceSessionOptions>()), 0);
    let mut o = unsafe { o.assume_init() };
    o.index_cache_bytes = bytes;
    assert_eq!(lance_session_configure_v2(&o), 0, "{}", last_message());
}

const SEEDS: [i64; 5] = [3, 250, 777, 1333, 1950];

fn scenario_capacity(dir: &std::path::Path) {
    const BUDGET: u64 = 16 << 10;
    configure_cache(BUDGET);
    let uri = private_vectors(dir, "t");
    let ds = Ds::open(&uri, 0);
    let cold = answers(&ds, &SEEDS, 4);
    assert_eq!(prewarm(&ds, "emb_pq").map(|_| ()), Ok(()), "prewarm must succeed with a small cache");
    let after = answers(&ds, &SEEDS, 4);
    for ((a, _), (b, st)) in cold.iter().zip(&after) {
        assert_eq!(a, b, "results changed under cache pressure");
        assert!(st.index_cache_misses > 0, "an index larger than the cache stayed warm: {st:?}");
    }
    let s = session_stats();
    assert!(s.index_bytes <= BUDGET, "index cache holds {} bytes over its {BUDGET}-byte budget", s.index_bytes);
    println!("CAPACITY budget={BUDGET} index_bytes={} misses_after_prewarm={}", s.index_bytes, after[0].1.index_cache_misses);
}

fn scenario_append(dir: &std::path::Path) {
    let uri = private_vectors(dir, "t");
    let ds0 = Ds::open(&uri, 0);
    let old_segments = segment_uuids(&ds0, "embedding");
    let p = prewarm(&ds0, "emb_pq").unwrap();
    assert_eq!((p.index_cache_misses, p.index_cache_hits), (old_segments.len() as u64, 0), "{p:?}");
    let before = answers(&ds0, &SEEDS, 4);
    // Another writer appends a fragment: existing segments stay warm, the fragment is flat.
    let u = uri.clone();
    writer(move || async move {
        tk::write_batch(&u, tk::vectors_batch(2100, 2400), lance::dataset::WriteMode::Append, &Default::default())
            .await
            .unwrap();
    });
    let ds1 = Ds::open(&uri, 0);
    assert!(lance_dataset_version(ds1.ptr()) > lance_dataset_version(ds0.ptr()));
    assert_eq!(segment_uuids(&ds1, "embedding"), old_segments);
    let flat_of = |ds: &Ds| -> Vec<u64> {
        let plan = plan_vector(ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
        let mut f: Vec<u64> = splits(&plan).iter().filter(|s| !is_segment(s)).flat_map(frag_ids).collect();
        f.sort_unstable();
        f
    };
    let (old_flat, new_flat) = (flat_of(&ds0), flat_of(&ds1));
    assert!(
        new_flat.len() > old_flat.len() && old_flat.iter().all(|f| new_flat.contains(f)),
        "the appended fragments are not searched flat: before {old_flat:?}, after {new_flat:?}"
    );
    for (i, seg) in old_segments.iter().enumerate() {
        let (_, st) = search_segment(&ds1, "embedding", *seg, 40 + i as i64);
        assert_eq!(st.index_cache_misses, 0, "an old segment went cold after an append: {st:?}");
    }
    // optimize_indices adds a segment for the new rows: cold until warmed, then warm.
    let u = uri.clone();
    writer(move || async move {
        use lance::index::DatasetIndexExt;
        let mut ds = lance::Dataset::open(&u).await.unwrap();
        let mut o = lance_index::optimize::OptimizeOptions::append();
        o.index_names = Some(vec!["emb_pq".to_string()]);
        ds.optimize_indices(&o).await.unwrap();
    });
    let ds2 = Ds::open(&uri, 0);
    let now = segment_uuids(&ds2, "embedding");
    let new: Vec<[u8; 16]> = now.iter().filter(|u| !old_segments.contains(u)).copied().collect();
    assert_eq!(new.len(), 1, "optimize_indices added one segment");
    let p_old = prewarm_segments(&ds2, "emb_pq", &old_segments).unwrap();
    assert_eq!((p_old.index_cache_hits, p_old.index_cache_misses), (old_segments.len() as u64, 0), "old segments were not warm: {p_old:?}");
    let p_new = prewarm_segments(&ds2, "emb_pq", &new).unwrap();
    assert_eq!((p_new.index_cache_hits, p_new.index_cache_misses), (0, 1), "the new segment was already warm: {p_new:?}");
    let (_, st) = search_segment(&ds2, "embedding", new[0], 99);
    assert_eq!(st.index_cache_misses, 0, "{st:?}");
    // The old snapshot is still served, with the same answers.
    let again = answers(&ds0, &SEEDS, 4);
    for ((a, _), (b, st)) in before.iter().zip(&again) {
        assert_eq!(a, b, "the pinned snapshot's answers changed");
        assert_eq!(st.index_cache_misses, 0, "{st:?}");
    }
}

fn scenario_rebuild(dir: &std::path::Path) {
    let uri = private_vectors(dir, "t");
    let ds0 = Ds::open(&uri, 0);
    prewarm(&ds0, "emb_pq").unwrap();
    let before = answers(&ds0, &SEEDS, 4);
    let old = segment_uuids(&ds0, "embedding");
    let u = uri.clone();
    writer(move || async move {
        use lance::index::DatasetIndexExt;
        let mut ds = lance::Dataset::open(&u).await.unwrap();
        let pq = lance::index::vector::VectorIndexParams::ivf_pq(4, 8, 4, lance_linalg::distance::MetricType::L2, 20);
        ds.create_index(&["embedding"], lance_index::IndexType::Vector, Some("emb_pq".into()), &pq, true).await.unwrap();
    });
    let ds1 = Ds::open(&uri, 0);
    let new = segment_uuids(&ds1, "embedding");
    assert!(new.iter().all(|u| !old.contains(u)), "the rebuilt index kept a segment UUID");
    let p = prewarm(&ds1, "emb_pq").unwrap();
    assert_eq!((p.index_cache_hits, p.index_cache_misses), (0, new.len() as u64), "{p:?}");
    let s0 = session_stats();
    for (_, st) in answers(&ds1, &SEEDS, 4) {
        assert_eq!(st.index_cache_misses, 0, "{st:?}");
    }
    assert_eq!(session_stats().index_misses, s0.index_misses, "searches after the prewarm missed the cache");
    let again = answers(&ds0, &SEEDS, 4);
    for ((a, _), (b, _)) in before.iter().zip(&again) {
        assert_eq!(a, b, "the handle pinned before the rebuild answers differently");
    }
}

fn scenario_deletes(dir: &std::path::Path) {
    let uri = private_vectors(dir, "t");
    let ds0 = Ds::open(&uri, 0);
    prewarm(&ds0, "emb_pq").unwrap();
    let u = uri.clone();
    writer(move || async move {
        let mut ds = lance::Dataset::open(&u).await.unwrap();
        ds.delete("id % 5 = 1").await.unwrap();
    });
    let ds1 = Ds::open(&uri, 0);
    let seeds: Vec<i64> = (0..10).map(|i| i * 5 + 1).collect(); // queries next to deleted rows
    for (a, st) in answers(&ds1, &seeds, 4) {
        assert_eq!(a.len(), 10);
        assert!(a.iter().all(|(id, _)| id % 5 != 1 && !tk::vector_deleted(*id)), "a deleted row was returned: {a:?}");
        assert_eq!(st.index_cache_misses, 0, "index content went cold after a delete: {st:?}");
    }
    // The old handle still sees the rows deleted later.
    let old: Vec<i64> = answers(&ds0, &[1], 4)[0].0.iter().map(|(i, _)| *i).collect();
    assert!(old.contains(&1), "the pinned snapshot lost a row deleted after it: {old:?}");
}

fn scenario_two_tables(dir: &std::path::Path) {
    let a = Ds::open(&private_vectors(dir, "a"), 0);
    let b = Ds::open(&private_vectors(dir, "b"), 0);
    prewarm(&a, "emb_pq").unwrap();
    for seg in segment_uuids(&a, "embedding") {
        assert_eq!(search_segment(&a, "embedding", seg, 7).1.index_cache_misses, 0);
    }
    for seg in segment_uuids(&b, "embedding") {
        let (_, st) = search_segment(&b, "embedding", seg, 7);
        assert!(st.index_cache_misses > 0, "table b was served from table a's prewarm: {st:?}");
    }
    // And b's own prewarm is a cold one.
    let p = prewarm(&b, "emb_pq").unwrap();
    assert!(p.index_cache_hits < segment_uuids(&b, "embedding").len() as u64 || p.index_cache_misses == 0, "{p:?}");
}

const INTERFERENCE_URI: &str = "LANCE_HOST_TEST_INTERFERENCE_URI";
const INTERFERENCE_BASELINE: &str = "LANCE_HOST_TEST_INTERFERENCE_BASELINE";
const NPROBES: [u32; 3] = [1, 8, 32];
const QUERY_SEEDS: [i64; 20] = [13, 114, 215, 316, 417, 518, 619, 720, 821, 922, 1023, 1124, 1225, 1326, 1427, 1528, 1629, 1730, 1831, 1932];

fn filtered_ids(ds: &Ds) -> Vec<i64> {
    let f = cstr("id >= 500 AND id < 900");
    let cols = cstrs(&["id"]);
    let mut o = default_opts();
    o.filter_sql = f.as_ptr();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 1;
    let mut ids = i64_column(&scan(ds, &o).unwrap(), "id");
    ids.sort_unstable();
    ids
}

fn encode(a: &Answer) -> String {
    a.iter().map(|(i, d)| format!("{i}:{d:?}")).collect::<Vec<_>>().join(",")
}

/// Fresh process 1: the answers of emb_pq without any prewarm, 20 query vectors × nprobes
/// {1, 8, 32}, written to a file for the second process.
fn scenario_interference_baseline() {
    let ds = Ds::open(&std::env::var(INTERFERENCE_URI).unwrap(), 0);
    let mut out = String::new();
    for n in NPROBES {
        for (a, _) in answers(&ds, &QUERY_SEEDS, n) {
            out.push_str(&encode(&a));
            out.push('\n');
        }
    }
    std::fs::write(std::env::var(INTERFERENCE_BASELINE).unwrap(), out).unwrap();
}

/// One foreground operation: search i (query i % 20, nprobes (i / 20) % 3), checked against
/// the baseline; returns its latency.
fn interference_op(ds: &Ds, i: usize, baseline: &[String]) -> std::time::Duration {
    let t = std::time::Instant::now();
    let (a, _) = search(ds, "embedding", query_vector(QUERY_SEEDS[i % 20]), 10, NPROBES[(i / 20) % 3], 0, false);
    let d = t.elapsed();
    assert_eq!(encode(&a), baseline[(i / 20) % 3 * 20 + i % 20], "answer {i} differs from the run without prewarm");
    d
}

/// Fresh process 2: a cold prewarm of emb_pq on one thread while 4 threads search and scan;
/// every answer equals the baseline of the process that never prewarmed. Then a cosine index
/// prewarms (no search) and serves its searches with 0 misses.
fn scenario_interference() {
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};
    let uri = std::env::var(INTERFERENCE_URI).unwrap();
    let text = std::fs::read_to_string(std::env::var(INTERFERENCE_BASELINE).unwrap()).unwrap();
    let baseline: Arc<Vec<String>> = Arc::new(text.lines().map(str::to_string).collect());
    assert_eq!(baseline.len(), NPROBES.len() * QUERY_SEEDS.len());
    let ds = Arc::new(Ds::open(&uri, 0));
    let scan_expected: Vec<i64> = (500..900).filter(|i| !tk::vector_deleted(*i)).collect();
    let run = |with_prewarm: bool| -> (Vec<Duration>, Option<(Duration, LanceIoStats)>) {
        let barrier = Arc::new(Barrier::new(if with_prewarm { 5 } else { 4 }));
        let workers: Vec<_> = (0..4usize)
            .map(|t| {
                let (ds, barrier, expected, baseline) = (ds.clone(), barrier.clone(), scan_expected.clone(), baseline.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut lat = Vec::new();
                    for j in 0..15usize {
                        lat.push(interference_op(&ds, t * 15 + j, &baseline));
                        assert_eq!(filtered_ids(&ds), expected, "a scan returned other rows");
                    }
                    lat
                })
            })
            .collect();
        let warming = with_prewarm.then(|| {
            let (ds, barrier) = (ds.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let t = Instant::now();
                let p = prewarm(&ds, "emb_pq").unwrap();
                (t.elapsed(), p)
            })
        });
        let mut lat: Vec<Duration> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
        lat.sort();
        (lat, warming.map(|w| w.join().unwrap()))
    };
    let (during, warmed) = run(true);
    let (prewarm_time, p) = warmed.unwrap();
    assert!(p.index_cache_misses + p.index_cache_hits == 2, "{p:?}");
    let (after, _) = run(false);
    // After the prewarm, in one thread: every answer again, 0 index-cache misses.
    let s0 = session_stats();
    for i in 0..60 {
        interference_op(&ds, i, &baseline);
    }
    assert_eq!(session_stats().index_misses, s0.index_misses, "searches after the prewarm missed the cache");
    println!(
        "INTERFERENCE prewarm_ms={:.1} foreground_median_ms during_prewarm={:.1} after_prewarm={:.1} (4 threads, 2 cores)",
        prewarm_time.as_secs_f64() * 1e3,
        during[during.len() / 2].as_secs_f64() * 1e3,
        after[after.len() / 2].as_secs_f64() * 1e3
    );

    // A cosine index prewarms without any search (no zero vector), then serves with 0 misses.
    let p = prewarm(&ds, "emb_cos").unwrap();
    assert!(p.index_cache_misses > 0 && p.index_cache_hits == 0, "{p:?}");
    let s0 = session_stats();
    for seed in [5i64, 600, 1500] {
        let (a, st) = search_metric(&ds, "embedding", LanceMetric::LANCE_METRIC_COSINE, query_vector(seed), 10, 4, 0, true);
        assert_eq!(st.index_cache_misses, 0, "{st:?}");
        assert_eq!(a.len(), 10);
        assert!(a.iter().all(|(id, _)| !tk::vector_deleted(*id)));
    }
    assert_eq!(session_stats().index_misses, s0.index_misses, "cosine searches after prewarm missed the cache");
}

/// Runs one lifecycle scenario in a fresh process (empty session and caches).
#[test]
#[ignore = "run by the prewarm lifecycle tests in their own processes"]
fn child_prewarm_scenario() {
    let Ok(scenario) = std::env::var(SCENARIO) else { return };
    let dir = tempfile::tempdir().unwrap();
    match scenario.as_str() {
        "capacity" => scenario_capacity(dir.path()),
        "append" => scenario_append(dir.path()),
        "rebuild" => scenario_rebuild(dir.path()),
        "deletes" => scenario_deletes(dir.path()),
        "two_tables" => scenario_two_tables(dir.path()),
        "interference_baseline" => scenario_interference_baseline(),
        "interference" => scenario_interference(),
        other => panic!("unknown scenario {other}"),
    }
    println!("CHILD-OK");
}

fn run_scenario(name: &str) -> String {
    run_child("prewarm::child_prewarm_scenario", &[(SCENARIO, std::ffi::OsStr::new(name))])
}

#[test]
fn prewarm_with_a_cache_smaller_than_the_index_stays_correct() {
    run_scenario("capacity");
}

#[test]
fn prewarm_after_append_and_optimize_warms_only_what_is_new() {
    run_scenario("append");
}

#[test]
fn prewarm_after_index_rebuild_under_the_same_name() {
    run_scenario("rebuild");
}

#[test]
fn prewarm_then_deletes_never_return_deleted_rows() {
    run_scenario("deletes");
}

#[test]
fn prewarm_of_one_table_does_not_serve_another() {
    run_scenario("two_tables");
}

#[test]
fn prewarm_during_foreground_queries_changes_no_result() {
    let dir = tempfile::tempdir().unwrap();
    let uri = private_vectors(dir.path(), "t");
    let baseline = dir.path().join("baseline.txt");
    let envs = [
        (INTERFERENCE_URI, std::ffi::OsStr::new(&uri)),
        (INTERFERENCE_BASELINE, baseline.as_os_str()),
    ];
    let with = |scenario: &'static str| {
        let mut e = envs.to_vec();
        e.push((SCENARIO, std::ffi::OsStr::new(scenario)));
        run_child("prewarm::child_prewarm_scenario", &e)
    };
    with("interference_baseline");
    let out = with("interference");
    let line = out.lines().find(|l| l.starts_with("INTERFERENCE")).expect("interference figures");
    eprintln!("{line}");
}

#[test]
fn prewarm_segments_checks_its_arguments() {
    let ds = Ds::open(&crate::vector::vectors_uri(), 0);
    let segs = segment_uuids(&ds, "embedding");
    assert_eq!(segs.len(), 2);
    let name = cstr("emb_pq");
    let call = |bytes: &[u8], out: *mut LanceIoStats| {
        lance_dataset_prewarm_index_segments_v2(ds.ptr(), name.as_ptr(), bytes.as_ptr(), bytes.len(), out)
    };
    let mut io = LanceIoStats::default();
    assert_err(call(&[], &mut io), lance_host::LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT, "empty");
    assert_err(call(&segs[0][..15], &mut io), lance_host::LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT, "multiple of 16");
    let unknown = [0xabu8; 16];
    let mut both: Vec<u8> = segs[0].to_vec();
    both.extend_from_slice(&unknown);
    assert_err(call(&both, &mut io), lance_host::LanceErrorCode::LANCE_ERR_NOT_FOUND, "abababab-abab-abab-abab-abababababab");
    let other = cstr("no_such_index");
    assert_err(
        lance_dataset_prewarm_index_segments_v2(ds.ptr(), other.as_ptr(), segs[0].as_ptr(), 16, &mut io),
        lance_host::LanceErrorCode::LANCE_ERR_NOT_FOUND,
        "no_such_index",
    );
    // A segment of another index of the same table is not one of emb_pq's.
    let cos = segment_uuids_of(&ds, "emb_cos");
    assert_err(call(&cos[0], &mut io), lance_host::LanceErrorCode::LANCE_ERR_NOT_FOUND, "no segment");
    // Valid: one segment given twice is warmed once; `out` may be NULL.
    let mut twice: Vec<u8> = segs[1].to_vec();
    twice.extend_from_slice(&segs[1]);
    assert_eq!(call(&twice, &mut io), 0, "{}", last_message());
    assert_eq!(io.index_cache_hits + io.index_cache_misses, 1, "{io:?}");
    assert_eq!(call(&segs[0], std::ptr::null_mut()), 0, "{}", last_message());
}

/// Segment UUIDs of a named index from the index list.
fn segment_uuids_of(ds: &Ds, index: &str) -> Vec<[u8; 16]> {
    let mut list = std::ptr::null_mut();
    assert_eq!(lance_dataset_indexes(ds.ptr(), &mut list), 0);
    let mut out = Vec::new();
    for i in 0..lance_index_list_count(list) {
        let n = unsafe { std::ffi::CStr::from_ptr(lance_index_list_name(list, i)) };
        if n.to_str().unwrap() != index {
            continue;
        }
        for j in 0..lance_index_list_segment_count(list, i) {
            let mut seg = std::mem::MaybeUninit::new(LanceIndexSegmentInfo::default());
            assert_eq!(lance_index_list_segment_v2(list, i, j, seg.as_mut_ptr()), 0);
            out.push(unsafe { seg.assume_init() }.uuid);
        }
    }
    lance_index_list_free(list);
    out
}
