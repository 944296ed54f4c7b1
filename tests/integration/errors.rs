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
        lance_dataset_scan(ds.ptr(), std::ptr::null(), std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    assert_err(
        lance_scan_options_init(std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "out",
    );
    // NULL options = defaults.
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan(ds.ptr(), std::ptr::null(), &mut stream), 0);
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
        lance_dataset_scan(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "columns[0]",
    );
    let mut o = default_opts();
    o.filter_sql = bad.as_ptr() as *const c_char;
    assert_err(
        lance_dataset_scan(ds.ptr(), &o, &mut stream),
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
