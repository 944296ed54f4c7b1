//! Bad inputs: every one gets a code and a message naming the problem, never a crash.

use std::ffi::c_char;

use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::dataset::*;
use lance_host::ffi::error::*;
use lance_host::ffi::scan::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;

#[test]
fn null_arguments() {
    let p = lance_dataset_open(std::ptr::null(), std::ptr::null(), 0);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "uri is NULL");

    assert_eq!(lance_dataset_version(std::ptr::null()), 0);
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "dataset is NULL");
    assert!(lance_dataset_uri(std::ptr::null()).is_null());
    assert!(lance_dataset_storage_format(std::ptr::null()).is_null());

    let mut n = 0u64;
    assert_err(
        lance_dataset_count_rows(std::ptr::null(), &mut n),
        LANCE_ERR_INVALID_ARGUMENT,
        "dataset",
    );
    let ds = Ds::open(&people_uri(), 0);
    assert_err(
        lance_dataset_count_rows(ds.ptr(), std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    assert_err(
        lance_dataset_schema(ds.ptr(), std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    let mut schema = FFI_ArrowSchema::empty();
    assert_err(
        lance_dataset_schema(std::ptr::null(), &mut schema),
        LANCE_ERR_INVALID_ARGUMENT,
        "dataset",
    );
    let mut len = 0usize;
    assert_err(
        lance_dataset_fragments(ds.ptr(), std::ptr::null_mut(), &mut len),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), std::ptr::null(), std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    assert_err(
        lance_scan_options_init_v2(std::ptr::null_mut(), std::mem::size_of::<LanceScanOptions>()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    // NULL options = defaults.
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), std::ptr::null(), &mut stream), 0);
    assert_eq!(total_rows(&read_stream(stream).unwrap()) as u64, fixture().facts.get_u64("people.v3.rows"));
    // Frees accept NULL.
    lance_dataset_free(std::ptr::null_mut());
    lance_fragment_info_list_free(std::ptr::null_mut(), 0);
    lance_version_info_list_free(std::ptr::null_mut(), 3);
}

#[test]
fn invalid_utf8() {
    let bad: [u8; 4] = [0x66, 0xff, 0xfe, 0];
    let p = lance_dataset_open(bad.as_ptr() as *const c_char, std::ptr::null(), 0);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "UTF-8");

    let ds = Ds::open(&people_uri(), 0);
    let cols = [bad.as_ptr() as *const c_char];
    let mut o = default_opts();
    o.columns = cols.as_ptr();
    o.num_columns = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "columns[0]",
    );
    let mut o = default_opts();
    o.filter_sql = bad.as_ptr() as *const c_char;
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "filter_sql",
    );
    let uri = cstr(&people_uri());
    let key = cstr("region");
    let kv = [key.as_ptr(), bad.as_ptr() as *const c_char, std::ptr::null()];
    let p = lance_dataset_open(uri.as_ptr(), kv.as_ptr(), 0);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "region");
}

#[test]
fn malformed_storage_options() {
    let uri = cstr(&people_uri());
    let k = cstr("block_size");
    // Key without value (the terminator comes where the value should be).
    let kv = [k.as_ptr(), std::ptr::null()];
    let p = lance_dataset_open(uri.as_ptr(), kv.as_ptr(), 0);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "block_size");
    // Duplicate key.
    let v = cstr("4096");
    let kv = [k.as_ptr(), v.as_ptr(), k.as_ptr(), v.as_ptr(), std::ptr::null()];
    assert!(lance_dataset_open(uri.as_ptr(), kv.as_ptr(), 0).is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "twice");
}

#[test]
fn missing_table_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.lance");
    let uri = cstr(missing.to_str().unwrap());
    let p = lance_dataset_open(uri.as_ptr(), std::ptr::null(), 0);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_NOT_FOUND, "nope.lance");

    let uri = cstr(&people_uri());
    let p = lance_dataset_open(uri.as_ptr(), std::ptr::null(), 999);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_NOT_FOUND, "999");

    let empty = cstr("");
    assert!(lance_dataset_open(empty.as_ptr(), std::ptr::null(), 0).is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "empty");
}

#[test]
fn last_error_is_per_thread_and_read_only() {
    let p = lance_dataset_open(std::ptr::null(), std::ptr::null(), 0);
    assert!(p.is_null());
    let m1 = last_message();
    let m2 = last_message();
    assert_eq!(m1, m2);
    assert_eq!(last_code(), LANCE_ERR_INVALID_ARGUMENT as i32);
    // A successful call does not clear it.
    let ds = Ds::open(&events_uri(), 0);
    assert_eq!(last_message(), m1);
    drop(ds);
    // Another thread has its own (empty) last error.
    let other = std::thread::spawn(|| (last_code(), last_message())).join().unwrap();
    assert_eq!(other, (LANCE_OK as i32, String::new()));
    let name = unsafe { std::ffi::CStr::from_ptr(lance_error_code_name(LANCE_ERR_NOT_FOUND as i32)) };
    assert_eq!(name.to_str().unwrap(), "LANCE_ERR_NOT_FOUND");
    let stream = unsafe { std::ffi::CStr::from_ptr(lance_error_code_name(LANCE_ERR_HOST_STREAM as i32)) };
    assert_eq!(stream.to_str().unwrap(), "LANCE_ERR_HOST_STREAM");
    let unknown = unsafe { std::ffi::CStr::from_ptr(lance_error_code_name(-7)) };
    assert_eq!(unknown.to_str().unwrap(), "LANCE_ERR_UNKNOWN");
    let v = unsafe { std::ffi::CStr::from_ptr(lance_host_version()) };
    assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn calls_from_inside_an_async_runtime_are_refused() {
    let uri = cstr(&people_uri());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (ptr_is_null, code, msg) = rt.block_on(async {
        let p = lance_dataset_open(uri.as_ptr(), std::ptr::null(), 0);
        (p.is_null(), last_code(), last_message())
    });
    assert!(ptr_is_null);
    assert_eq!(code, LANCE_ERR_FAILED_PRECONDITION as i32, "{msg}");
    assert!(msg.contains("async runtime"), "{msg}");
}

/// Every entry point added for catalogs, indexes, planning, search, take and statistics: NULL
/// handles, NULL out-parameters and out-of-range indexes give an error code (or the documented
/// 0/NULL plus the last error), never a crash.
#[test]
fn null_and_out_of_range_arguments_everywhere() {
    use lance_host::ffi::catalog::*;
    use lance_host::ffi::index::*;
    use lance_host::ffi::split::*;
    use lance_host::ffi::search::*;
    use lance_host::ffi::take::*;

    let mut stream = FFI_ArrowArrayStream::empty();
    let name = cstr("x");
    let check = |code: i32, needle: &str| assert_err(code, LANCE_ERR_INVALID_ARGUMENT, needle);
    let check_null = |is_null: bool, needle: &str| {
        assert!(is_null);
        assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, needle);
    };

    // Catalog and its lists.
    let mut tables = std::ptr::null_mut();
    check(lance_catalog_list_tables(std::ptr::null(), std::ptr::null(), 0, &mut tables), "catalog");
    let mut nss = std::ptr::null_mut();
    check(lance_catalog_list_namespaces(std::ptr::null(), std::ptr::null(), 0, false, &mut nss), "catalog");
    let mut info = std::ptr::null_mut();
    check(lance_catalog_describe_table(std::ptr::null(), std::ptr::null(), 0, name.as_ptr(), &mut info), "catalog");
    check_null(lance_catalog_open_table(std::ptr::null(), std::ptr::null(), 0, name.as_ptr(), 0).is_null(), "catalog");
    check_null(lance_table_info_location(std::ptr::null()).is_null(), "info");
    check_null(lance_table_info_storage_options(std::ptr::null()).is_null(), "info");
    assert_eq!(lance_table_info_latest_version(std::ptr::null()), 0);
    assert_eq!(lance_string_list_count(std::ptr::null()), 0);
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "list");
    assert_eq!(lance_namespace_list_count(std::ptr::null()), 0);
    assert_eq!(lance_namespace_list_depth(std::ptr::null(), 0), 0);
    check_null(lance_namespace_list_part(std::ptr::null(), 0, 0).is_null(), "list");
    let root = fixture().root.to_str().unwrap().to_string();
    let (_props, ptrs) = kv(&[("root", &root)]);
    let cat = lance_catalog_open(ptrs.as_ptr());
    assert!(!cat.is_null(), "{}", last_message());
    check(lance_catalog_list_tables(cat, std::ptr::null(), 0, std::ptr::null_mut()), "out");
    check(lance_catalog_describe_table(cat, std::ptr::null(), 0, std::ptr::null(), &mut info), "table");
    assert_eq!(lance_catalog_list_tables(cat, std::ptr::null(), 0, &mut tables), 0);
    let n = lance_string_list_count(tables);
    check_null(lance_string_list_get(tables, n).is_null(), &format!("index {n}"));
    lance_string_list_free(tables);
    lance_catalog_free(cat);

    // Index lists and prewarm.
    let ds = Ds::open(&people_uri(), 0);
    check(lance_dataset_indexes(std::ptr::null(), &mut std::ptr::null_mut()), "dataset");
    check(lance_dataset_indexes(ds.ptr(), std::ptr::null_mut()), "out");
    let mut list = std::ptr::null_mut();
    assert_eq!(lance_dataset_indexes(ds.ptr(), &mut list), 0);
    assert_eq!(lance_index_list_count(list), 0); // people has no index
    check_null(lance_index_list_name(list, 0).is_null(), "index 0");
    check_null(lance_index_list_type(std::ptr::null(), 0).is_null(), "list");
    assert_eq!(lance_index_list_segment_count(list, 3), 0);
    let mut seg = std::mem::MaybeUninit::new(LanceIndexSegmentInfo::default());
    check(lance_index_list_segment_v2(list, 0, 0, seg.as_mut_ptr()), "index 0");
    lance_index_list_free(list);
    let mut io = LanceIoStats::default();
    check(lance_dataset_prewarm_index_with_stats_v2(ds.ptr(), std::ptr::null(), &mut io), "index_name");
    check(lance_dataset_prewarm_index_with_stats_v2(ds.ptr(), name.as_ptr(), std::ptr::null_mut()), "out");
    assert_err(lance_dataset_prewarm_index(ds.ptr(), cstr("").as_ptr()), LANCE_ERR_INVALID_ARGUMENT, "empty");
    let uuid = [7u8; 16];
    check(lance_dataset_prewarm_index_segments_v2(std::ptr::null(), name.as_ptr(), uuid.as_ptr(), 16, &mut io), "dataset");
    check(lance_dataset_prewarm_index_segments_v2(ds.ptr(), std::ptr::null(), uuid.as_ptr(), 16, &mut io), "index_name");
    check(lance_dataset_prewarm_index_segments_v2(ds.ptr(), name.as_ptr(), std::ptr::null(), 16, &mut io), "segment_uuids");

    // Plans and splits.
    let mut plan = std::ptr::null_mut();
    check(lance_dataset_plan_scan(std::ptr::null(), 0, &mut plan), "dataset");
    check(lance_dataset_plan_scan(ds.ptr(), 0, std::ptr::null_mut()), "out");
    check(lance_dataset_plan_vector_search(ds.ptr(), std::ptr::null(), 0, true, 0, &mut plan), "column");
    assert_eq!(lance_split_plan_count(std::ptr::null()), 0);
    check_null(lance_split_plan_get(std::ptr::null(), 0).is_null(), "plan");
    check_null(lance_split_plan_reason(std::ptr::null()).is_null(), "plan");
    check_null(lance_split_plan_index_name(std::ptr::null()).is_null(), "plan");
    assert_eq!(lance_dataset_plan_scan(ds.ptr(), 0, &mut plan), 0);
    let count = lance_split_plan_count(plan);
    check_null(lance_split_plan_get(plan, count).is_null(), &format!("index {count}"));
    assert!(lance_split_plan_index_name(plan).is_null()); // a scan plan uses no index
    let split = lance_split_plan_get(plan, 0);
    lance_split_plan_free(plan);
    let mut bytes = std::ptr::null_mut();
    let mut len = 0usize;
    check(lance_split_serialize(std::ptr::null(), &mut bytes, &mut len), "split");
    check(lance_split_serialize(split, std::ptr::null_mut(), &mut len), "out");
    check(lance_split_segment_uuid(split, std::ptr::null_mut()), "out");
    check_null(lance_split_fragment_ids(split, std::ptr::null_mut()).is_null(), "out_len");
    check_null(lance_split_uri(std::ptr::null()).is_null(), "split");
    assert_eq!(lance_split_kind(std::ptr::null()), 0);
    assert_eq!(lance_split_version(std::ptr::null()), 0);
    assert_eq!(lance_split_row_count(std::ptr::null()), 0);
    check_null(lance_split_open_dataset(std::ptr::null(), std::ptr::null()).is_null(), "split");
    let dangling_key = [name.as_ptr(), std::ptr::null()];
    check_null(lance_split_open_dataset(split, dangling_key.as_ptr()).is_null(), "storage_options");
    check(lance_split_scan_v2(ds.ptr(), std::ptr::null(), std::ptr::null(), &mut stream), "split");
    check(lance_split_scan_v2(ds.ptr(), split, std::ptr::null(), std::ptr::null_mut()), "out");
    let ids = [0u64];
    let mut o = default_opts();
    o.fragment_ids = ids.as_ptr();
    o.num_fragment_ids = 1;
    check(lance_split_scan_v2(ds.ptr(), split, &o, &mut stream), "fragment_ids");
    check(lance_split_search_v2(ds.ptr(), split, std::ptr::null(), &mut stream), "query");
    check(lance_vector_query_init_v2(std::ptr::null_mut(), std::mem::size_of::<LanceVectorQuery>()), "out");
    lance_split_free(split);
    lance_split_free(std::ptr::null_mut());
    lance_split_plan_free(std::ptr::null_mut());
    lance_bytes_free(std::ptr::null_mut(), 0);
    lance_index_list_free(std::ptr::null_mut());

    // Take, merge and stream statistics.
    check(lance_dataset_take_rows(std::ptr::null(), ids.as_ptr(), 1, std::ptr::null(), 0, &mut stream), "dataset");
    check(lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), 1, std::ptr::null(), 0, std::ptr::null_mut()), "out");
    check(lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), 1, std::ptr::null(), 2, &mut stream), "columns");
    let mut merged = FFI_ArrowArrayStream::empty();
    check(lance_topk_merge(std::ptr::null_mut(), 0, 1, 0, &mut merged), "no input");
    check(lance_stream_io_stats_v2(std::ptr::null(), &mut io), "stream");
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), std::ptr::null(), &mut stream), 0);
    check(lance_stream_io_stats_v2(&stream, std::ptr::null_mut()), "out");
    check(lance_topk_merge(&mut stream, 1, 1, 0, &mut merged), "_distance");
    assert!(stream.release.is_none(), "merge must take ownership of its inputs, also on failure");
    check(lance_topk_merge(&mut stream, 1, 1, 0, &mut merged), "already released");
}

/// Structs of other header versions: a caller built with an older or newer header passes its
/// own `struct_size`; the library honours it (see "ABI compatibility" in the README).
#[test]
fn sized_structs_of_older_and_newer_callers() {
    let ds = Ds::open(&people_uri(), 0);
    let rows = fixture().facts.get_u64("people.v3.rows");
    let size = std::mem::size_of::<LanceScanOptions>();

    // A newer caller: 32 more bytes, all zero (its new fields unset) -> accepted, same rows.
    #[repr(C)]
    struct Newer {
        known: LanceScanOptions,
        extra: [u64; 4],
    }
    let mut newer = Newer { known: default_opts(), extra: [0; 4] };
    assert_eq!(lance_scan_options_init_v2(&mut newer.known, std::mem::size_of::<Newer>()), 0);
    assert_eq!(newer.known.struct_size, std::mem::size_of::<Newer>());
    newer.extra = [0; 4];
    newer.known.limit = 7;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &newer.known, &mut stream), 0);
    assert_eq!(total_rows(&read_stream(stream).unwrap()), 7);
    // ... but a field this library does not know, set -> NOT_SUPPORTED naming the byte.
    newer.extra[1] = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &newer.known, &mut stream),
        LANCE_ERR_NOT_SUPPORTED,
        &format!("sets byte {} of its {}-byte LanceScanOptions", size + 8, size + 32),
    );

    // An older caller (the 0.12 header's 120 bytes, before order_by): the fields it does not
    // have are not read, so whatever follows its struct in memory is ignored.
    let mut older = default_opts();
    let nonsense = std::ffi::CString::new("not ( a sort key").unwrap();
    older.order_by = nonsense.as_ptr();
    older.struct_size = 120;
    older.limit = 5;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &older, &mut stream), 0);
    assert_eq!(total_rows(&read_stream(stream).unwrap()), 5);
    older.struct_size = size; // the same keys from a current caller are read, and refused
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(lance_dataset_scan_v2(ds.ptr(), &older, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "order_by");

    // A struct_size the caller forgot (0) or below the first sized revision (120) -> INVALID.
    for bad in [0, 8, 112] {
        let mut o = default_opts();
        o.struct_size = bad;
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_err(
            lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
            LANCE_ERR_INVALID_ARGUMENT,
            &format!("options->struct_size is {bad}"),
        );
        let mut o = default_opts();
        assert_err(lance_scan_options_init_v2(&mut o, bad), LANCE_ERR_INVALID_ARGUMENT, "sizeof(LanceScanOptions)");
    }

    // Outputs: a newer caller's unknown trailing bytes come back zeroed, the known ones filled;
    // a forgotten struct_size is INVALID and nothing is written.
    #[repr(C)]
    struct NewerIo {
        known: LanceIoStats,
        extra: [u64; 2],
    }
    let mut io = NewerIo { known: LanceIoStats::default(), extra: [u64::MAX; 2] };
    io.known.struct_size = std::mem::size_of::<NewerIo>();
    io.known.read_bytes = u64::MAX;
    let mut n = 0u64;
    assert_eq!(lance_dataset_count_rows_where_v2(ds.ptr(), std::ptr::null(), &mut n, &mut io.known), 0);
    assert_eq!(n, rows);
    assert_eq!(io.known.read_bytes, 0, "known fields written (local table: 0)");
    assert_eq!(io.extra, [0, 0], "unknown fields zeroed");
    assert_eq!(io.known.struct_size, std::mem::size_of::<NewerIo>(), "the caller's size stays");
    let mut io = LanceIoStats { struct_size: 0, read_bytes: 42, ..LanceIoStats::default() };
    let mut n = 5u64;
    assert_err(
        lance_dataset_count_rows_where_v2(ds.ptr(), std::ptr::null(), &mut n, &mut io),
        LANCE_ERR_INVALID_ARGUMENT,
        "io->struct_size is 0",
    );
    assert_eq!((n, io.read_bytes), (5, 42), "outputs untouched on failure");

    // Version: the header's number is the library's.
    assert_eq!(lance_host_version_number(), {
        let v: Vec<u32> = env!("CARGO_PKG_VERSION").split('.').map(|p| p.parse().unwrap()).collect();
        v[0] * 10000 + v[1] * 100 + v[2]
    });
}

/// `lance_dataset_export_split_snapshot` names each NULL argument, writes no output on failure,
/// and the token of a scoped handle's own split is accepted while a scoped handle refuses a
/// split of a fragment it does not carry.
#[test]
fn split_snapshot_export_refuses_null_arguments_and_foreign_fragments() {
    use lance_host::ffi::split::*;
    let ds = Ds::open(&people_uri(), 0);
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan(ds.ptr(), 0, &mut plan), 0, "{}", last_message());
    assert!(lance_split_plan_count(plan) >= 2, "the fixture has several fragments");
    let (first, second) = (lance_split_plan_get(plan, 0), lance_split_plan_get(plan, 1));
    let (mut out, mut len) = (std::ptr::null_mut::<u8>(), 0usize);
    assert_err(lance_dataset_export_split_snapshot(std::ptr::null(), first, &mut out, &mut len), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    assert_err(lance_dataset_export_split_snapshot(ds.ptr(), std::ptr::null(), &mut out, &mut len), LANCE_ERR_INVALID_ARGUMENT, "split");
    assert_err(lance_dataset_export_split_snapshot(ds.ptr(), first, std::ptr::null_mut(), &mut len), LANCE_ERR_INVALID_ARGUMENT, "out");
    assert_err(lance_dataset_export_split_snapshot(ds.ptr(), first, &mut out, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out_len");
    assert!(out.is_null() && len == 0, "no output written on failure");
    assert_eq!(lance_dataset_export_split_snapshot(ds.ptr(), first, &mut out, &mut len), 0, "{}", last_message());
    let scoped = lance_snapshot_open(out, len, std::ptr::null());
    assert!(!scoped.is_null(), "{}", last_message());
    lance_bytes_free(out, len);
    let (mut again, mut again_len) = (std::ptr::null_mut::<u8>(), 0usize);
    assert_eq!(lance_dataset_export_split_snapshot(scoped, first, &mut again, &mut again_len), 0, "{}", last_message());
    lance_bytes_free(again, again_len);
    assert_err(lance_dataset_export_split_snapshot(scoped, second, &mut again, &mut again_len), LANCE_ERR_INVALID_ARGUMENT, "does not carry");
    let mut n = 0u64;
    assert_err(lance_dataset_count_rows(scoped, &mut n), LANCE_ERR_INVALID_ARGUMENT, "split-scoped");
    lance_dataset_free(scoped);
    lance_split_free(first);
    lance_split_free(second);
    lance_split_plan_free(plan);
}
