//! Full-text search bench side: the distributed protocol through the C ABI — plan once, then per
//! query: corpus statistics once, every split searched with them, merged by `_score`.
//!
//!     lance-host-bench fts <uri> <queries.json>
//!
//! `queries.json` is a list of `[text, kind]` (kind 0 = match OR, 2 = phrase). Prints one JSON
//! line: per-query milliseconds, statistics bytes, storage requests (statistics + splits),
//! index-file requests and index-cache misses of the segment searches, and the merged row ids.

use std::ffi::CString;
use std::time::Instant;

use arrow::array::{Array, UInt64Array};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use lance_host::ffi::dataset::*;
use lance_host::ffi::fts::*;
use lance_host::ffi::index::lance_dataset_prewarm_index_with_stats_v2;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;

fn msg() -> String {
    unsafe { std::ffi::CStr::from_ptr(lance_host::ffi::error::lance_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn io_of(stream: &FFI_ArrowArrayStream) -> LanceIoStats {
    let mut io = LanceIoStats::default();
    assert_eq!(lance_stream_io_stats_v2(stream, &mut io), 0, "{}", msg());
    io
}

pub fn run(uri: &str, queries_path: &str, storage: &[(String, String)]) {
    super::configure_data_cache();
    let queries: Vec<(String, i32)> =
        serde_json::from_str(&std::fs::read_to_string(queries_path).unwrap()).unwrap();
    let u = CString::new(uri).unwrap();
    let kv: Vec<CString> = storage.iter().flat_map(|(k, v)| [CString::new(k.as_str()).unwrap(), CString::new(v.as_str()).unwrap()]).collect();
    let mut ptrs: Vec<*const std::ffi::c_char> = kv.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let opts = if storage.is_empty() { std::ptr::null() } else { ptrs.as_ptr() };
    let ds = lance_dataset_open(u.as_ptr(), opts, 0);
    assert!(!ds.is_null(), "{}", msg());
    if std::env::var("BENCH_PREWARM").as_deref() == Ok("1") {
        let name = CString::new("text_idx").unwrap();
        let mut io = LanceIoStats::default();
        assert_eq!(lance_dataset_prewarm_index_with_stats_v2(ds, name.as_ptr(), &mut io), 0, "{}", msg());
    }
    let column = CString::new("text").unwrap();
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_fts(ds, column.as_ptr(), 0, &mut plan), 0, "{}", msg());
    let splits: Vec<*mut LanceSplit> = (0..lance_split_plan_count(plan)).map(|i| lance_split_plan_get(plan, i)).collect();
    let mut out = Vec::new();
    for (text, kind) in &queries {
        let t = CString::new(text.as_str()).unwrap();
        let mut q = std::mem::MaybeUninit::<LanceTextQuery>::uninit();
        assert_eq!(lance_text_query_init(q.as_mut_ptr(), std::mem::size_of::<LanceTextQuery>()), 0);
        let mut q = unsafe { q.assume_init() };
        q.column = column.as_ptr();
        q.text = t.as_ptr();
        q.match_kind = *kind;
        q.k = 10;
        // Splits return only `_rowid` and `_score`; the winners' `id` is taken after the merge
        // (late materialization, one take per query as pylance does).
        let rowid = CString::new("_rowid").unwrap();
        let cols = [rowid.as_ptr()];
        q.columns = cols.as_ptr();
        q.num_columns = 1;
        let start = Instant::now();
        let (mut sp, mut n) = (std::ptr::null_mut(), 0usize);
        let mut stats_io = LanceIoStats::default();
        assert_eq!(lance_dataset_fts_stats(ds, &q, &mut sp, &mut n, &mut stats_io), 0, "{}", msg());
        let stats_ms = start.elapsed().as_secs_f64() * 1e3;
        let (mut segment_ms, mut flat_ms) = (0f64, 0f64);
        let mut requests = stats_io.read_requests;
        let (mut index_requests, mut index_misses) = (0u64, 0u64);
        let mut streams: Vec<FFI_ArrowArrayStream> = Vec::new();
        for s in &splits {
            let mut st = FFI_ArrowArrayStream::empty();
            let t = Instant::now();
            assert_eq!(lance_split_fts_search(ds, *s, &q, sp, n, &mut st), 0, "{}", msg());
            if lance_split_kind(*s) == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32 {
                segment_ms += t.elapsed().as_secs_f64() * 1e3;
            } else {
                flat_ms += t.elapsed().as_secs_f64() * 1e3;
            }
            let io = io_of(&st);
            requests += io.read_requests;
            if lance_split_kind(*s) == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32 {
                index_requests += io.index_read_requests;
                index_misses += io.index_cache_misses;
            }
            streams.push(st);
        }
        let mut merged = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_fts_merge(streams.as_mut_ptr(), streams.len(), 10, 0, &mut merged), 0, "{}", msg());
        let mut ids = Vec::new();
        let mut scores = Vec::new();
        for b in ArrowArrayStreamReader::try_new(merged).unwrap() {
            let b = b.unwrap();
            let r = b.column_by_name("_rowid").unwrap().as_any().downcast_ref::<UInt64Array>().unwrap();
            ids.extend((0..r.len()).map(|i| r.value(i)));
            let sc = b.column_by_name("_score").unwrap().as_any().downcast_ref::<arrow::array::Float32Array>().unwrap();
            scores.extend((0..sc.len()).map(|i| sc.value(i)));
        }
        let id_col = CString::new("id").unwrap();
        let take_cols = [id_col.as_ptr()];
        let mut taken = FFI_ArrowArrayStream::empty();
        assert_eq!(
            lance_host::ffi::take::lance_dataset_take_rows(ds, ids.as_ptr(), ids.len(), take_cols.as_ptr(), 1, &mut taken),
            0,
            "{}",
            msg()
        );
        let taken_rows: usize = ArrowArrayStreamReader::try_new(taken).unwrap().map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(taken_rows, ids.len());
        let ms = start.elapsed().as_secs_f64() * 1e3;
        lance_bytes_free(sp, n);
        out.push(serde_json::json!({
            "text": text, "kind": kind, "ms": ms, "stats_bytes": n, "requests": requests,
            "stats_requests": stats_io.read_requests, "index_requests": index_requests,
            "index_cache_misses": index_misses, "ids": ids, "scores": scores,
            "stats_ms": stats_ms, "segment_ms": segment_ms, "flat_ms": flat_ms,
        }));
    }
    for s in splits {
        lance_split_free(s);
    }
    lance_split_plan_free(plan);
    lance_dataset_free(ds);
    println!("{}", serde_json::json!({ "side": "lance-host", "queries": out }));
}
