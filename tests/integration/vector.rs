//! Index metadata, split planning, per-split vector search, top-K merge, take and prewarm, on
//! the testkit's `vectors` table (IVF_PQ with two segments + an uncovered fragment + deletions,
//! IVF_FLAT cosine and IVF_HNSW_SQ variants).

use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_char, CStr};

use arrow::array::{Array, Float32Array, RecordBatch, StringArray};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::dataset::*;
use lance_host::ffi::index::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::take::*;
use lance_host::LanceErrorCode::*;
use lance_host_testkit as tk;

use crate::common::*;

pub fn vectors_uri() -> String {
    fixture().facts.get("vectors.uri").to_string()
}

fn visible_ids() -> Vec<i64> {
    (0..fixture().facts.get_u64("vectors.total_ids") as i64)
        .filter(|i| !tk::vector_deleted(*i))
        .collect()
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    1.0 - dot / (na * nb)
}

/// Exact top-k ids computed from the raw vectors the testkit wrote.
fn exact_top_k(
    q: &[f32],
    k: usize,
    dist: fn(&[f32], &[f32]) -> f32,
    vec_of: fn(i64) -> Vec<f32>,
    keep: impl Fn(i64) -> bool,
) -> Vec<i64> {
    let mut all: Vec<(f32, i64)> = visible_ids()
        .into_iter()
        .filter(|i| keep(*i))
        .map(|i| (dist(q, &vec_of(i)), i))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|x| x.1).collect()
}

pub(crate) fn query_vector(seed: i64) -> Vec<f32> {
    // Near an existing row, but not equal to it.
    tk::vector_of(seed).iter().enumerate().map(|(d, x)| x + 0.05 * (d as f32 % 3.0 - 1.0)).collect()
}

pub(crate) struct Plan(pub(crate) *mut LanceSplitPlan);
impl Drop for Plan {
    fn drop(&mut self) {
        lance_split_plan_free(self.0);
    }
}

#[derive(Debug)]
pub(crate) struct SplitH(pub(crate) *mut LanceSplit);
impl Drop for SplitH {
    fn drop(&mut self) {
        lance_split_free(self.0);
    }
}
unsafe impl Send for SplitH {}

pub(crate) fn plan_vector(ds: &Ds, column: &str, metric: LanceMetric, use_index: bool) -> Result<Plan, (i32, String)> {
    plan_vector_grouped(ds, column, metric, use_index, 0)
}

fn plan_vector_grouped(
    ds: &Ds,
    column: &str,
    metric: LanceMetric,
    use_index: bool,
    flat_target_rows: u64,
) -> Result<Plan, (i32, String)> {
    let c = cstr(column);
    let mut p = std::ptr::null_mut();
    let code = lance_dataset_plan_vector_search(ds.ptr(), c.as_ptr(), metric as i32, use_index, flat_target_rows, &mut p);
    if code != 0 {
        return Err((code, last_message()));
    }
    Ok(Plan(p))
}

pub(crate) fn splits(plan: &Plan) -> Vec<SplitH> {
    (0..lance_split_plan_count(plan.0))
        .map(|i| {
            let s = lance_split_plan_get(plan.0, i);
            assert!(!s.is_null());
            SplitH(s)
        })
        .collect()
}

pub(crate) fn frag_ids(s: &SplitH) -> Vec<u64> {
    let mut n = 0usize;
    let p = lance_split_fragment_ids(s.0, &mut n);
    if n == 0 {
        return vec![];
    }
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

fn reason(plan: &Plan) -> String {
    unsafe { CStr::from_ptr(lance_split_plan_reason(plan.0)) }.to_string_lossy().into_owned()
}

pub(crate) fn index_name(plan: &Plan) -> Option<String> {
    let p = lance_split_plan_index_name(plan.0);
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Ship a split as bytes and rebuild it, as a coordinator and a worker would.
fn ship(s: &SplitH) -> SplitH {
    let mut p = std::ptr::null_mut();
    let mut n = 0usize;
    assert_eq!(lance_split_serialize(s.0, &mut p, &mut n), 0);
    let bytes = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
    lance_bytes_free(p, n);
    let back = lance_split_deserialize(bytes.as_ptr(), bytes.len());
    assert!(!back.is_null(), "{}", last_message());
    SplitH(back)
}

pub(crate) struct Query {
    column: std::ffi::CString,
    vector: Vec<f32>,
    prefilter: Option<std::ffi::CString>,
    cols: CStrs,
    pub(crate) q: LanceVectorQuery,
}

pub(crate) fn query(column: &str, vector: Vec<f32>, k: u64) -> Query {
    let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
    assert_eq!(lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>()), 0);
    let mut q = unsafe { q.assume_init() };
    q.k = k;
    q.with_row_id = true;
    Query {
        column: cstr(column),
        vector,
        prefilter: None,
        cols: cstrs(&["id", "category"]),
        q,
    }
}

impl Query {
    pub(crate) fn raw(&mut self) -> LanceVectorQuery {
        let mut q = self.q;
        q.column = self.column.as_ptr();
        q.vector = self.vector.as_ptr() as *const _;
        q.dimension = self.vector.len();
        q.element_type = LanceElementType::LANCE_ELEMENT_F32 as i32;
        q.prefilter_sql = self.prefilter.as_ref().map(|p| p.as_ptr()).unwrap_or(std::ptr::null());
        q.columns = self.cols.ptrs.as_ptr();
        q.num_columns = self.cols.ptrs.len();
        q
    }
}

/// Search one split on a worker-side dataset opened from the split itself.
fn search_split(split: &SplitH, q: &LanceVectorQuery) -> Result<FFI_ArrowArrayStream, (i32, String)> {
    let ds = lance_split_open_dataset(split.0, std::ptr::null());
    assert!(!ds.is_null(), "{}", last_message());
    let ds = Ds(ds);
    let mut stream = FFI_ArrowArrayStream::empty();
    let code = lance_split_search_v2(ds.ptr(), split.0, q, &mut stream);
    if code != 0 {
        return Err((code, last_message()));
    }
    Ok(stream)
}

/// Plan, ship, search every split, merge the global top-k: returns the merged batches.
fn distributed_search(ds: &Ds, column: &str, metric: LanceMetric, use_index: bool, q: &mut Query, k: u64) -> Vec<RecordBatch> {
    let plan = plan_vector(ds, column, metric, use_index).unwrap();
    let raw = q.raw();
    let mut streams: Vec<FFI_ArrowArrayStream> = splits(&plan)
        .iter()
        .map(|s| search_split(&ship(s), &raw).unwrap())
        .collect();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), k, 0, &mut out), 0, "{}", last_message());
    read_stream(out).unwrap()
}

fn f32_column(batches: &[RecordBatch], name: &str) -> Vec<f32> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name(name).unwrap();
            let a = c.as_any().downcast_ref::<Float32Array>().unwrap().clone();
            (0..a.len()).map(move |i| a.value(i)).collect::<Vec<_>>()
        })
        .collect()
}

pub(crate) fn recall(found: &[i64], truth: &[i64]) -> f64 {
    let t: BTreeSet<i64> = truth.iter().copied().collect();
    found.iter().filter(|i| t.contains(i)).count() as f64 / truth.len() as f64
}

/// Recall of one global (non-split) Lance search with the same parameters, through Lance
/// directly.
fn global_lance_ids(column: &str, q: &[f32], k: usize, nprobes: Option<usize>) -> Vec<i64> {
    global_lance_ids_refined(column, q, k, nprobes, None)
}

/// The same with Lance's own re-rank of `k * refine` candidates.
fn global_lance_ids_refined(
    column: &str,
    q: &[f32],
    k: usize,
    nprobes: Option<usize>,
    refine: Option<u32>,
) -> Vec<i64> {
    let uri = vectors_uri();
    let column = column.to_string();
    let q = q.to_vec();
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            let ds = lance::Dataset::open(&uri).await.unwrap();
            let mut s = ds.scan();
            s.project(&["id"]).unwrap();
            s.nearest(&column, &Float32Array::from(q), k).unwrap();
            if let Some(n) = nprobes {
                s.nprobes(n);
            }
            if let Some(r) = refine {
                s.refine(r);
            }
            let b = s.try_into_batch().await.unwrap();
            i64_column(&[b], "id")
        })
    })
    .join()
    .unwrap()
}

#[test]
fn index_metadata() {
    let ds = Ds::open(&vectors_uri(), 0);
    let mut list = std::ptr::null_mut();
    assert_eq!(lance_dataset_indexes(ds.ptr(), &mut list), 0, "{}", last_message());
    let s = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string();
    let mut seen = HashMap::new();
    for i in 0..lance_index_list_count(list) {
        seen.insert(
            s(lance_index_list_name(list, i)),
            (
                s(lance_index_list_column(list, i)),
                s(lance_index_list_type(list, i)),
                s(lance_index_list_metric(list, i)),
                i,
            ),
        );
    }
    assert_eq!(seen["emb_pq"].0, "embedding");
    assert_eq!(seen["emb_pq"].1, "IVF_PQ");
    assert_eq!(seen["emb_pq"].2, "L2");
    assert_eq!(seen["emb_cos"].1, "IVF_FLAT");
    assert_eq!(seen["emb_cos"].2, "COSINE");
    assert_eq!(seen["emb_hnsw"].0, "embedding_hnsw");
    assert_eq!(seen["emb_hnsw"].1, "IVF_HNSW_SQ");
    // A scalar index is listed without a metric and never chosen for vector plans.
    assert_eq!(seen["id_btree"].0, "id");
    assert_eq!(seen["id_btree"].1.to_uppercase(), "BTREE");
    assert_eq!(seen["id_btree"].2, "");
    // emb_pq: two segments (built, then optimized after an append), disjoint fragments.
    let pq = seen["emb_pq"].3;
    assert_eq!(lance_index_list_segment_count(list, pq), 2);
    let mut covered = BTreeSet::new();
    let mut uuids = BTreeSet::new();
    for j in 0..2 {
        let mut info = std::mem::MaybeUninit::new(LanceIndexSegmentInfo::default());
        assert_eq!(lance_index_list_segment_v2(list, pq, j, info.as_mut_ptr()), 0);
        let info = unsafe { info.assume_init() };
        assert!(info.uuid.iter().any(|b| *b != 0));
        uuids.insert(info.uuid);
        let frags = unsafe { std::slice::from_raw_parts(info.fragment_ids, info.num_fragment_ids) };
        assert!(!frags.is_empty());
        assert!(info.indexed_rows >= frags.len() as u64);
        // the optimized segment keeps the trained IVF model
        assert_eq!(info.num_partitions, fixture().facts.get_u64("vectors.emb_pq.partitions"));
        for f in frags {
            assert!(covered.insert(*f), "fragment {f} in two segments");
        }
    }
    assert_eq!(uuids.len(), 2);
    // One fragment (appended after indexing) is covered by no segment.
    let total = fixture().facts.get_u64("vectors.fragments") as usize;
    assert_eq!(covered.len(), total - fixture().facts.get_u64("vectors.uncovered_fragments") as usize);
    let partitions = |index: usize| {
        let mut info = std::mem::MaybeUninit::new(LanceIndexSegmentInfo::default());
        assert_eq!(lance_index_list_segment_v2(list, index, 0, info.as_mut_ptr()), 0);
        unsafe { info.assume_init() }.num_partitions
    };
    assert_eq!(partitions(seen["emb_hnsw"].3), fixture().facts.get_u64("vectors.emb_hnsw.partitions"));
    assert_eq!(partitions(seen["id_btree"].3), 0, "a scalar index has no partitions");
    let mut info = std::mem::MaybeUninit::new(LanceIndexSegmentInfo::default());
    assert_err(lance_index_list_segment_v2(list, pq, 5, info.as_mut_ptr()), LANCE_ERR_INVALID_ARGUMENT, "segment 5");
    lance_index_list_free(list);
}

#[test]
fn vector_plan_covers_every_fragment_once() {
    let ds = Ds::open(&vectors_uri(), 0);
    let mut all = Vec::new();
    let mut p = std::ptr::null_mut();
    let mut n = 0usize;
    assert_eq!(lance_dataset_fragments(ds.ptr(), &mut p, &mut n), 0);
    let frags = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
    lance_fragment_info_list_free(p, n);
    all.extend(frags.iter().map(|f| f.id));

    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, true).unwrap();
    assert_eq!(index_name(&plan).as_deref(), Some("emb_pq"));
    let ss = splits(&plan);
    let kinds: Vec<i32> = ss.iter().map(|s| lance_split_kind(s.0)).collect();
    assert_eq!(kinds.iter().filter(|k| **k == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32).count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == LanceSplitKind::LANCE_SPLIT_FLAT as i32).count(), 1);
    let mut seen: Vec<u64> = ss.iter().flat_map(frag_ids).collect();
    seen.sort();
    assert_eq!(seen, all, "every visible fragment exactly once");
    let rows: u64 = ss.iter().map(|s| lance_split_row_count(s.0)).sum();
    assert_eq!(rows, fixture().facts.get_u64("vectors.rows"));
    // The segment UUIDs of the splits are the UUIDs of emb_pq's segments.
    let mut list = std::ptr::null_mut();
    assert_eq!(lance_dataset_indexes(ds.ptr(), &mut list), 0);
    let pq = (0..lance_index_list_count(list))
        .find(|i| unsafe { CStr::from_ptr(lance_index_list_name(list, *i)) }.to_str().unwrap() == "emb_pq")
        .unwrap();
    let mut index_uuids = BTreeSet::new();
    for j in 0..lance_index_list_segment_count(list, pq) {
        let mut info = std::mem::MaybeUninit::new(LanceIndexSegmentInfo::default());
        assert_eq!(lance_index_list_segment_v2(list, pq, j, info.as_mut_ptr()), 0);
        index_uuids.insert(unsafe { info.assume_init() }.uuid);
    }
    lance_index_list_free(list);
    let mut split_uuids = BTreeSet::new();
    for s in &ss {
        let mut uuid = [0u8; 16];
        let code = lance_split_segment_uuid(s.0, uuid.as_mut_ptr());
        if lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32 {
            assert_eq!(code, 0);
            split_uuids.insert(uuid);
        } else {
            assert_eq!(code, LANCE_ERR_NOT_FOUND as i32);
            assert_eq!(frag_ids(s).len(), 1);
        }
        assert_eq!(lance_split_version(s.0), lance_dataset_version(ds.ptr()));
    }
    assert_eq!(split_uuids, index_uuids);

    // A metric picks the index with that metric.
    let cos = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_COSINE, true).unwrap();
    assert_eq!(index_name(&cos).as_deref(), Some("emb_cos"));
    // No index with that metric: all flat, and the plan says why.
    let dot = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DOT, true).unwrap();
    assert_eq!(index_name(&dot), None);
    let why = reason(&dot);
    assert!(why.contains("DOT") && why.contains("emb_pq=L2"), "{why}");
    assert!(splits(&dot).iter().all(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_FLAT as i32));
    assert_eq!(splits(&dot).len(), all.len());
    // use_index = false: all flat.
    let flat = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false).unwrap();
    assert_eq!(splits(&flat).len(), all.len());
    assert!(reason(&flat).contains("use_index"));
    // Bad columns.
    let e = plan_vector(&ds, "nope", LanceMetric::LANCE_METRIC_DEFAULT, true).err().unwrap();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(e.1.contains("nope"));
    let e = plan_vector(&ds, "id", LanceMetric::LANCE_METRIC_DEFAULT, true).err().unwrap();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(e.1.contains("not a vector column"));
    let c = cstr("embedding");
    let mut out = std::ptr::null_mut();
    assert_err(
        lance_dataset_plan_vector_search(ds.ptr(), c.as_ptr(), 42, true, 0, &mut out),
        LANCE_ERR_INVALID_ARGUMENT,
        "metric 42",
    );
}

#[test]
fn scan_splits_travel_and_cover_the_table() {
    let ds = Ds::open(&vectors_uri(), 0);
    let rows = fixture().facts.get_u64("vectors.rows");
    for target in [0u64, 500, 1_000_000] {
        let mut p = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_scan(ds.ptr(), target, &mut p), 0);
        let plan = Plan(p);
        let ss = splits(&plan);
        match target {
            0 => assert_eq!(ss.len() as u64, fixture().facts.get_u64("vectors.fragments")),
            1_000_000 => assert_eq!(ss.len(), 1),
            _ => assert!(ss.len() > 1 && ss.iter().rev().skip(1).all(|s| lance_split_row_count(s.0) >= target)),
        }
        let mut ids = Vec::new();
        for s in &ss {
            let worker = ship(s);
            let wds = Ds(lance_split_open_dataset(worker.0, std::ptr::null()));
            assert!(!wds.0.is_null());
            let cols = cstrs(&["id"]);
            let mut o = default_opts();
            o.columns = cols.ptrs.as_ptr();
            o.num_columns = 1;
            let mut stream = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_scan_v2(wds.ptr(), worker.0, &o, &mut stream), 0, "{}", last_message());
            let got = i64_column(&read_stream(stream).unwrap(), "id");
            assert_eq!(got.len() as u64, lance_split_row_count(s.0));
            ids.extend(got);
        }
        ids.sort();
        assert_eq!(ids.len() as u64, rows);
        assert_eq!(ids, visible_ids());
    }
}

#[test]
fn merged_split_search_beats_or_matches_global_recall() {
    let ds = Ds::open(&vectors_uri(), 0);
    let k = 10usize;
    let (mut merged_recall, mut global_recall) = (0.0, 0.0);
    for seed in [5i64, 444, 1333, 1950, 2077] {
        let qv = query_vector(seed);
        let truth = exact_top_k(&qv, k, l2, tk::vector_of, |_| true);
        let mut q = query("embedding", qv.clone(), k as u64);
        q.q.nprobes = 2;
        let merged = distributed_search(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true, &mut q, k as u64);
        let ids = i64_column(&merged, "id");
        assert_eq!(ids.len(), k);
        let d = f32_column(&merged, "_distance");
        assert!(d.windows(2).all(|w| w[0] <= w[1]), "merged distances not ascending");
        assert!(ids.iter().all(|i| !tk::vector_deleted(*i)), "a deleted row was returned");
        merged_recall += recall(&ids, &truth);
        let g = global_lance_ids("embedding", &qv, k, Some(2));
        global_recall += recall(&g, &truth);
        assert!(
            recall(&ids, &truth) >= recall(&g, &truth),
            "seed {seed}: split plan recall {} below global recall {}",
            recall(&ids, &truth),
            recall(&g, &truth)
        );

        // use_index = false: exactly the exact top-k, including the uncovered fragment.
        let mut q = query("embedding", qv.clone(), k as u64);
        let exact = distributed_search(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false, &mut q, k as u64);
        assert_eq!(i64_column(&exact, "id"), truth, "flat plan differs from exact top-k (seed {seed})");
        let dist = f32_column(&exact, "_distance");
        for (id, dd) in truth.iter().zip(dist) {
            assert!((l2(&qv, &tk::vector_of(*id)) - dd).abs() < 1e-3);
        }
    }
    assert!(
        merged_recall + 1e-9 >= global_recall,
        "split plan recall {merged_recall} below global recall {global_recall}"
    );
    assert!(merged_recall / 5.0 >= 0.5, "recall too low: {}", merged_recall / 5.0);
}

#[test]
fn ivf_flat_cosine_and_hnsw_variants() {
    let ds = Ds::open(&vectors_uri(), 0);
    let qv = query_vector(321);
    // IVF_FLAT (cosine), probing every partition: exact.
    let mut q = query("embedding", qv.clone(), 8);
    q.q.nprobes = 4;
    let got = distributed_search(&ds, "embedding", LanceMetric::LANCE_METRIC_COSINE, true, &mut q, 8);
    assert_eq!(i64_column(&got, "id"), exact_top_k(&qv, 8, cosine, tk::vector_of, |_| true));
    // IVF_HNSW_SQ on another column.
    let hv = |i: i64| tk::vector_of(i + 100_000);
    let qh = hv(777);
    let plan = plan_vector(&ds, "embedding_hnsw", LanceMetric::LANCE_METRIC_DEFAULT, true).unwrap();
    assert_eq!(index_name(&plan).as_deref(), Some("emb_hnsw"));
    let mut q = query("embedding_hnsw", qh.clone(), 10);
    q.q.ef = 64;
    q.q.nprobes = 2;
    let got = distributed_search(&ds, "embedding_hnsw", LanceMetric::LANCE_METRIC_DEFAULT, true, &mut q, 10);
    let ids = i64_column(&got, "id");
    let truth = exact_top_k(&qh, 10, l2, |i| tk::vector_of(i + 100_000), |_| true);
    assert_eq!(ids[0], 777, "the query's own row is its nearest neighbour");
    assert!(recall(&ids, &truth) >= 0.6, "hnsw recall {}", recall(&ids, &truth));
}

#[test]
fn prefilter_applies_before_top_k() {
    let ds = Ds::open(&vectors_uri(), 0);
    let qv = query_vector(9);
    let mut q = query("embedding", qv.clone(), 10);
    q.prefilter = Some(cstr("category = 'rare'"));
    // Flat: exactly the exact top-10 among rare rows (a post-filter would return fewer).
    let got = distributed_search(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false, &mut q, 10);
    let truth = exact_top_k(&qv, 10, l2, tk::vector_of, |i| tk::vector_category_of(i) == "rare");
    assert_eq!(i64_column(&got, "id"), truth);
    // Indexed: still 10 results, all rare.
    let mut q = query("embedding", qv, 10);
    q.prefilter = Some(cstr("category = 'rare'"));
    q.q.nprobes = 4;
    let got = distributed_search(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true, &mut q, 10);
    let cats: Vec<String> = got
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("category").unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
            (0..c.len()).map(move |i| c.value(i).to_string()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(cats.len(), 10);
    assert!(cats.iter().all(|c| c == "rare"));
}

#[test]
fn query_errors() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let ss = splits(&plan);
    let seg = ss.iter().find(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32).unwrap();
    // Metric mismatch with the split's index.
    let mut q = query("embedding", query_vector(1), 5);
    q.q.metric = LanceMetric::LANCE_METRIC_COSINE as i32;
    let e = search_split(seg, &q.raw()).err().unwrap();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(e.1.contains("COSINE") && e.1.contains("L2"), "{}", e.1);
    // Wrong dimension.
    let mut q = query("embedding", vec![0.5; 7], 5);
    let e = search_split(seg, &q.raw()).err().unwrap();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(e.1.contains("dimension 7") && e.1.contains("16"), "{}", e.1);
    // k = 0, bad element type, NULL vector, wrong column.
    let mut q = query("embedding", query_vector(1), 0);
    assert!(search_split(seg, &q.raw()).err().unwrap().1.contains("k must"));
    let mut q = query("embedding", query_vector(1), 3);
    let mut raw = q.raw();
    raw.element_type = 99;
    assert!(search_split(seg, &raw).err().unwrap().1.contains("element_type"));
    raw.element_type = LanceElementType::LANCE_ELEMENT_F32 as i32;
    raw.vector = std::ptr::null();
    assert!(search_split(seg, &raw).err().unwrap().1.contains("query.vector"));
    let mut q = query("embedding_hnsw", query_vector(1), 3);
    assert!(search_split(seg, &q.raw()).err().unwrap().1.contains("differs"));
    // Unknown projected column.
    let mut q = query("embedding", query_vector(1), 3);
    q.cols = cstrs(&["id", "ghost"]);
    assert!(search_split(seg, &q.raw()).err().unwrap().1.contains("ghost"));
    // A scan split cannot search; a vector split cannot scan.
    let wds = Ds(lance_split_open_dataset(seg.0, std::ptr::null()));
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(lance_split_scan_v2(wds.ptr(), seg.0, std::ptr::null(), &mut stream), LANCE_ERR_INVALID_ARGUMENT, "cannot be scanned");
}

#[test]
fn every_query_element_type() {
    let ds = Ds::open(&vectors_uri(), 0);
    let base = query_vector(600);
    let col = cstr("embedding");
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false).unwrap();
    let ss = splits(&plan);
    let truth = exact_top_k(&base, 3, l2, tk::vector_of, |_| true);
    let f16: Vec<u16> = base.iter().map(|x| half::f16::from_f32(*x).to_bits()).collect();
    let f64s: Vec<f64> = base.iter().map(|x| *x as f64).collect();
    let cases: Vec<(LanceElementType, *const core::ffi::c_void)> = vec![
        (LanceElementType::LANCE_ELEMENT_F16, f16.as_ptr() as _),
        (LanceElementType::LANCE_ELEMENT_F32, base.as_ptr() as _),
        (LanceElementType::LANCE_ELEMENT_F64, f64s.as_ptr() as _),
    ];
    for (et, ptr) in cases {
        let mut q = query("embedding", base.clone(), 3);
        let mut raw = q.raw();
        raw.column = col.as_ptr();
        raw.element_type = et as i32;
        raw.vector = ptr;
        let mut streams: Vec<FFI_ArrowArrayStream> = ss.iter().map(|s| search_split(s, &raw).unwrap()).collect();
        let mut out = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), 3, 0, &mut out), 0);
        assert_eq!(i64_column(&read_stream(out).unwrap(), "id"), truth, "{et:?}");
    }
    // Integer queries are cast to the column's float type.
    let ints: Vec<u8> = vec![2; 16];
    let signed: Vec<i8> = vec![-1; 16];
    for (et, ptr, as_f32) in [
        (LanceElementType::LANCE_ELEMENT_U8, ints.as_ptr() as *const core::ffi::c_void, vec![2.0f32; 16]),
        (LanceElementType::LANCE_ELEMENT_I8, signed.as_ptr() as *const core::ffi::c_void, vec![-1.0f32; 16]),
    ] {
        let mut q = query("embedding", as_f32.clone(), 2);
        let mut raw = q.raw();
        raw.element_type = et as i32;
        raw.vector = ptr;
        let mut streams: Vec<FFI_ArrowArrayStream> = ss.iter().map(|s| search_split(s, &raw).unwrap()).collect();
        let mut out = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), 2, 0, &mut out), 0);
        let want = exact_top_k(&as_f32, 2, l2, tk::vector_of, |_| true);
        assert_eq!(i64_column(&read_stream(out).unwrap(), "id"), want, "{et:?}");
    }
    // f16 and f64 columns, searched flat.
    for column in ["embedding_f16", "embedding_f64"] {
        let plan = plan_vector(&ds, column, LanceMetric::LANCE_METRIC_DEFAULT, true).unwrap();
        assert_eq!(index_name(&plan), None);
        let mut q = query(column, base.clone(), 3);
        let raw = q.raw();
        let mut streams: Vec<FFI_ArrowArrayStream> = splits(&plan).iter().map(|s| search_split(s, &raw).unwrap()).collect();
        let mut out = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), 3, 0, &mut out), 0);
        let got = i64_column(&read_stream(out).unwrap(), "id");
        assert_eq!(got[0], truth[0], "{column}");
    }
}

#[test]
fn hamming_on_binary_vectors() {
    let ds = Ds::open(&vectors_uri(), 0);
    let target = 1234i64;
    let bits = tk::bits_of(target);
    let plan = plan_vector(&ds, "bits", LanceMetric::LANCE_METRIC_HAMMING, true).unwrap();
    let col = cstr("bits");
    let cols = cstrs(&["id"]);
    let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
    lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>());
    let mut q = unsafe { q.assume_init() };
    q.column = col.as_ptr();
    q.vector = bits.as_ptr() as _;
    q.dimension = bits.len();
    q.element_type = LanceElementType::LANCE_ELEMENT_U8 as i32;
    q.metric = LanceMetric::LANCE_METRIC_HAMMING as i32;
    q.k = 1;
    q.columns = cols.ptrs.as_ptr();
    q.num_columns = 1;
    let mut streams: Vec<FFI_ArrowArrayStream> = splits(&plan).iter().map(|s| search_split(s, &q).unwrap()).collect();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), 1, 0, &mut out), 0);
    let got = read_stream(out).unwrap();
    assert_eq!(i64_column(&got, "id"), vec![target]);
    assert_eq!(f32_column(&got, "_distance"), vec![0.0]);
}

#[test]
fn merge_with_offset_and_bad_inputs() {
    let ds = Ds::open(&vectors_uri(), 0);
    let qv = query_vector(50);
    let truth = exact_top_k(&qv, 12, l2, tk::vector_of, |_| true);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false).unwrap();
    let mut q = query("embedding", qv, 12);
    let raw = q.raw();
    let mut streams: Vec<FFI_ArrowArrayStream> = splits(&plan).iter().map(|s| search_split(s, &raw).unwrap()).collect();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(streams.as_mut_ptr(), streams.len(), 5, 4, &mut out), 0);
    assert_eq!(i64_column(&read_stream(out).unwrap(), "id"), truth[4..9].to_vec());
    // The inputs were consumed.
    assert!(streams.iter().all(|s| s.release.is_none()));
    // Streams without _rowid cannot be merged.
    let mut q = query("embedding", query_vector(50), 3);
    q.q.with_row_id = false;
    let raw = q.raw();
    let mut streams: Vec<FFI_ArrowArrayStream> = splits(&plan).iter().take(2).map(|s| search_split(s, &raw).unwrap()).collect();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_err(lance_topk_merge(streams.as_mut_ptr(), 2, 3, 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "_rowid");
    assert_err(lance_topk_merge(std::ptr::null_mut(), 2, 3, 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "streams");
    assert_err(lance_topk_merge(std::ptr::null_mut(), 0, 3, 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "no input");
}

#[test]
fn take_rows_in_request_order() {
    let ds = Ds::open(&vectors_uri(), 0);
    // Map _rowid -> id from a scan.
    let cols = cstrs(&["id"]);
    let mut o = default_opts();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 1;
    o.with_row_id = true;
    let batches = scan(&ds, &o).unwrap();
    let ids = i64_column(&batches, "id");
    let rowids = u64_column(&batches, "_rowid");
    let pick = [rowids[500], rowids[3], rowids[500], rowids[1700], rowids[42]];
    let expect = [ids[500], ids[3], ids[500], ids[1700], ids[42]];
    let want_cols = cstrs(&["_rowid", "id", "category"]);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(
        lance_dataset_take_rows(ds.ptr(), pick.as_ptr(), pick.len(), want_cols.ptrs.as_ptr(), 3, &mut stream),
        0,
        "{}",
        last_message()
    );
    let got = read_stream(stream).unwrap();
    assert_eq!(i64_column(&got, "id"), expect.to_vec());
    assert_eq!(u64_column(&got, "_rowid"), pick.to_vec());
    let names: Vec<String> = got[0].schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["_rowid", "id", "category"]);

    // A deleted row: NOT_FOUND naming it, no partial result.
    let deleted_id = (0..2100i64).find(|i| tk::vector_deleted(*i)).unwrap();
    // Row addresses: the deleted row sits between its neighbours in fragment order.
    let pos = ids.iter().position(|i| *i == deleted_id + 1).unwrap();
    let deleted_addr = rowids[pos] - 1;
    let bad = [rowids[0], deleted_addr];
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(
        lance_dataset_take_rows(ds.ptr(), bad.as_ptr(), 2, std::ptr::null(), 0, &mut stream),
        LANCE_ERR_NOT_FOUND,
        &deleted_addr.to_string(),
    );
    assert!(stream.release.is_none());
    let missing = [(999u64 << 32) | 1];
    assert_err(
        lance_dataset_take_rows(ds.ptr(), missing.as_ptr(), 1, std::ptr::null(), 0, &mut stream),
        LANCE_ERR_NOT_FOUND,
        &missing[0].to_string(),
    );
    let beyond = [rowids[0] + 100_000];
    assert_err(
        lance_dataset_take_rows(ds.ptr(), beyond.as_ptr(), 1, std::ptr::null(), 0, &mut stream),
        LANCE_ERR_NOT_FOUND,
        &beyond[0].to_string(),
    );
    assert_err(
        lance_dataset_take_rows(ds.ptr(), std::ptr::null(), 3, std::ptr::null(), 0, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "row_ids",
    );
    let ghost = cstrs(&["ghost"]);
    assert_err(
        lance_dataset_take_rows(ds.ptr(), pick.as_ptr(), 1, ghost.ptrs.as_ptr(), 1, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "ghost",
    );
    // An empty request is an empty result.
    assert_eq!(lance_dataset_take_rows(ds.ptr(), std::ptr::null(), 0, std::ptr::null(), 0, &mut stream), 0);
    assert_eq!(total_rows(&read_stream(stream).unwrap()), 0);
}

#[test]
fn split_bytes_reject_damage_and_foreign_tables() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, true).unwrap();
    let s = &splits(&plan)[0];
    let mut p = std::ptr::null_mut();
    let mut n = 0usize;
    assert_eq!(lance_split_serialize(s.0, &mut p, &mut n), 0);
    let bytes = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
    lance_bytes_free(p, n);
    let back = SplitH(lance_split_deserialize(bytes.as_ptr(), bytes.len()));
    assert_eq!(frag_ids(&back), frag_ids(s));
    let mut u1 = [0u8; 16];
    let mut u2 = [0u8; 16];
    lance_split_segment_uuid(s.0, u1.as_mut_ptr());
    lance_split_segment_uuid(back.0, u2.as_mut_ptr());
    assert_eq!(u1, u2);
    // Truncated, corrupted, foreign format version, garbage.
    assert!(lance_split_deserialize(bytes.as_ptr(), bytes.len() - 3).is_null());
    assert_err(last_code(), LANCE_ERR_CORRUPT, "invalid split bytes");
    let mut flipped = bytes.clone();
    flipped[20] ^= 0x40;
    assert!(lance_split_deserialize(flipped.as_ptr(), flipped.len()).is_null());
    assert_err(last_code(), LANCE_ERR_CORRUPT, "checksum");
    let mut future = bytes.clone();
    future[4] = 9;
    assert!(lance_split_deserialize(future.as_ptr(), future.len()).is_null());
    assert_err(last_code(), LANCE_ERR_NOT_SUPPORTED, "split format 9 is not supported");
    assert!(lance_split_deserialize(b"hello".as_ptr(), 5).is_null());
    assert_err(last_code(), LANCE_ERR_CORRUPT, "magic");
    assert!(lance_split_deserialize(std::ptr::null(), 4).is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "bytes");
    // A split executed against another table or version.
    let people = Ds::open(&people_uri(), 0);
    let mut q = query("embedding", query_vector(1), 3);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(lance_split_search_v2(people.ptr(), back.0, &q.raw(), &mut stream), LANCE_ERR_INVALID_ARGUMENT, "belongs to table");
    let older = Ds::open(&vectors_uri(), 1);
    assert_err(lance_split_search_v2(older.ptr(), back.0, &q.raw(), &mut stream), LANCE_ERR_INVALID_ARGUMENT, "version");
}

const PREWARM_CHILD: &str = "LANCE_HOST_TEST_PREWARM_CHILD";

/// Runs in its own process so no other test moves the session's cache counters.
#[test]
#[ignore = "run by prewarm_serves_later_handles in its own process"]
fn child_prewarm() {
    if std::env::var_os(PREWARM_CHILD).is_none() {
        return;
    }
    use lance_host::ffi::session::*;
    let stats = || {
        let mut s = LanceSessionStats::default();
        assert_eq!(lance_session_stats_v2(&mut s), 0);
        s
    };
    let uri = vectors_uri();
    // Bad names first.
    let first = Ds::open(&uri, 0);
    let name = cstr("no_such_index");
    assert_err(lance_dataset_prewarm_index(first.ptr(), name.as_ptr()), LANCE_ERR_NOT_FOUND, "no_such_index");
    assert_err(lance_dataset_prewarm_index(first.ptr(), std::ptr::null()), LANCE_ERR_INVALID_ARGUMENT, "index_name");
    let bad: [u8; 3] = [0xc3, 0x28, 0];
    assert_err(lance_dataset_prewarm_index(first.ptr(), bad.as_ptr() as *const c_char), LANCE_ERR_INVALID_ARGUMENT, "UTF-8");
    assert_err(lance_dataset_prewarm_index(std::ptr::null(), name.as_ptr()), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    let before_prewarm = stats();
    let idx = cstr("emb_pq");
    assert_eq!(lance_dataset_prewarm_index(first.ptr(), idx.as_ptr()), 0, "{}", last_message());
    let warmed = stats();
    assert!(warmed.index_entries > before_prewarm.index_entries, "prewarm cached nothing");
    drop(first);
    // A second, separately opened handle: its searches cause no index-cache misses.
    let second = Ds::open(&uri, 0);
    let before = stats();
    let plan = plan_vector(&second, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let mut q = query("embedding", query_vector(77), 10);
    q.q.nprobes = 4;
    let raw = q.raw();
    for s in splits(&plan) {
        if lance_split_kind(s.0) != LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32 {
            continue;
        }
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_search_v2(second.ptr(), s.0, &raw, &mut stream), 0, "{}", last_message());
        assert!(total_rows(&read_stream(stream).unwrap()) > 0);
    }
    let after = stats();
    assert_eq!(
        after.index_misses, before.index_misses,
        "index cache misses after prewarm: before {before:?} after {after:?}"
    );
    assert!(after.index_hits > before.index_hits);
    println!("CHILD-OK");
}

#[test]
fn prewarm_serves_later_handles() {
    run_child("vector::child_prewarm", &[(PREWARM_CHILD, std::ffi::OsStr::new("1"))]);
}

/// Global refine after the merge: index-segment splits return approximate candidates
/// (`defer_refine`), the host merges `k * refine` of them, re-ranks them once with
/// `lance_dataset_refine`, and merges the result with the exact flat splits.
fn deferred_refine_search(ds: &Ds, q: &mut Query, k: u64, refine: u32) -> Vec<RecordBatch> {
    let plan = plan_vector(ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    q.q.defer_refine = true;
    q.q.refine_factor = refine;
    let raw = q.raw();
    let (mut approx, mut exact) = (Vec::new(), Vec::new());
    for s in splits(&plan) {
        let shipped = ship(&s);
        let stream = search_split(&shipped, &raw).unwrap();
        if lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32 {
            approx.push(stream);
        } else {
            exact.push(stream);
        }
    }
    assert!(!approx.is_empty() && !exact.is_empty());
    let mut merged = FFI_ArrowArrayStream::empty();
    let candidates = k * refine as u64;
    assert_eq!(lance_topk_merge(approx.as_mut_ptr(), approx.len(), candidates, 0, &mut merged), 0, "{}", last_message());
    let mut refined = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_refine_v2(ds.ptr(), &raw, &mut merged, &mut refined), 0, "{}", last_message());
    assert!(merged.release.is_none(), "refine consumes its input stream");
    exact.push(refined);
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(exact.as_mut_ptr(), exact.len(), k, 0, &mut out), 0, "{}", last_message());
    read_stream(out).unwrap()
}

#[test]
fn deferred_refine_is_exact_and_matches_global_refine_recall() {
    let ds = Ds::open(&vectors_uri(), 0);
    let k = 10usize;
    let (mut ours, mut global) = (0.0, 0.0);
    for seed in [7i64, 321, 1200, 1777, 2101] {
        let qv = query_vector(seed);
        let truth = exact_top_k(&qv, k, l2, tk::vector_of, |_| true);
        let mut q = query("embedding", qv.clone(), k as u64);
        q.q.nprobes = 2;
        let got = deferred_refine_search(&ds, &mut q, k as u64, 4);
        let ids = i64_column(&got, "id");
        assert_eq!(ids.len(), k);
        assert!(ids.iter().all(|i| !tk::vector_deleted(*i)), "a deleted row was returned");
        // Every returned distance is the exact one, in ascending order.
        let d = f32_column(&got, "_distance");
        assert!(d.windows(2).all(|w| w[0] <= w[1]), "distances not ascending: {d:?}");
        for (id, dd) in ids.iter().zip(&d) {
            let want = l2(&qv, &tk::vector_of(*id));
            assert!((want - dd).abs() <= 1e-3 * want.max(1.0), "id {id}: distance {dd}, exact {want}");
        }
        ours += recall(&ids, &truth);
        // One global Lance search with the same refine factor, for comparison.
        let g = global_lance_ids_refined("embedding", &qv, k, Some(2), Some(4));
        global += recall(&g, &truth);
    }
    assert!(ours + 1e-9 >= global, "deferred-refine recall {ours} below global refine recall {global}");
    assert!(ours / 5.0 >= 0.7, "recall too low: {}", ours / 5.0);
}

#[test]
fn deferred_segment_splits_return_k_times_refine_candidates() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let ss = splits(&plan);
    let seg = ss.iter().find(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32).unwrap();
    let mut q = query("embedding", query_vector(77), 5);
    q.q.nprobes = 4;
    q.q.refine_factor = 3;
    q.q.defer_refine = true;
    let got = read_stream(search_split(seg, &q.raw()).unwrap()).unwrap();
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 15);
    q.q.defer_refine = false;
    let got = read_stream(search_split(seg, &q.raw()).unwrap()).unwrap();
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
}

#[test]
fn refine_rejects_bad_inputs_and_releases_the_stream() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false).unwrap();
    let ss = splits(&plan);
    let mut out = FFI_ArrowArrayStream::empty();
    // Candidates without _rowid.
    let mut q = query("embedding", query_vector(9), 3);
    q.q.with_row_id = false;
    let raw = q.raw();
    let mut stream = search_split(&ss[0], &raw).unwrap();
    assert_err(lance_dataset_refine_v2(ds.ptr(), &raw, &mut stream, &mut out), LANCE_ERR_INVALID_ARGUMENT, "_rowid");
    assert!(stream.release.is_none(), "input released on failure");
    // Wrong dimension: the stream is released too.
    let mut good = query("embedding", query_vector(9), 3);
    let good_raw = good.raw();
    let mut stream = search_split(&ss[0], &good_raw).unwrap();
    let mut bad = query("embedding", vec![0.1; 5], 3);
    assert_err(lance_dataset_refine_v2(ds.ptr(), &bad.raw(), &mut stream, &mut out), LANCE_ERR_INVALID_ARGUMENT, "dimension 5");
    assert!(stream.release.is_none());
    // NULL candidates, NULL dataset, NULL out.
    assert_err(lance_dataset_refine_v2(ds.ptr(), &good_raw, std::ptr::null_mut(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "candidates");
    let mut stream = search_split(&ss[0], &good_raw).unwrap();
    assert_err(lance_dataset_refine_v2(std::ptr::null(), &good_raw, &mut stream, &mut out), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    assert!(stream.release.is_none());
    let mut stream = search_split(&ss[0], &good_raw).unwrap();
    assert_err(lance_dataset_refine_v2(ds.ptr(), &good_raw, &mut stream, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    // Refining exact candidates again changes nothing: same ids and distances.
    let stream = search_split(&ss[0], &good_raw).unwrap();
    let direct = read_stream(stream).unwrap();
    let mut stream = search_split(&ss[0], &good_raw).unwrap();
    assert_eq!(lance_dataset_refine_v2(ds.ptr(), &good_raw, &mut stream, &mut out), 0, "{}", last_message());
    let again = read_stream(out).unwrap();
    assert_eq!(i64_column(&again, "id"), i64_column(&direct, "id"));
    for (a, b) in f32_column(&again, "_distance").iter().zip(f32_column(&direct, "_distance")) {
        assert!((a - b).abs() <= 1e-4 * b.max(1.0), "{a} vs {b}");
    }
}

#[test]
fn flat_splits_group_uncovered_fragments_up_to_a_target() {
    let ds = Ds::open(&vectors_uri(), 0);
    let mut p = std::ptr::null_mut();
    let mut n = 0usize;
    assert_eq!(lance_dataset_fragments(ds.ptr(), &mut p, &mut n), 0);
    let frags = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
    lance_fragment_info_list_free(p, n);
    assert!(frags.len() >= 3, "fixture has several fragments");
    let per_fragment = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false).unwrap();
    assert_eq!(lance_split_plan_count(per_fragment.0), frags.len());
    // A target of two fragments' rows: consecutive fragments grouped until the target.
    let target = frags[0].logical_rows + frags[1].logical_rows;
    let mut expected: Vec<Vec<u64>> = Vec::new();
    let (mut group, mut rows) = (Vec::new(), 0u64);
    for f in &frags {
        group.push(f.id);
        rows += f.logical_rows;
        if rows >= target {
            expected.push(std::mem::take(&mut group));
            rows = 0;
        }
    }
    if !group.is_empty() {
        expected.push(group);
    }
    let grouped = plan_vector_grouped(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false, target).unwrap();
    let got: Vec<Vec<u64>> = splits(&grouped).iter().map(frag_ids).collect();
    assert_eq!(got, expected);
    assert!(got.len() < frags.len());
    let total: u64 = splits(&grouped).iter().map(|s| lance_split_row_count(s.0)).sum();
    assert_eq!(total, frags.iter().map(|f| f.logical_rows).sum::<u64>());
    // A huge target makes one flat split; searching it gives the exact top-k.
    let one = plan_vector_grouped(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, false, u64::MAX).unwrap();
    assert_eq!(lance_split_plan_count(one.0), 1);
    let qv = query_vector(1500);
    let truth = exact_top_k(&qv, 10, l2, tk::vector_of, |_| true);
    let mut q = query("embedding", qv, 10);
    let s = &splits(&one)[0];
    let got = read_stream(search_split(&ship(s), &q.raw()).unwrap()).unwrap();
    assert_eq!(i64_column(&got, "id"), truth);
    // With the index, only uncovered fragments are grouped; segments keep their splits.
    let with_index = plan_vector_grouped(&ds, "embedding", LanceMetric::LANCE_METRIC_DEFAULT, true, u64::MAX).unwrap();
    let kinds: Vec<i32> = splits(&with_index).iter().map(|s| lance_split_kind(s.0)).collect();
    assert_eq!(kinds.iter().filter(|k| **k == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32).count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == LanceSplitKind::LANCE_SPLIT_FLAT as i32).count(), 1);
}

#[test]
fn huge_k_and_refine_factor_are_bounded_by_the_split() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    for s in splits(&plan) {
        let rows = lance_split_row_count(s.0);
        for (k, refine, defer) in [(1u64 << 40, 0u32, false), (10, u32::MAX, false), (10, u32::MAX, true), (u64::MAX, u32::MAX, true)] {
            let mut q = query("embedding", query_vector(3), k);
            q.q.nprobes = 1;
            q.q.refine_factor = refine;
            q.q.defer_refine = defer;
            let got = read_stream(search_split(&s, &q.raw()).unwrap()).unwrap();
            let n = got.iter().map(|b| b.num_rows()).sum::<usize>() as u64;
            assert!(n <= rows, "split of {rows} rows returned {n} (k {k}, refine {refine})");
            assert!(n >= 1);
        }
    }
}

#[test]
fn refine_of_a_row_id_not_in_the_snapshot_is_not_found() {
    // A candidate stream built by the host itself, naming a fragment the table does not have.
    use std::sync::Arc;
    let ds = Ds::open(&vectors_uri(), 0);
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("_distance", arrow_schema::DataType::Float32, true),
        arrow_schema::Field::new("_rowid", arrow_schema::DataType::UInt64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float32Array::from(vec![0.5f32, 0.7])),
            Arc::new(arrow::array::UInt64Array::from(vec![1u64, (999u64 << 32) | 5])),
        ],
    )
    .unwrap();
    let reader = arrow::record_batch::RecordBatchIterator::new(vec![Ok(batch)], schema);
    let mut stream = FFI_ArrowArrayStream::new(Box::new(reader));
    let mut q = query("embedding", query_vector(4), 2);
    let mut out = FFI_ArrowArrayStream::empty();
    assert_err(lance_dataset_refine_v2(ds.ptr(), &q.raw(), &mut stream, &mut out), LANCE_ERR_NOT_FOUND, "fragment 999");
    assert!(stream.release.is_none());
    assert!(out.release.is_none(), "out is not written on failure");
}

/// The documented trade-off of `refine_factor` on IVF_PQ: with the default of 1 the candidates
/// are the quantizer's top k, so true neighbours can be missing; a larger factor re-ranks more
/// candidates by exact distance and recovers them.
#[test]
fn refine_factor_trades_reads_for_recall_on_ivf_pq() {
    let ds = Ds::open(&vectors_uri(), 0);
    let k = 10usize;
    let seeds = [7i64, 91, 333, 808, 1200, 1701, 1999, 2050];
    let mut by_refine = Vec::new();
    for refine in [1u32, 5] {
        let mut total = 0.0;
        for seed in seeds {
            let qv = query_vector(seed);
            let truth = exact_top_k(&qv, k, l2, tk::vector_of, |_| true);
            let mut q = query("embedding", qv.clone(), k as u64);
            q.q.nprobes = 4;
            q.q.refine_factor = refine;
            let merged = distributed_search(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true, &mut q, k as u64);
            total += recall(&i64_column(&merged, "id"), &truth);
        }
        by_refine.push(total / seeds.len() as f64);
    }
    println!("IVF_PQ recall@10 with nprobes 4: refine 1 = {:.2}, refine 5 = {:.2}", by_refine[0], by_refine[1]);
    assert!(by_refine[1] >= by_refine[0], "{by_refine:?}");
    assert!(by_refine[1] >= 0.95, "refine 5 should find (nearly) every neighbour: {by_refine:?}");
}

fn search_batches(ds: &Ds, split: &SplitH, q: &LanceVectorQuery) -> Vec<RecordBatch> {
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_split_search_v2(ds.ptr(), split.0, q, &mut out), 0, "{}", last_message());
    read_stream(out).unwrap()
}

/// (query index, id, distance) rows of a search output (query index 0 without the column).
fn rows_by_query(batches: &[RecordBatch]) -> Vec<(i32, i64, f32)> {
    let ids = i64_column(batches, "id");
    let d = f32_column(batches, "_distance");
    let qi: Vec<i32> = batches
        .iter()
        .flat_map(|b| match b.column_by_name("query_index") {
            Some(c) => c.as_any().downcast_ref::<arrow::array::Int32Array>().unwrap().values().to_vec(),
            None => vec![0; b.num_rows()],
        })
        .collect();
    let mut v: Vec<(i32, i64, f32)> = qi.into_iter().zip(ids).zip(d).map(|((q, i), d)| (q, i, d)).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.total_cmp(&b.2)).then(a.1.cmp(&b.1)));
    v
}

/// Batch search (issue 20, item 1): 64 query vectors in one call per split give, per query,
/// what 64 single calls give — on index segments and flat splits — and the merge merges per
/// query.
#[test]
fn batch_search_equals_single_searches_per_query() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let all = splits(&plan);
    assert!(all.iter().any(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32));
    assert!(all.iter().any(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_FLAT as i32));
    let n = 64usize;
    let vectors: Vec<Vec<f32>> = (0..n as i64).map(|i| query_vector(i * 31 + 5)).collect();
    let k = 7u64;
    let mut batch = query("embedding", vectors.concat(), k);
    batch.q.nprobes = 4;
    let mut raw = batch.raw();
    raw.dimension = vectors[0].len();
    raw.num_queries = n as u64;
    let mut merged_inputs = Vec::new();
    let mut single_merged: Vec<Vec<FFI_ArrowArrayStream>> = (0..n).map(|_| Vec::new()).collect();
    for s in &all {
        let got = rows_by_query(&search_batches(&ds, s, &raw));
        let mut want = Vec::new();
        for (qi, v) in vectors.iter().enumerate() {
            let mut one = query("embedding", v.clone(), k);
            one.q.nprobes = 4;
            let r = one.raw();
            want.extend(rows_by_query(&search_batches(&ds, s, &r)).into_iter().map(|(_, id, d)| (qi as i32, id, d)));
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_search_v2(ds.ptr(), s.0, &r, &mut st), 0);
            single_merged[qi].push(st);
        }
        want.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.total_cmp(&b.2)).then(a.1.cmp(&b.1)));
        assert_eq!(got.len(), want.len(), "split kind {}", lance_split_kind(s.0));
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.0, g.1), (w.0, w.1), "split kind {}", lance_split_kind(s.0));
            assert!((g.2 - w.2).abs() <= 1e-4 * w.2.abs().max(1.0));
        }
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_search_v2(ds.ptr(), s.0, &raw, &mut st), 0);
        merged_inputs.push(st);
    }
    // The merge of batch results keeps k rows per query: each query's global top k.
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(merged_inputs.as_mut_ptr(), merged_inputs.len(), k, 0, &mut out), 0, "{}", last_message());
    let merged = rows_by_query(&read_stream(out).unwrap());
    assert_eq!(merged.len(), n * k as usize);
    for (qi, mut parts) in single_merged.into_iter().enumerate() {
        let mut o = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(parts.as_mut_ptr(), parts.len(), k, 0, &mut o), 0);
        let one: Vec<i64> = rows_by_query(&read_stream(o).unwrap()).into_iter().map(|r| r.1).collect();
        let from_batch: Vec<i64> = merged.iter().filter(|r| r.0 == qi as i32).map(|r| r.1).collect();
        assert_eq!(from_batch, one, "query {qi}");
    }
    // Bad batches.
    // (The caller's buffer holds dimension * num_queries values: a count beyond what the buffer
    // holds cannot be detected through C; an absurd count is refused before anything is read.)
    let mut bad = raw;
    bad.num_queries = 1 << 20;
    let mut st = FFI_ArrowArrayStream::empty();
    assert_err(lance_split_search_v2(ds.ptr(), all[0].0, &bad, &mut st), LANCE_ERR_INVALID_ARGUMENT, "maximum");
    let mut deferred = raw;
    deferred.defer_refine = true;
    assert_err(lance_split_search_v2(ds.ptr(), all[0].0, &deferred, &mut st), LANCE_ERR_NOT_SUPPORTED, "batch");
}

pub(crate) fn combine(parts: &[&SplitH]) -> Result<SplitH, (i32, String)> {
    let ptrs: Vec<*const LanceSplit> = parts.iter().map(|s| s.0 as *const _).collect();
    let mut out = std::ptr::null_mut();
    match lance_splits_combine(ptrs.as_ptr(), ptrs.len(), &mut out) {
        0 => Ok(SplitH(out)),
        rc => Err((rc, last_message())),
    }
}

fn segment_uuids(s: &SplitH) -> Vec<[u8; 16]> {
    let mut n = usize::MAX;
    let p = lance_split_segment_uuids(s.0, &mut n);
    if n == 0 {
        assert!(p.is_null());
        return vec![];
    }
    unsafe { std::slice::from_raw_parts(p, 16 * n) }.chunks(16).map(|c| c.try_into().unwrap()).collect()
}

fn rowid_distance(batches: &[RecordBatch]) -> Vec<(u64, f32)> {
    u64_column(batches, "_rowid").into_iter().zip(f32_column(batches, "_distance")).collect()
}

#[test]
fn combined_segment_splits_search_in_one_plan() {
    let ds = Ds::open(&vectors_uri(), 0);
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let ss = splits(&plan);
    let is = |s: &SplitH, kind: LanceSplitKind| lance_split_kind(s.0) == kind as i32;
    let segs: Vec<&SplitH> = ss.iter().filter(|s| is(s, LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT)).collect();
    let flat: Vec<&SplitH> = ss.iter().filter(|s| is(s, LanceSplitKind::LANCE_SPLIT_FLAT)).collect();
    assert_eq!(segs.len(), 2, "the fixture has two segments");
    assert!(!flat.is_empty());

    // The combined split travels as bytes and carries both segments and all their fragments.
    let both = ship(&combine(&segs).unwrap());
    assert_eq!(lance_split_kind(both.0), LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32);
    let want: Vec<[u8; 16]> = segs.iter().flat_map(|s| segment_uuids(s)).collect();
    assert_eq!(segment_uuids(&both), want);
    assert_eq!(frag_ids(&both), segs.iter().flat_map(|s| frag_ids(s)).collect::<Vec<_>>());
    assert_eq!(lance_split_row_count(both.0), segs.iter().map(|s| lance_split_row_count(s.0)).sum::<u64>());
    let mut u = [0u8; 16];
    assert_eq!(lance_split_segment_uuid(both.0, u.as_mut_ptr()), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(last_message().contains("lance_split_segment_uuids"), "{}", last_message());
    assert_eq!(segment_uuids(flat[0]), Vec::<[u8; 16]>::new());
    // NULL arguments: NULL back, the last error names the argument, nothing written.
    let mut n = 7usize;
    assert!(lance_split_segment_uuids(std::ptr::null(), &mut n).is_null());
    assert!(last_message().contains("split"), "{}", last_message());
    assert_eq!(n, 7);
    assert!(lance_split_segment_uuids(both.0, std::ptr::null_mut()).is_null());
    assert!(last_message().contains("out_count"), "{}", last_message());

    for seed in [7i64, 321, 1777] {
        let mut q = query("embedding", query_vector(seed), 10);
        q.q.nprobes = 2;
        // Deferred re-rank: the combined split returns the same 40 candidates as merging the
        // two segment splits' candidates.
        q.q.defer_refine = true;
        q.q.refine_factor = 4;
        let raw = q.raw();
        let mut apart: Vec<FFI_ArrowArrayStream> =
            segs.iter().map(|s| search_split(&ship(s), &raw).unwrap()).collect();
        let mut merged = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(apart.as_mut_ptr(), apart.len(), 40, 0, &mut merged), 0, "{}", last_message());
        let apart = rowid_distance(&read_stream(merged).unwrap());
        let together = rowid_distance(&read_stream(search_split(&both, &raw).unwrap()).unwrap());
        assert_eq!(together.len(), 40);
        let ids = |v: &[(u64, f32)]| v.iter().map(|p| p.0).collect::<BTreeSet<_>>();
        assert_eq!(ids(&together), ids(&apart), "query {seed}");

        // Re-ranked in the split: k x refine x segments candidates re-ranked, i.e. the same
        // rows as the deferred candidates of refine factor 2 re-ranked globally.
        q.q.refine_factor = 2;
        let raw = q.raw();
        let mut candidates = search_split(&both, &raw).unwrap();
        let mut refined = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_refine_v2(ds.ptr(), &raw, &mut candidates, &mut refined), 0, "{}", last_message());
        let global = rowid_distance(&read_stream(refined).unwrap());
        q.q.defer_refine = false;
        q.q.refine_factor = 0;
        let in_split = rowid_distance(&read_stream(search_split(&both, &q.raw()).unwrap()).unwrap());
        assert_eq!(in_split.len(), 10);
        assert_eq!(ids(&in_split), ids(&global[..10]), "query {seed}");
        for ((_, a), (_, b)) in in_split.iter().zip(&global) {
            assert!((a - b).abs() <= 1e-4 * a.max(1.0), "exact distances differ: {a} vs {b}");
        }
    }

    // Combining refuses what cannot run as one split, with a message naming the split.
    let e = combine(&[segs[0], flat[0]]).unwrap_err();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(e.1.contains("split 1") && e.1.contains("kind"), "{}", e.1);
    let e = combine(&[segs[0], segs[1], segs[0]]).unwrap_err();
    assert!(e.1.contains("split 2 repeats"), "{}", e.1);
    assert!(combine(&[]).unwrap_err().1.contains("no splits"));
    let mut out = std::ptr::null_mut();
    let with_null = [segs[0].0 as *const LanceSplit, std::ptr::null()];
    assert_eq!(lance_splits_combine(with_null.as_ptr(), 2, &mut out), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(last_message().contains("split 1 is NULL"), "{}", last_message());
    assert_eq!(lance_splits_combine(std::ptr::null(), 2, &mut out), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(lance_splits_combine(with_null.as_ptr(), 1, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(out.is_null(), "nothing written on failure");
    // A split of another snapshot.
    let other = Ds::open(&vectors_uri(), 1);
    let p2 = plan_vector(&other, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let other_ss = splits(&p2);
    if lance_split_version(other_ss[0].0) != lance_split_version(segs[0].0) {
        let e = combine(&[segs[0], &other_ss[0]]).unwrap_err();
        assert!(e.1.contains("snapshot"), "{}", e.1);
    }
}

#[test]
fn combined_scan_and_flat_splits_return_what_their_parts_return() {
    let ds = Ds::open(&vectors_uri(), 0);
    let mut p = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan(ds.ptr(), 0, &mut p), 0);
    let plan = Plan(p);
    let ss = splits(&plan);
    assert!(ss.len() >= 3);
    // A worker that got splits 2, 0 and 1 scans them as one split, in that order.
    let order = [&ss[2], &ss[0], &ss[1]];
    let one = ship(&combine(&order).unwrap());
    let scan_ids = |s: &SplitH| {
        let cols = cstrs(&["id"]);
        let mut o = default_opts();
        o.columns = cols.ptrs.as_ptr();
        o.num_columns = 1;
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_scan_v2(ds.ptr(), s.0, &o, &mut stream), 0, "{}", last_message());
        i64_column(&read_stream(stream).unwrap(), "id")
    };
    let apart: Vec<i64> = order.iter().flat_map(|s| scan_ids(s)).collect();
    assert_eq!(scan_ids(&one), apart);
    let mut n = 0u64;
    assert_eq!(lance_split_count_rows_v2(ds.ptr(), one.0, std::ptr::null(), &mut n, std::ptr::null_mut()), 0, "{}", last_message());
    assert_eq!(n, apart.len() as u64);

    // Flat splits (one per uncovered fragment, use_index false): combined = merged.
    let vplan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, false).unwrap();
    let flats = splits(&vplan);
    assert!(flats.len() >= 2);
    let all = ship(&combine(&flats.iter().collect::<Vec<_>>()).unwrap());
    let mut q = query("embedding", query_vector(1200), 10);
    let raw = q.raw();
    let mut apart: Vec<FFI_ArrowArrayStream> = flats.iter().map(|s| search_split(s, &raw).unwrap()).collect();
    let mut merged = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(apart.as_mut_ptr(), apart.len(), 10, 0, &mut merged), 0);
    let apart = rowid_distance(&read_stream(merged).unwrap());
    let together = rowid_distance(&read_stream(search_split(&all, &raw).unwrap()).unwrap());
    assert_eq!(together.iter().map(|p| p.0).collect::<Vec<_>>(), apart.iter().map(|p| p.0).collect::<Vec<_>>());
}
