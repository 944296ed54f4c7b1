//! Pinned snapshots: open, version, uri, rows, format, schema, fragments, history.

use std::ffi::CStr;

use arrow::datatypes::Schema;
use arrow::ffi::FFI_ArrowSchema;
use lance_host::ffi::dataset::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;

fn count_rows(ds: &Ds) -> u64 {
    let mut n = 0u64;
    assert_eq!(lance_dataset_count_rows(ds.ptr(), &mut n), 0, "{}", last_message());
    n
}

pub(crate) fn fragments(ds: &Ds) -> Vec<LanceFragmentInfo> {
    let mut p = std::ptr::null_mut();
    let mut len = 0usize;
    assert_eq!(lance_dataset_fragments(ds.ptr(), &mut p, &mut len), 0);
    let v = unsafe { std::slice::from_raw_parts(p, len) }.to_vec();
    lance_fragment_info_list_free(p, len);
    v
}

fn versions(ds: &Ds) -> Vec<LanceVersionInfo> {
    let mut p = std::ptr::null_mut();
    let mut len = 0usize;
    assert_eq!(lance_dataset_versions(ds.ptr(), &mut p, &mut len), 0);
    let v = unsafe { std::slice::from_raw_parts(p, len) }.to_vec();
    lance_version_info_list_free(p, len);
    v
}

#[test]
fn open_latest_pins_the_latest_version() {
    let f = &fixture().facts;
    let ds = Ds::open(&people_uri(), 0);
    let latest = f.get_u64("people.versions");
    assert_eq!(lance_dataset_version(ds.ptr()), latest);
    assert_eq!(count_rows(&ds), f.get_u64("people.v3.rows"));
    let uri = unsafe { CStr::from_ptr(lance_dataset_uri(ds.ptr())) };
    assert!(uri.to_str().unwrap().ends_with("people.lance"));
    let mut lv = 0u64;
    assert_eq!(lance_dataset_latest_version(ds.ptr(), &mut lv), 0);
    assert_eq!(lv, latest);
}

#[test]
fn older_version_stays_pinned() {
    let f = &fixture().facts;
    let ds = Ds::open(&people_uri(), 1);
    assert_eq!(lance_dataset_version(ds.ptr()), 1);
    assert_eq!(count_rows(&ds), f.get_u64("people.v1.rows"));
    // The latest version is reported without moving the handle.
    let mut lv = 0u64;
    assert_eq!(lance_dataset_latest_version(ds.ptr(), &mut lv), 0);
    assert_eq!(lv, f.get_u64("people.versions"));
    assert_eq!(lance_dataset_version(ds.ptr()), 1);
    assert_eq!(count_rows(&ds), f.get_u64("people.v1.rows"));
}

#[test]
fn storage_format_is_reported() {
    let ds = Ds::open(&people_uri(), 0);
    let fmt = unsafe { CStr::from_ptr(lance_dataset_storage_format(ds.ptr())) }
        .to_str()
        .unwrap()
        .to_string();
    let (major, minor) = fmt.split_once('.').expect("major.minor");
    assert!(major.parse::<u32>().unwrap() >= 2, "{fmt}");
    minor.parse::<u32>().unwrap();
}

#[test]
fn schema_exports_through_the_c_data_interface() {
    let ds = Ds::open(&people_uri(), 0);
    let mut ffi = FFI_ArrowSchema::empty();
    assert_eq!(lance_dataset_schema(ds.ptr(), &mut ffi), 0);
    let schema = Schema::try_from(&ffi).unwrap();
    let expected = lance_host_testkit::people_schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let expected_names: Vec<&str> = expected.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, expected_names);
    for (a, b) in schema.fields().iter().zip(expected.fields().iter()) {
        assert_eq!(a.data_type(), b.data_type(), "{}", a.name());
    }
}

#[test]
fn fragments_report_rows_and_deletions() {
    let f = &fixture().facts;
    let latest = Ds::open(&people_uri(), 0);
    let frags = fragments(&latest);
    assert_eq!(frags.len() as u64, f.get_u64("people.fragments"));
    let logical: u64 = frags.iter().map(|x| x.logical_rows).sum();
    let physical: u64 = frags.iter().map(|x| x.physical_rows).sum();
    let deleted: u64 = frags.iter().map(|x| x.deleted_rows).sum();
    assert_eq!(logical, f.get_u64("people.v3.rows"));
    assert_eq!(physical, f.get_u64("people.v2.rows"));
    assert_eq!(physical - deleted, logical);
    assert!(deleted > 0);
    assert!(frags.iter().all(|x| x.data_file_count >= 1));
    let mut ids: Vec<u64> = frags.iter().map(|x| x.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), frags.len());
    // Version 1 had fewer fragments and no deletions.
    let v1 = fragments(&Ds::open(&people_uri(), 1));
    assert_eq!(
        v1.iter().map(|x| x.physical_rows).sum::<u64>(),
        f.get_u64("people.v1.rows")
    );
    assert!(v1.iter().all(|x| x.deleted_rows == 0));
}

#[test]
fn version_history_and_open_at_timestamp() {
    let f = &fixture().facts;
    let ds = Ds::open(&events_uri(), 0);
    let history = versions(&ds);
    assert_eq!(history.len() as u64, f.get_u64("events.versions"));
    assert!(history.windows(2).all(|w| w[0].version < w[1].version));
    assert!(history.windows(2).all(|w| w[0].timestamp_ms <= w[1].timestamp_ms));
    let uri = cstr(&events_uri());
    // Within the millisecond after the first commit's: version 1 (unless both share a
    // millisecond). A request names the instant ms.000, and a commit later in that millisecond
    // is after it.
    let first = &history[0];
    let p = lance_dataset_open_at_timestamp(uri.as_ptr(), std::ptr::null(), first.timestamp_ms + 1);
    assert!(!p.is_null(), "{}", last_message());
    let at = Ds(p);
    let expected = history
        .iter()
        .filter(|v| v.timestamp_ms <= first.timestamp_ms)
        .map(|v| v.version)
        .max()
        .unwrap();
    assert_eq!(lance_dataset_version(at.ptr()), expected);
    // In microseconds: the last microsecond of the first commit's millisecond answers as
    // above, the microsecond before that millisecond began nothing.
    let p = lance_dataset_open_at_timestamp_us(uri.as_ptr(), std::ptr::null(), (first.timestamp_ms + 1) * 1000 - 1);
    assert!(!p.is_null(), "{}", last_message());
    assert_eq!(lance_dataset_version(Ds(p).ptr()), expected);
    let p = lance_dataset_open_at_timestamp_us(uri.as_ptr(), std::ptr::null(), first.timestamp_ms * 1000 - 1);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_NOT_FOUND, "timestamp");
    // Far in the future: the latest.
    let p = lance_dataset_open_at_timestamp(uri.as_ptr(), std::ptr::null(), i64::MAX);
    let future = Ds(p);
    assert_eq!(
        lance_dataset_version(future.ptr()),
        history.last().unwrap().version
    );
    // Before the table existed: NOT_FOUND.
    let p = lance_dataset_open_at_timestamp(uri.as_ptr(), std::ptr::null(), first.timestamp_ms - 1);
    assert!(p.is_null());
    assert_err(last_code(), LANCE_ERR_NOT_FOUND, "timestamp");
}

#[test]
fn storage_options_are_accepted() {
    let uri = cstr(&events_uri());
    let (_keep, ptrs) = kv(&[("block_size", "8192")]);
    let p = lance_dataset_open(uri.as_ptr(), ptrs.as_ptr(), 0);
    assert!(!p.is_null(), "{}", last_message());
    lance_dataset_free(p);
}
