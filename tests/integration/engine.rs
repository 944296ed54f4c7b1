//! What an engine's planner and executor need beyond rows: exact counts (dataset and split,
//! with and without filters), planner statistics, explain, cancellation and deadlines — on the
//! testkit's `vectors` table (deletions, a BTREE on `id`, two index segments, an unindexed tail).

use std::ffi::{c_char, CStr};
use std::time::{Duration, Instant};

use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::dataset::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::index::*;
use lance_host::ffi::session::*;
use lance_host::ffi::take::*;
use lance_host::LanceErrorCode::*;
use lance_host_testkit as tk;

use crate::common::*;
use crate::vector::{plan_vector, query, query_vector, splits, vectors_uri};

fn count_where(ds: &Ds, filter: Option<&str>) -> Result<(u64, LanceIoStats), (i32, String)> {
    let f = filter.map(cstr);
    let mut n = 0u64;
    let mut io = LanceIoStats::default();
    match lance_dataset_count_rows_where_v2(ds.ptr(), f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()), &mut n, &mut io) {
        0 => Ok((n, io)),
        code => Err((code, last_message())),
    }
}

fn split_count(ds: &Ds, split: *const LanceSplit, filter: Option<&str>) -> Result<u64, (i32, String)> {
    let f = filter.map(cstr);
    let mut n = 0u64;
    match lance_split_count_rows_v2(ds.ptr(), split, f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()), &mut n, std::ptr::null_mut()) {
        0 => Ok(n),
        code => Err((code, last_message())),
    }
}

fn scanned(ds: &Ds, filter: Option<&str>, fragment: Option<u64>) -> usize {
    let f = filter.map(cstr);
    let cols = cstrs(&["id"]);
    let frag = fragment.map(|f| [f]);
    let mut o = default_opts();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 1;
    if let Some(f) = &f {
        o.filter_sql = f.as_ptr();
    }
    if let Some(frag) = &frag {
        o.fragment_ids = frag.as_ptr();
        o.num_fragment_ids = 1;
    }
    total_rows(&scan(ds, &o).unwrap())
}

const FILTERS: [&str; 5] = [
    "id < 500",                                // BTREE
    "id >= 1000 AND id < 1600",                // BTREE range
    "category = 'rare'",                       // no index
    "id % 3 = 0",                              // no index can answer it
    "id < 700 AND category <> 'rare'",         // BTREE + residual
];

#[test]
fn counts_equal_scans_for_the_table_every_split_and_filters() {
    let ds = Ds::open(&vectors_uri(), 0);
    let (all, io) = count_where(&ds, None).unwrap();
    assert_eq!(all as usize, scanned(&ds, None, None));
    assert_eq!(all, fixture().facts.get_u64("vectors.rows"));
    assert_eq!(io.read_requests, 0, "a local table reports no requests");
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan(ds.ptr(), 0, &mut plan), 0);
    let plan = crate::vector::Plan(plan);
    let scan_splits = splits(&plan);
    assert!(scan_splits.len() >= 5);
    let mut sum = 0;
    for s in &scan_splits {
        let n = split_count(&ds, s.0, None).unwrap();
        let frags = crate::vector::frag_ids(s);
        let rows: usize = frags.iter().map(|f| scanned(&ds, None, Some(*f))).sum();
        assert_eq!(n as usize, rows, "split over fragments {frags:?}");
        sum += n;
    }
    assert_eq!(sum, all, "split counts do not add up to the table's count");
    for filter in FILTERS {
        let (n, _) = count_where(&ds, Some(filter)).unwrap();
        assert_eq!(n as usize, scanned(&ds, Some(filter), None), "filter {filter}");
        assert!(n > 0 && n < all, "filter {filter} selects {n} of {all}: not a useful check");
        let by_split: u64 = scan_splits.iter().map(|s| split_count(&ds, s.0, Some(filter)).unwrap()).sum();
        assert_eq!(by_split, n, "filter {filter}: split counts");
    }
    // Bad input.
    let e = count_where(&ds, Some("  ")).unwrap_err();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{e:?}");
    let e = count_where(&ds, Some("no_such_column > 1")).unwrap_err();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{e:?}");
    assert!(e.1.contains("no_such_column"), "{e:?}");
    let mut n = 0u64;
    assert_err(lance_dataset_count_rows_where_v2(std::ptr::null(), std::ptr::null(), &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    assert_err(lance_dataset_count_rows_where_v2(ds.ptr(), std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    let bad: [u8; 3] = [0xc3, 0x28, 0];
    assert_err(lance_dataset_count_rows_where_v2(ds.ptr(), bad.as_ptr() as *const c_char, &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "UTF-8");
    assert_err(lance_split_count_rows_v2(ds.ptr(), std::ptr::null(), std::ptr::null(), &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "split");
    let people = Ds::open(&people_uri(), 0);
    assert_err(lance_split_count_rows_v2(people.ptr(), scan_splits[0].0, std::ptr::null(), &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "belongs to table");
}

#[test]
fn statistics_agree_with_scans_and_files() {
    let uri = vectors_uri();
    let ds = Ds::open(&uri, 0);
    let mut st = std::ptr::null_mut();
    let mut io = LanceIoStats::default();
    assert_eq!(lance_dataset_statistics_v2(ds.ptr(), &mut st, &mut io), 0, "{}", last_message());
    let nf = lance_table_stats_fragment_count(st);
    assert_eq!(nf as u64, fixture().facts.get_u64("vectors.fragments"));
    let mut total_bytes = 0u64;
    let mut physical = 0u64;
    for i in 0..nf {
        let mut f = LanceFragmentStats::default();
        assert_eq!(lance_table_stats_fragment_v2(st, i, &mut f), 0);
        assert!(f.has_bytes_on_disk && f.bytes_on_disk > 0, "{f:?}");
        let visible = scanned(&ds, None, Some(f.fragment_id)) as u64;
        assert_eq!(f.physical_rows - f.deleted_rows, visible, "fragment {}", f.fragment_id);
        // Deleted rows are exactly the ids the testkit deleted in this fragment.
        total_bytes += f.bytes_on_disk;
        physical += f.physical_rows;
    }
    assert_eq!(physical, fixture().facts.get_u64("vectors.total_ids"));
    // The data files on disk are exactly the fragments' files (nothing was compacted away).
    let on_disk: u64 = std::fs::read_dir(std::path::Path::new(&uri).join("data"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(total_bytes, on_disk);
    let nc = lance_table_stats_column_count(st);
    let mut names = Vec::new();
    let mut col_bytes = 0u64;
    for i in 0..nc {
        let mut c = std::mem::MaybeUninit::new(LanceColumnStats::default());
        assert_eq!(lance_table_stats_column_v2(st, i, c.as_mut_ptr()), 0);
        let c = unsafe { c.assume_init() };
        let name = unsafe { CStr::from_ptr(c.name) }.to_str().unwrap().to_string();
        assert!(c.has_bytes_on_disk && c.bytes_on_disk > 0, "{name}: {c:?}");
        if name == "embedding" {
            // float32 vectors of dimension VDIM: about their raw size.
            let raw = physical * tk::VDIM as u64 * 4;
            assert!(c.bytes_on_disk >= raw / 2 && c.bytes_on_disk <= raw * 2, "embedding {} vs raw {raw}", c.bytes_on_disk);
        }
        col_bytes += c.bytes_on_disk;
        names.push(name);
    }
    assert!(col_bytes <= total_bytes, "columns {col_bytes} > files {total_bytes}");
    let schema_names: Vec<String> = {
        let mut s = arrow::ffi::FFI_ArrowSchema::empty();
        assert_eq!(lance_dataset_schema(ds.ptr(), &mut s), 0);
        let schema = arrow::datatypes::Schema::try_from(&s).unwrap();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    assert_eq!(names, schema_names);
    let mut bad = LanceFragmentStats::default();
    assert_err(lance_table_stats_fragment_v2(st, nf, &mut bad), LANCE_ERR_INVALID_ARGUMENT, "out of range");
    assert_err(lance_dataset_statistics_v2(std::ptr::null(), &mut st, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    assert_eq!(lance_table_stats_fragment_count(std::ptr::null()), 0);
    lance_table_stats_free(st);
    lance_table_stats_free(std::ptr::null_mut());
}

pub(crate) fn take_string(p: *mut c_char) -> String {
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    lance_string_free(p);
    s
}

#[test]
fn explain_shows_the_index_and_the_pushed_filter() {
    let ds = Ds::open(&vectors_uri(), 0);
    let explain = |filter: &str| {
        let f = cstr(filter);
        let cols = cstrs(&["id"]);
        let mut o = default_opts();
        o.filter_sql = f.as_ptr();
        o.columns = cols.ptrs.as_ptr();
        o.num_columns = 1;
        let mut out = std::ptr::null_mut();
        assert_eq!(lance_dataset_explain_scan_v2(ds.ptr(), &o, &mut out), 0, "{}", last_message());
        take_string(out)
    };
    let indexed = explain("id < 100");
    let residual = explain("category = 'rare'");
    assert!(indexed.contains("ScalarIndexQuery"), "BTREE filter plan: {indexed}");
    assert!(!residual.contains("ScalarIndexQuery"), "unindexed filter plan: {residual}");
    assert!(residual.contains("rare"), "{residual}");
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_explain_scan_v2(ds.ptr(), std::ptr::null(), &mut out), 0);
    assert!(!take_string(out).is_empty());
    // Split searches: the index segment's plan names the index search, the flat one does not.
    let plan = plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let mut q = query("embedding", query_vector(3), 5);
    let raw = q.raw();
    let mut seen = (false, false);
    for s in splits(&plan) {
        let mut out = std::ptr::null_mut();
        assert_eq!(lance_split_explain_search_v2(ds.ptr(), s.0, &raw, &mut out), 0, "{}", last_message());
        let text = take_string(out);
        if lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32 {
            assert!(text.contains("ANN"), "index segment plan: {text}");
            seen.0 = true;
        } else {
            assert!(!text.contains("ANN") && text.contains("KNN"), "flat plan: {text}");
            seen.1 = true;
        }
    }
    assert_eq!(seen, (true, true));
    assert_err(lance_dataset_explain_scan_v2(ds.ptr(), std::ptr::null(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    lance_string_free(std::ptr::null_mut());
}

fn get_next(stream: &mut FFI_ArrowArrayStream) -> (i32, String) {
    let mut array = arrow::ffi::FFI_ArrowArray::empty();
    let rc = unsafe { (stream.get_next.unwrap())(stream, &mut array) };
    let msg = if rc != 0 {
        let p = unsafe { (stream.get_last_error.unwrap())(stream) };
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    (rc, msg)
}

#[test]
fn cancelled_streams_fail_with_ecanceled_and_keep_failing() {
    let ds = Ds::open(&vectors_uri(), 0);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &default_opts(), &mut stream), 0);
    assert_eq!(lance_stream_cancel(&stream), 0);
    assert_eq!(lance_stream_cancel(&stream), 0, "cancelling twice is harmless");
    let (rc, msg) = get_next(&mut stream);
    assert_eq!(rc, 125, "{msg}");
    assert!(msg.contains("cancelled"), "{msg}");
    // The message names the library's code and carries no wrapper noise.
    assert!(msg.starts_with("LANCE_ERR_CANCELLED: "), "{msg}");
    assert!(!msg.contains("External error"), "{msg}");
    assert_eq!(get_next(&mut stream).0, 125, "a cancelled stream must not look complete");
    unsafe { (stream.release.unwrap())(&mut stream) };
    assert_err(lance_stream_cancel(&stream), LANCE_ERR_INVALID_ARGUMENT, "released");
    assert_err(lance_stream_cancel(std::ptr::null()), LANCE_ERR_INVALID_ARGUMENT, "stream");
    // A stream not made by lance-host.
    let foreign = FFI_ArrowArrayStream::new(Box::new(arrow::record_batch::RecordBatchIterator::new(
        Vec::<Result<arrow::record_batch::RecordBatch, arrow::error::ArrowError>>::new(),
        std::sync::Arc::new(arrow::datatypes::Schema::empty()),
    )));
    assert_err(lance_stream_cancel(&foreign), LANCE_ERR_INVALID_ARGUMENT, "not created by lance-host");
    // Merge and take streams can be cancelled too.
    let ids = [0u64, 1, 2];
    let mut taken = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), 3, std::ptr::null(), 0, &mut taken), 0, "{}", last_message());
    assert_eq!(lance_stream_cancel(&taken), 0);
    assert_eq!(get_next(&mut taken).0, 125);
    unsafe { (taken.release.unwrap())(&mut taken) };
}

#[test]
fn call_contexts_cancel_and_time_out_blocking_calls() {
    let uri = cstr(&vectors_uri());
    // Deadline passed: every blocking call on this thread fails with TIMEOUT, and stops.
    let ctx = lance_call_context_new(1);
    assert!(!ctx.is_null());
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(lance_call_context_enter(ctx), 0);
    assert!(lance_dataset_open(uri.as_ptr(), std::ptr::null(), 0).is_null());
    assert_err(last_code(), LANCE_ERR_TIMEOUT, "deadline");
    // The binding keeps the context alive after its handle is freed.
    lance_call_context_free(ctx);
    assert!(lance_dataset_open(uri.as_ptr(), std::ptr::null(), 0).is_null());
    assert_err(last_code(), LANCE_ERR_TIMEOUT, "deadline");
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    let ds = Ds::open(&vectors_uri(), 0);
    // Cancelled: CANCELLED; other threads are not affected.
    let ctx = lance_call_context_new(0);
    assert_eq!(lance_call_context_cancel(ctx), 0);
    assert_eq!(lance_call_context_enter(ctx), 0);
    let mut n = 0u64;
    assert_err(lance_dataset_count_rows_where_v2(ds.ptr(), std::ptr::null(), &mut n, std::ptr::null_mut()), LANCE_ERR_CANCELLED, "cancelled");
    let name = cstr("emb_pq");
    assert_err(lance_dataset_prewarm_index(ds.ptr(), name.as_ptr()), LANCE_ERR_CANCELLED, "cancelled");
    let ids = [0u64, 1];
    let mut taken = FFI_ArrowArrayStream::empty();
    assert_err(lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), 2, std::ptr::null(), 0, &mut taken), LANCE_ERR_CANCELLED, "cancelled");
    let root = fixture().root.to_string_lossy().into_owned();
    let (_k, props) = kv(&[("root", &root)]);
    let cat = lance_host::ffi::catalog::lance_catalog_open(props.as_ptr());
    if cat.is_null() {
        assert_err(last_code(), LANCE_ERR_CANCELLED, "cancelled");
    } else {
        let mut tables = std::ptr::null_mut();
        assert_err(lance_host::ffi::catalog::lance_catalog_list_tables(cat, std::ptr::null(), 0, &mut tables), LANCE_ERR_CANCELLED, "cancelled");
        lance_host::ffi::catalog::lance_catalog_free(cat);
    }
    let dsp = ds.ptr() as usize;
    let other = std::thread::spawn(move || {
        let mut n = 0u64;
        lance_dataset_count_rows_where_v2(dsp as *const LanceDataset, std::ptr::null(), &mut n, std::ptr::null_mut())
    });
    assert_eq!(other.join().unwrap(), 0);
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    lance_call_context_free(ctx);
    assert_eq!(lance_dataset_count_rows_where_v2(ds.ptr(), std::ptr::null(), &mut n, std::ptr::null_mut()), 0);
    // A stream created under a context stops when the context is cancelled later.
    let ctx = lance_call_context_new(0);
    assert_eq!(lance_call_context_enter(ctx), 0);
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &default_opts(), &mut stream), 0);
    assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
    assert_eq!(lance_call_context_cancel(ctx), 0);
    assert_eq!(get_next(&mut stream).0, 125);
    unsafe { (stream.release.unwrap())(&mut stream) };
    lance_call_context_free(ctx);
    assert_err(lance_call_context_cancel(std::ptr::null()), LANCE_ERR_INVALID_ARGUMENT, "context");
    lance_call_context_free(std::ptr::null_mut());
    let _ = Instant::now();
}

#[test]
fn filters_lance_cannot_plan_are_invalid_arguments_not_panics() {
    let ds = Ds::open(&vectors_uri(), 0);
    for filter in ["id = $1", "category = N'rare'", "category = E'rare'", "category = $$rare$$", "id = ?"] {
        let e = count_where(&ds, Some(filter)).map(|_| ()).unwrap_err();
        assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{filter}: {e:?}");
        let f = cstr(filter);
        let mut o = default_opts();
        o.filter_sql = f.as_ptr();
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT as i32, "{filter}: {}", last_message());
        let mut out = std::ptr::null_mut();
        assert_eq!(lance_dataset_explain_scan_v2(ds.ptr(), &o, &mut out), LANCE_ERR_INVALID_ARGUMENT as i32, "{filter}");
    }
}

#[test]
fn huge_inputs_give_readable_messages_and_take_rejects_repeated_columns() {
    let ds = Ds::open(&vectors_uri(), 0);
    // A filter the library echoes in its message (a placeholder is refused).
    let filter = format!("id = $1 OR category = '{}'", "x".repeat(1 << 20));
    let e = count_where(&ds, Some(&filter)).map(|_| ()).unwrap_err();
    assert_eq!(e.0, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(e.1.len() <= 2048 + 64, "a {}-byte message", e.1.len());
    assert!(e.1.contains("bytes omitted"), "{}", &e.1[..200]);
    assert!(e.1.contains("uses the placeholder '$1'"), "the start of the message was lost");
    // Unknown columns: the list of valid fields has no internal row-metadata columns.
    let e = count_where(&ds, Some("no_such_column = 1")).map(|_| ()).unwrap_err();
    assert!(e.1.contains("no_such_column") && e.1.contains("embedding"), "{}", e.1);
    assert!(!e.1.contains("_row_created_at_version") && !e.1.contains("_rowoffset"), "{}", e.1);
    // take, scan and search agree: a column asked for twice is an error naming it.
    let cols = cstrs(&["id", "category", "id"]);
    let ids = [0u64, 1];
    let mut st = FFI_ArrowArrayStream::empty();
    assert_err(lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), 2, cols.ptrs.as_ptr(), 3, &mut st), LANCE_ERR_INVALID_ARGUMENT, "'id' is requested more than once");
    let mut o = default_opts();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 3;
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut st), LANCE_ERR_INVALID_ARGUMENT, "'id' is requested more than once");
}

static LOG_RECORDS: std::sync::Mutex<Vec<(i32, String, String)>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn collect_log(level: i32, target: *const c_char, message: *const c_char, user_data: *mut std::ffi::c_void) {
    assert_eq!(user_data as usize, 0x5eed, "user data not passed back");
    let t = unsafe { CStr::from_ptr(target) }.to_string_lossy().into_owned();
    let m = unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned();
    LOG_RECORDS.lock().unwrap().push((level, t, m));
}

fn metrics() -> std::collections::BTreeMap<String, u64> {
    (0..lance_metric_count())
        .map(|i| {
            let mut name = std::ptr::null();
            let mut value = 0u64;
            assert_eq!(lance_metric(i, &mut name, &mut value), 0);
            (unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned(), value)
        })
        .collect()
}

/// Runs in a fresh process: the process's log facade and counters are its own.
#[test]
#[ignore = "run by host_logging_and_metrics in its own process"]
fn child_logging_and_metrics() {
    if std::env::var_os("LANCE_HOST_TEST_LOGGING").is_none() {
        return;
    }
    assert_err(lance_log_set_callback(Some(collect_log), 0x5eed as *mut _, 9), LANCE_ERR_INVALID_ARGUMENT, "level");
    assert_eq!(lance_log_set_callback(Some(collect_log), 0x5eed as *mut _, LanceLogLevel::LANCE_LOG_DEBUG as i32), 0, "{}", last_message());
    let before = metrics();
    let ds = Ds::open(&vectors_uri(), 0);
    let rows = scanned(&ds, None, None);
    let name = cstr("emb_pq");
    assert_eq!(lance_dataset_prewarm_index(ds.ptr(), name.as_ptr()), 0);
    let after = metrics();
    let records = LOG_RECORDS.lock().unwrap().clone();
    assert!(!records.is_empty(), "no log record reached the callback");
    assert!(records.iter().any(|(_, t, _)| t.starts_with("lance")), "no record from Lance: {:?}", &records[..records.len().min(5)]);
    assert!(records.iter().all(|(l, _, _)| (1..=4).contains(l)), "a record above DEBUG");
    // Counters: this process opened once, scanned once (the rows it received) and prewarmed.
    let d = |k: &str| after[k] - before.get(k).copied().unwrap_or(0);
    assert_eq!(d("ops.open"), 1);
    assert_eq!(d("ops.scan"), 1);
    assert_eq!(d("ops.prewarm"), 1);
    assert_eq!(d("stream.rows"), rows as u64);
    assert!(d("stream.bytes") > 0 && d("stream.batches") > 0);
    // A merge: only the merged rows reach the host; the split results it consumed and dropped
    // are not counted as returned.
    let before_merge = metrics();
    let mut merged = FFI_ArrowArrayStream::empty();
    let plan = crate::vector::plan_vector(&ds, "embedding", lance_host::ffi::split::LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let mut q = crate::vector::query("embedding", crate::vector::query_vector(3), 7);
    let raw = q.raw();
    let mut inputs: Vec<FFI_ArrowArrayStream> = crate::vector::splits(&plan)
        .iter()
        .map(|sp| {
            let mut s = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_host::ffi::search::lance_split_search_v2(ds.ptr(), sp.0, &raw, &mut s), 0);
            s
        })
        .collect();
    let n_inputs = inputs.len();
    assert_eq!(lance_host::ffi::search::lance_topk_merge(inputs.as_mut_ptr(), n_inputs, 7, 0, &mut merged), 0);
    let merged_rows = total_rows(&read_stream(merged).unwrap());
    assert_eq!(merged_rows, 7);
    let after_merge = metrics();
    assert_eq!(after_merge["stream.rows"] - before_merge["stream.rows"], 7, "rows the merge dropped were counted");
    assert!(after.contains_key("index_cache.hits") && after.contains_key("object_store.requests"));
    let mut name_p = std::ptr::null();
    let mut v = 0u64;
    assert_err(lance_metric(lance_metric_count(), &mut name_p, &mut v), LANCE_ERR_INVALID_ARGUMENT, "out of range");
    // Off: nothing more arrives.
    assert_eq!(lance_log_set_callback(None, std::ptr::null_mut(), 0), 0);
    let n = LOG_RECORDS.lock().unwrap().len();
    let _ = scanned(&ds, Some("id < 10"), None);
    assert_eq!(LOG_RECORDS.lock().unwrap().len(), n, "records after logging was turned off");
    println!("LOG records={} first={:?}", records.len(), records.first());
    println!("CHILD-OK");
}

#[test]
fn host_logging_and_metrics() {
    let out = run_child("engine::child_logging_and_metrics", &[("LANCE_HOST_TEST_LOGGING", std::ffi::OsStr::new("1"))]);
    assert!(out.contains("LOG records="), "{out}");
    // Nothing of Lance's logging went to the process's stdout (the callback got it).
    assert!(!out.lines().any(|l| l.contains("DEBUG lance") || l.contains("INFO lance")), "{out}");
}

/// Runs in a fresh process: a panic the library catches (arrow's import of a host batch whose
/// layout does not match its stream's schema) is reported to the host (LANCE_ERR_HOST_STREAM,
/// and the log sink) and printed nowhere.
#[test]
#[ignore = "run by caught_panics_stay_off_stderr in its own process"]
fn child_quiet_panic() {
    if std::env::var_os("LANCE_HOST_TEST_QUIET").is_none() {
        return;
    }
    assert_eq!(lance_log_set_callback(Some(collect_log), 0x5eed as *mut _, LanceLogLevel::LANCE_LOG_ERROR as i32), 0);
    let uri = tempfile::tempdir().unwrap().keep().join("quiet.lance");
    let u = cstr(uri.to_str().unwrap());
    let mut data = crate::commit_checks::stream_with_a_second_schema();
    let mut out = std::ptr::null_mut();
    let rc = lance_host::ffi::write::lance_table_write(u.as_ptr(), std::ptr::null(), &mut data, std::ptr::null(), &mut out, std::ptr::null_mut());
    assert_eq!(rc, LANCE_ERR_HOST_STREAM as i32, "{}", last_message());
    let records = LOG_RECORDS.lock().unwrap().clone();
    assert!(records.iter().any(|(l, _, m)| *l == 1 && m.contains("caught panic")), "{records:?}");
    println!("CHILD-OK");
}

#[test]
fn caught_panics_stay_off_stderr() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "engine::child_quiet_panic", "--ignored", "--nocapture"])
        .env("LANCE_HOST_TEST_WAREHOUSE", fixture().root.as_os_str())
        .env("LANCE_HOST_TEST_QUIET", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("CHILD-OK"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked at"), "a caught panic was printed: {stderr}");
}
