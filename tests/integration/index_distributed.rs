//! Distributed index builds through the C ABI: a vector model trained once, build splits as
//! bytes, one segment per split built from bytes alone, one commit; full-text and scalar
//! indexes the same way; appended fragments indexed with the kept model; progress reports,
//! cancellation; damaged, foreign or mixed bytes refused with nothing committed; the files of a
//! segment never committed removed by cleanup. pylance checks recall and answers in
//! tests/python/test_index_build.py (worker processes there).

use std::sync::Mutex;

use lance_host::ffi::dataset::*;
use lance_host::ffi::fts::lance_dataset_plan_fts;
use lance_host::ffi::index_build::*;
use lance_host::ffi::index_segments::*;
use lance_host::ffi::maintenance::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::lance_dataset_explain_scan_v2;
use lance_host::ffi::session::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;
use crate::engine::take_string;
use crate::index_build::{batch, indexes, kinds, table, vector_params, write, ROWS};

fn bytes_vec(p: *mut u8, n: usize) -> Vec<u8> {
    let v = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
    lance_bytes_free(p, n);
    v
}

fn list_vec(list: *mut LanceBytesList) -> Vec<Vec<u8>> {
    let out = (0..lance_bytes_list_count(list))
        .map(|i| {
            let mut n = 0usize;
            let p = lance_bytes_list_get(list, i, &mut n);
            unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
        })
        .collect();
    lance_bytes_list_free(list);
    out
}

fn train(ds: &Ds, column: &str, p: &LanceVectorIndexParams) -> Result<Vec<u8>, (i32, String)> {
    let c = cstr(column);
    let (mut out, mut n) = (std::ptr::null_mut(), 0usize);
    match lance_dataset_train_vector_index(ds.ptr(), c.as_ptr(), p, &mut out, &mut n, std::ptr::null_mut()) {
        0 => Ok(bytes_vec(out, n)),
        rc => Err((rc, last_message())),
    }
}

fn plan_params(num_splits: u32, unindexed_only: bool) -> LanceIndexBuildPlanParams {
    let mut p = std::mem::MaybeUninit::<LanceIndexBuildPlanParams>::uninit();
    assert_eq!(lance_index_build_plan_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceIndexBuildPlanParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    assert_eq!((p.num_splits, p.unindexed_only), (0, 0), "defaults");
    p.num_splits = num_splits;
    p.unindexed_only = unindexed_only as u8;
    p
}

fn plan_vector(ds: &Ds, name: Option<&str>, replace: bool, model: &[u8], plan: &LanceIndexBuildPlanParams) -> Result<Vec<Vec<u8>>, (i32, String)> {
    let c = cstr("emb");
    let n = name.map(cstr);
    let mut out = std::ptr::null_mut();
    match lance_dataset_plan_vector_index_build(ds.ptr(), c.as_ptr(), n.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()), replace, model.as_ptr(), model.len(), plan, &mut out) {
        0 => Ok(list_vec(out)),
        rc => Err((rc, last_message())),
    }
}

fn execute(ds: &Ds, task: &[u8]) -> Result<Vec<u8>, (i32, String)> {
    let (mut out, mut n) = (std::ptr::null_mut(), 0usize);
    match lance_index_build_task_execute(ds.ptr(), task.as_ptr(), task.len(), &mut out, &mut n, std::ptr::null_mut()) {
        0 => Ok(bytes_vec(out, n)),
        rc => Err((rc, last_message())),
    }
}

fn commit(ds: &Ds, segments: &[Vec<u8>], merge: bool) -> Result<Ds, (i32, String)> {
    let ptrs: Vec<*const u8> = segments.iter().map(|s| s.as_ptr()).collect();
    let lens: Vec<usize> = segments.iter().map(Vec::len).collect();
    let mut out = std::ptr::null_mut();
    match lance_dataset_commit_index_build(ds.ptr(), ptrs.as_ptr(), lens.as_ptr(), segments.len(), merge, &mut out) {
        0 => Ok(Ds(out)),
        rc => Err((rc, last_message())),
    }
}

/// Each task built on a handle of its own, as a worker process would.
fn build_all(uri: &str, tasks: &[Vec<u8>]) -> Vec<Vec<u8>> {
    tasks.iter().map(|t| execute(&Ds::open(uri, 0), t).unwrap_or_else(|e| panic!("{e:?}"))).collect()
}

fn vector_kinds(ds: &Ds) -> Vec<i32> {
    let emb = cstr("emb");
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_vector_search(ds.ptr(), emb.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan), 0, "{}", last_message());
    kinds(plan)
}

fn latest_version(uri: &str) -> u64 {
    lance_dataset_version(Ds::open(uri, 0).ptr())
}

fn index_dirs(uri: &str) -> usize {
    std::fs::read_dir(std::path::Path::new(uri).join("_indices")).map(|d| d.count()).unwrap_or(0)
}

fn flip(b: &[u8], at: usize) -> Vec<u8> {
    let mut d = b.to_vec();
    d[at] ^= 0x40;
    d
}

const SEGMENT: i32 = LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32;

#[test]
fn a_vector_index_is_trained_once_built_per_split_and_committed_once() {
    let (uri, v1) = table(); // 3 fragments of 400 rows
    let params = vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ);
    let model = train(&v1, "emb", &params).unwrap();
    assert_eq!(latest_version(&uri), 1, "training commits nothing");
    let tasks = plan_vector(&v1, Some("emb_idx"), false, &model, &plan_params(2, false)).unwrap();
    assert_eq!(tasks.len(), 2, "3 fragments cut into 2 splits");
    let segments = build_all(&uri, &tasks);
    assert_eq!(latest_version(&uri), 1, "workers commit nothing");
    let v2 = commit(&v1, &segments, false).unwrap();
    assert_eq!(lance_dataset_version(v2.ptr()), 2, "one version for the whole build");
    let found = indexes(&v2);
    assert_eq!(found.iter().filter(|(n, c, _)| n == "emb_idx" && c == "emb").count(), 1, "{found:?}");
    assert_eq!(vector_kinds(&v2), vec![SEGMENT; 2], "one split per built segment, no flat split");

    // rebuilt with replace over 3 splits, merged into one segment at commit
    let tasks = plan_vector(&v2, Some("emb_idx"), true, &model, &plan_params(0, false)).unwrap();
    assert_eq!(tasks.len(), 3, "one split per fragment by default");
    let v3 = commit(&v2, &build_all(&uri, &tasks), true).unwrap();
    assert_eq!(vector_kinds(&v3), vec![SEGMENT], "merged into one segment");
    assert_eq!(lance_dataset_version(v3.ptr()), 3);

    // every other vector kind builds the same way (SQ kinds train their bounds per segment)
    let mut latest = v3;
    for (kind, name) in [
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_FLAT, "d_flat"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_SQ, "d_sq"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_HNSW_SQ, "d_hnsw_sq"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_HNSW_PQ, "d_hnsw_pq"),
    ] {
        let model = train(&latest, "emb", &vector_params(kind)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let tasks = plan_vector(&latest, Some(name), false, &model, &plan_params(2, false)).unwrap();
        latest = commit(&latest, &build_all(&uri, &tasks), false).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(indexes(&latest).iter().any(|(n, _, _)| n == name), "{name}");
    }
}

#[test]
fn bad_model_task_and_segment_bytes_are_refused_and_commit_nothing() {
    let (uri, v1) = table();
    let (other_uri, other) = table();
    let params = vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ);
    let model = train(&v1, "emb", &params).unwrap();
    let foreign_model = train(&other, "emb", &params).unwrap();

    // training: bad columns and settings
    for (column, edit, needle) in [("nope", 0, "nope"), ("id", 0, "fixed-size list"), ("emb", 1, "num_partitions"), ("emb", 2, "divide the dimension"), ("tags", 0, "list of")] {
        let mut p = params;
        match edit {
            1 => p.num_partitions = (ROWS + 1) as u32,
            2 => p.num_sub_vectors = 5,
            _ => {}
        }
        let err = train(&v1, column, &p).unwrap_err();
        assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{column}: {}", err.1);
        assert!(err.1.contains(needle), "{column}: {}", err.1);
    }
    // planning: damaged, foreign, truncated model bytes
    let plan = plan_params(0, false);
    let err = plan_vector(&v1, None, false, &flip(&model, 20), &plan).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_CORRUPT as i32, "{}", err.1);
    let err = plan_vector(&v1, None, false, &model[..model.len() / 2], &plan).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_CORRUPT as i32, "{}", err.1);
    let err = plan_vector(&v1, None, false, &foreign_model, &plan).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains(&other_uri), "{err:?}");
    let mut wrong_format = model.clone();
    wrong_format[4] = 9;
    assert_eq!(plan_vector(&v1, None, false, &wrong_format, &plan).unwrap_err().0, LANCE_ERR_NOT_SUPPORTED as i32);
    let err = plan_vector(&v1, Some(""), false, &model, &plan).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);

    // tasks: damaged, of another table
    let tasks = plan_vector(&v1, Some("emb_idx"), false, &model, &plan).unwrap();
    assert_eq!(execute(&v1, &flip(&tasks[0], 12)).unwrap_err().0, LANCE_ERR_CORRUPT as i32);
    let err = execute(&other, &tasks[0]).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("not of"), "{err:?}");

    // segments: damaged, none, given twice, of two plans, of another table
    let segments = build_all(&uri, &tasks);
    let other_plan = plan_vector(&v1, Some("emb_idx"), false, &model, &plan).unwrap();
    let stray = execute(&v1, &other_plan[1]).unwrap();
    let mut damaged = segments.clone();
    damaged[1] = flip(&damaged[1], 30);
    let err = commit(&v1, &damaged, false).unwrap_err();
    assert!(err.0 == LANCE_ERR_CORRUPT as i32 && err.1.contains("segments[1]"), "{err:?}");
    assert_eq!(commit(&v1, &[], false).unwrap_err().0, LANCE_ERR_INVALID_ARGUMENT as i32);
    let err = commit(&v1, &[segments[0].clone(), segments[0].clone()], false).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("twice"), "{err:?}");
    let err = commit(&v1, &[segments[0].clone(), stray], false).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("another build plan"), "{err:?}");
    let err = commit(&other, &segments, false).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    assert_eq!(latest_version(&uri), 1, "no failure committed anything");
    assert_eq!(latest_version(&other_uri), 1);

    // the files of segments never committed go with a cleanup; committed ones stay
    let v2 = commit(&v1, &segments, false).unwrap();
    let before = index_dirs(&uri);
    assert_eq!(before, 4, "3 committed segment directories and the stray one");
    let mut removed = 0u64;
    assert_eq!(lance_dataset_cleanup(v2.ptr(), 0, true, std::ptr::null_mut(), &mut removed), 0, "{}", last_message());
    assert_eq!(index_dirs(&uri), 3, "only the committed segments' files remain");
    assert_eq!(vector_kinds(&Ds::open(&uri, 0)), vec![SEGMENT; 3], "the index still reads");

    // an existing name without replace; nothing to do for unindexed_only
    let err = plan_vector(&v2, Some("emb_idx"), false, &model, &plan).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("already exists"), "{err:?}");
    assert!(plan_vector(&v2, Some("emb_idx"), false, &model, &plan_params(0, true)).unwrap().is_empty());
    // unindexed_only into an existing index of another kind or column: refused, nothing planned
    let sq = train(&v2, "emb", &vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_SQ)).unwrap();
    let err = plan_vector(&v2, Some("emb_idx"), false, &sq, &plan_params(0, true)).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("IVF_PQ index") && err.1.contains("cannot join"), "{err:?}");
    let mut p = std::mem::MaybeUninit::<LanceScalarIndexParams>::uninit();
    assert_eq!(lance_scalar_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceScalarIndexParams>()), 0);
    let p = unsafe { p.assume_init() };
    let (id, name) = (cstr("id"), cstr("emb_idx"));
    let mut out = std::ptr::null_mut();
    assert_err(
        lance_dataset_plan_scalar_index_build(v2.ptr(), id.as_ptr(), name.as_ptr(), false, &p, &plan_params(0, true), &mut out),
        LANCE_ERR_INVALID_ARGUMENT,
        "on column 'emb'",
    );
    assert!(out.is_null());
    assert_eq!(latest_version(&uri), 2);
}

#[test]
fn appended_fragments_are_indexed_with_the_kept_model() {
    let (uri, v1) = table();
    let model = train(&v1, "emb", &vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ)).unwrap();
    let tasks = plan_vector(&v1, None, false, &model, &plan_params(1, false)).unwrap();
    assert_eq!(tasks.len(), 1);
    let v2 = commit(&v1, &build_all(&uri, &tasks), false).unwrap();
    assert_eq!(indexes(&v2).iter().filter(|(n, _, _)| n == "emb_idx").count(), 1, "Lance's default name");
    let v3 = write(&uri, Some(&v2), batch(ROWS, 800)); // two new fragments
    let flat = LanceSplitKind::LANCE_SPLIT_FLAT as i32;
    assert!(vector_kinds(&v3).contains(&flat));
    let tasks = plan_vector(&v3, None, false, &model, &plan_params(0, true)).unwrap();
    assert_eq!(tasks.len(), 2, "only the two appended fragments");
    let v4 = commit(&v3, &build_all(&uri, &tasks), false).unwrap();
    assert_eq!(vector_kinds(&v4), vec![SEGMENT; 3], "the first segment and the two new ones, no flat split");
}

#[test]
fn full_text_and_scalar_indexes_build_on_workers_too() {
    let (uri, v1) = table();
    let c = cstr("text");
    let mut ip = std::mem::MaybeUninit::<LanceInvertedIndexParams>::uninit();
    assert_eq!(lance_inverted_index_params_init_v2(ip.as_mut_ptr(), std::mem::size_of::<LanceInvertedIndexParams>()), 0);
    let mut ip = unsafe { ip.assume_init() };
    ip.with_position = 1;
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_inverted_index_build(v1.ptr(), c.as_ptr(), std::ptr::null(), false, &ip, &plan_params(3, false), &mut out), 0, "{}", last_message());
    let tasks = list_vec(out);
    assert_eq!(tasks.len(), 3);
    let v2 = commit(&v1, &build_all(&uri, &tasks), false).unwrap();
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_fts(v2.ptr(), c.as_ptr(), 0, &mut plan), 0, "{}", last_message());
    assert_eq!(kinds(plan), vec![LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32; 3], "one full-text segment per split");
    // a non-string column
    let id = cstr("id");
    assert_err(
        lance_dataset_plan_inverted_index_build(v2.ptr(), id.as_ptr(), std::ptr::null(), false, &ip, std::ptr::null(), &mut out),
        LANCE_ERR_INVALID_ARGUMENT,
        "string column",
    );

    let scalar = |ds: &Ds, column: &str, kind: LanceScalarIndexType, merge: bool| -> Result<Ds, (i32, String)> {
        let mut p = std::mem::MaybeUninit::<LanceScalarIndexParams>::uninit();
        assert_eq!(lance_scalar_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceScalarIndexParams>()), 0);
        let mut p = unsafe { p.assume_init() };
        p.index_type = kind as i32;
        let col = cstr(column);
        let mut out = std::ptr::null_mut();
        match lance_dataset_plan_scalar_index_build(ds.ptr(), col.as_ptr(), std::ptr::null(), false, &p, std::ptr::null(), &mut out) {
            0 => commit(ds, &build_all(&uri, &list_vec(out)), merge),
            rc => Err((rc, last_message())),
        }
    };
    let v3 = scalar(&v2, "id", LanceScalarIndexType::LANCE_SCALAR_INDEX_BTREE, false).unwrap_or_else(|e| panic!("{e:?}"));
    let v4 = scalar(&v3, "category", LanceScalarIndexType::LANCE_SCALAR_INDEX_BITMAP, false).unwrap_or_else(|e| panic!("{e:?}"));
    // merged at commit: one segment each (replacing the unmerged ones)
    let v5 = scalar(&v4, "tags", LanceScalarIndexType::LANCE_SCALAR_INDEX_LABEL_LIST, true).unwrap_or_else(|e| panic!("{e:?}"));
    let err = scalar(&v5, "tags", LanceScalarIndexType::LANCE_SCALAR_INDEX_BTREE, false).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("BTREE"), "{err:?}");
    for (ds, filter) in [(&v5, "id < 100"), (&v5, "id >= 1000"), (&v5, "category = 'red'"), (&v5, "array_has_any(tags, ['t1'])")] {
        let f = cstr(filter);
        let cols = cstrs(&["id"]);
        let mut o = default_opts();
        o.filter_sql = f.as_ptr();
        o.columns = cols.ptrs.as_ptr();
        o.num_columns = 1;
        let mut out = std::ptr::null_mut();
        assert_eq!(lance_dataset_explain_scan_v2(ds.ptr(), &o, &mut out), 0, "{}", last_message());
        let plan = take_string(out);
        assert!(plan.contains("ScalarIndexQuery"), "{filter}: {plan}");
        let (mut with, mut without) = (0u64, 0u64);
        assert_eq!(lance_dataset_count_rows_where_v2(ds.ptr(), f.as_ptr(), &mut with, std::ptr::null_mut()), 0, "{filter}: {}", last_message());
        assert_eq!(lance_dataset_count_rows_where_v2(v1.ptr(), f.as_ptr(), &mut without, std::ptr::null_mut()), 0);
        assert_eq!(with, without, "{filter}");
        assert!(with > 0, "{filter}");
    }
}

type Reports = Mutex<Vec<(String, u64, u64, String)>>;

unsafe extern "C" fn record(stage: *const std::ffi::c_char, done: u64, total: u64, unit: *const std::ffi::c_char, user: *mut std::ffi::c_void) {
    let reports = unsafe { &*(user as *const Reports) };
    let s = |p| unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned();
    reports.lock().unwrap().push((s(stage), done, total, s(unit)));
}

#[test]
fn builds_report_progress_and_stop_when_cancelled() {
    let (uri, v1) = table();
    let reports: Reports = Mutex::new(Vec::new());
    let ctx = lance_call_context_new(0);
    assert_eq!(lance_call_context_set_progress(ctx, Some(record), &reports as *const Reports as *mut _), 0);
    assert_eq!(lance_call_context_enter(ctx), 0);
    let model = train(&v1, "emb", &vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ)).unwrap();
    let tasks = plan_vector(&v1, None, false, &model, &plan_params(1, false)).unwrap();
    let segment = execute(&v1, &tasks[0]).unwrap();
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    let seen = std::mem::take(&mut *reports.lock().unwrap());
    let stages: std::collections::BTreeSet<&str> = seen.iter().map(|r| r.0.as_str()).collect();
    assert!(stages.len() >= 2, "training and building report stages: {seen:?}");
    for r in &seen {
        assert!(r.2 == 0 || r.1 <= r.2, "done never above total: {r:?}");
    }
    // unbound: no more reports
    let _ = execute(&v1, &tasks[0]).unwrap();
    assert!(reports.lock().unwrap().is_empty());
    assert_eq!(lance_call_context_set_progress(std::ptr::null(), Some(record), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT as i32);

    // a cancelled context stops a build and a commit; nothing is committed
    assert_eq!(lance_call_context_set_progress(ctx, None, std::ptr::null_mut()), 0);
    assert_eq!(lance_call_context_cancel(ctx), 0);
    assert_eq!(lance_call_context_enter(ctx), 0);
    let err = execute(&v1, &tasks[0]).unwrap_err();
    let committed = commit(&v1, &[segment.clone()], false);
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    lance_call_context_free(ctx);
    assert_eq!(err.0, LANCE_ERR_CANCELLED as i32, "{}", err.1);
    assert_eq!(committed.unwrap_err().0, LANCE_ERR_CANCELLED as i32);
    assert_eq!(latest_version(&uri), 1);
    assert_eq!(lance_dataset_version(commit(&v1, &[segment], false).unwrap().ptr()), 2, "the segment commits once unbound");
}

#[test]
fn builds_on_object_storage_report_their_reads() {
    use lance_host::ffi::handles::LanceIoStats;
    let s = crate::s3::shared();
    let table = crate::s3::private_vectors_table("index-build-io");
    let ds = crate::s3::open_s3(&table, &s.endpoint).unwrap();
    let io = || {
        let mut io: LanceIoStats = unsafe { std::mem::zeroed() };
        io.struct_size = std::mem::size_of::<LanceIoStats>();
        io
    };
    let mut p = vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_FLAT);
    p.num_partitions = 2;
    let c = cstr("embedding");
    let (mut out, mut n, mut train_io) = (std::ptr::null_mut(), 0usize, io());
    assert_eq!(lance_dataset_train_vector_index(ds.ptr(), c.as_ptr(), &p, &mut out, &mut n, &mut train_io), 0, "{}", last_message());
    let model = bytes_vec(out, n);
    assert!(train_io.read_requests > 0 && train_io.read_bytes > 0, "training read the vectors: {train_io:?}");
    let name = cstr("dist_flat");
    let mut list = std::ptr::null_mut();
    assert_eq!(
        lance_dataset_plan_vector_index_build(ds.ptr(), c.as_ptr(), name.as_ptr(), false, model.as_ptr(), model.len(), std::ptr::null(), &mut list),
        0,
        "{}",
        last_message()
    );
    let tasks = list_vec(list);
    let mut segments = Vec::new();
    let mut total = 0u64;
    for t in &tasks {
        let (mut out, mut n, mut build_io) = (std::ptr::null_mut(), 0usize, io());
        assert_eq!(lance_index_build_task_execute(ds.ptr(), t.as_ptr(), t.len(), &mut out, &mut n, &mut build_io), 0, "{}", last_message());
        segments.push(bytes_vec(out, n));
        // the vectors training read may come from the session's data cache now
        assert!(build_io.read_requests + build_io.data_cache_hits > 0, "{build_io:?}");
        total += build_io.read_bytes + build_io.data_cache_hit_bytes;
    }
    assert!(total > 0);
    let built = commit(&ds, &segments, false).unwrap();
    assert_eq!(lance_dataset_version(built.ptr()), lance_dataset_version(ds.ptr()) + 1);
    assert!(indexes(&built).iter().any(|(n, c, _)| n == "dist_flat" && c == "embedding"));
}

#[test]
fn shipped_segments_are_checked_before_their_commit() {
    // Segments are bytes a host hands to the coordinator: a segment whose files are gone (a
    // worker's cleanup, an abort) or one the table already holds must not become (part of) an
    // index the table points at.
    let (uri, v1) = table();
    let mut p = std::mem::MaybeUninit::<LanceScalarIndexParams>::uninit();
    assert_eq!(lance_scalar_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceScalarIndexParams>()), 0);
    let p = unsafe { p.assume_init() };
    let col = cstr("id");
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scalar_index_build(v1.ptr(), col.as_ptr(), std::ptr::null(), false, &p, &plan_params(2, false), &mut out), 0, "{}", last_message());
    let segments = build_all(&uri, &list_vec(out));
    assert_eq!(segments.len(), 2);
    // one segment's directory removed before the commit
    let dirs_before: Vec<_> = std::fs::read_dir(std::path::Path::new(&uri).join("_indices")).unwrap().map(|e| e.unwrap().path()).collect();
    let victim = dirs_before.iter().max_by_key(|d| std::fs::metadata(d).unwrap().modified().unwrap()).unwrap().clone();
    let saved = std::path::Path::new(&uri).join("saved-segment");
    std::fs::rename(&victim, &saved).unwrap();
    let err = commit(&v1, &segments, false).err().expect("a segment without its files is refused");
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    assert!(err.1.contains("is refused") && err.1.contains("no files"), "{}", err.1);
    assert_eq!(latest_version(&uri), lance_dataset_version(v1.ptr()), "nothing committed");
    std::fs::rename(&saved, &victim).unwrap();
    // the segments commit; the same bytes again are refused: the table holds them already
    let v2 = commit(&v1, &segments, false).unwrap();
    let err = commit(&v2, &segments, false).err().expect("segments the table holds are refused");
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("already an index of the table"), "{err:?}");
    assert_eq!(latest_version(&uri), lance_dataset_version(v2.ptr()));
}
