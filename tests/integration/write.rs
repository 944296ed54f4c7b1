//! Writes through the C ABI: whole writes, staged writes with one commit (exactly once,
//! conflicts, abort) and deletes, on tables the tests create; read back through the library.
//! pylance reads what these functions write in tests/python/test_write.py.

use std::ffi::c_char;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::dataset::*;
use lance_host::ffi::split::lance_bytes_free;
use lance_host::ffi::write::*;
use lance_host::ffi::changes_by_predicate::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;

pub(crate) fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]))
}

pub(crate) fn rows(ids: std::ops::Range<i64>) -> RecordBatch {
    let names: Vec<Option<String>> = ids.clone().map(|i| (i % 5 != 0).then(|| format!("n{i}"))).collect();
    RecordBatch::try_new(
        schema(),
        vec![Arc::new(Int64Array::from_iter_values(ids)), Arc::new(StringArray::from(names))],
    )
    .unwrap()
}

/// A host stream over `batches` (several batches per range, to exercise streaming).
pub(crate) fn stream_of(batches: Vec<RecordBatch>) -> FFI_ArrowArrayStream {
    let schema = batches.first().map(|b| b.schema()).unwrap_or_else(schema);
    FFI_ArrowArrayStream::new(Box::new(RecordBatchIterator::new(batches.into_iter().map(Ok), schema)))
}

pub(crate) fn params(mode: LanceWriteMode) -> LanceWriteParams {
    let mut p = std::mem::MaybeUninit::<LanceWriteParams>::uninit();
    assert_eq!(lance_write_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceWriteParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    p.mode = mode as i32;
    p
}

pub(crate) fn result() -> LanceWriteResult {
    LanceWriteResult { struct_size: std::mem::size_of::<LanceWriteResult>(), ..Default::default() }
}

pub(crate) fn table_uri(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap().keep();
    dir.join(format!("{name}.lance")).to_str().unwrap().to_string()
}

pub(crate) fn write(uri: &str, at: *const LanceDataset, batches: Vec<RecordBatch>, p: &LanceWriteParams) -> Result<(Ds, LanceWriteResult), (i32, String)> {
    let u = cstr(uri);
    let mut data = stream_of(batches);
    let mut out: *mut LanceDataset = std::ptr::null_mut();
    let mut r = result();
    let rc = lance_table_write(u.as_ptr(), at, &mut data, p, &mut out, &mut r);
    assert!(data.release.is_none(), "the library takes the stream, also on failure");
    if rc != 0 {
        return Err((rc, last_message()));
    }
    Ok((Ds(out), r))
}

pub(crate) fn ids_of(ds: &Ds) -> Vec<i64> {
    let mut ids = i64_column(&scan(ds, &default_opts()).unwrap(), "id");
    ids.sort();
    ids
}

pub(crate) fn stage(uri: &str, at: *const LanceDataset, batches: Vec<RecordBatch>, p: &LanceWriteParams) -> Result<Vec<u8>, (i32, String)> {
    let u = cstr(uri);
    let mut data = stream_of(batches);
    let (mut out, mut len) = (std::ptr::null_mut(), 0usize);
    let mut r = result();
    let rc = lance_table_stage_write(u.as_ptr(), at, &mut data, p, &mut out, &mut len, &mut r);
    if rc != 0 {
        return Err((rc, last_message()));
    }
    let bytes = unsafe { std::slice::from_raw_parts(out, len) }.to_vec();
    lance_bytes_free(out, len);
    assert_eq!((r.version, r.committed), (0, 0));
    assert!(r.rows_written > 0 && r.files_written > 0 && r.bytes_written > 0);
    Ok(bytes)
}

pub(crate) fn commit(uri: &str, staged: &[Vec<u8>], p: &LanceWriteParams) -> Result<(Ds, LanceWriteResult), (i32, String)> {
    let u = cstr(uri);
    let ptrs: Vec<*const u8> = staged.iter().map(|b| b.as_ptr()).collect();
    let lens: Vec<usize> = staged.iter().map(|b| b.len()).collect();
    let mut out: *mut LanceDataset = std::ptr::null_mut();
    let mut r = result();
    let rc = lance_table_commit(u.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), staged.len(), p, &mut out, &mut r);
    if rc != 0 {
        return Err((rc, last_message()));
    }
    Ok((Ds(out), r))
}

pub(crate) fn data_files(uri: &str) -> usize {
    std::fs::read_dir(std::path::Path::new(uri).join("data")).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn create_append_overwrite_and_delete_make_one_version_each() {
    let uri = table_uri("whole");
    let mut p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    p.max_rows_per_file = 300;
    let msg = cstr("first load");
    p.commit_message = msg.as_ptr();
    let (v1, r) = write(&uri, std::ptr::null(), vec![rows(0..500), rows(500..1000)], &p).unwrap();
    assert_eq!((r.version, r.rows_written, r.committed), (1, 1000, 1));
    assert_eq!(r.files_written, 4, "1000 rows at 300 per file");
    assert!(r.bytes_written > 0);
    assert_eq!(ids_of(&v1), (0..1000).collect::<Vec<_>>());
    // the commit message is where pylance keeps it
    let ds = lance_host::session::block_on(lance::Dataset::open(&uri)).unwrap().unwrap();
    let txn = lance_host::session::block_on(ds.read_transaction_by_version(1)).unwrap().unwrap().unwrap();
    assert_eq!(txn.transaction_properties.unwrap().get("__lance_commit_message").map(String::as_str), Some("first load"));

    // a create of an existing table fails and leaves it alone
    let err = write(&uri, std::ptr::null(), vec![rows(0..10)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    assert!(err.1.contains("already exists"), "{}", err.1);

    let (v2, r) = write(&uri, v1.ptr(), vec![rows(1000..1100)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    assert_eq!((r.version, r.rows_written), (2, 100));
    assert_eq!(ids_of(&v2).len(), 1100);
    assert_eq!(ids_of(&v1).len(), 1000, "a handle keeps its version");

    let mut del = result();
    let (mut out, pred) = (std::ptr::null_mut(), cstr("id % 2 = 1"));
    assert_eq!(lance_dataset_delete(v2.ptr(), pred.as_ptr(), std::ptr::null(), &mut out, &mut del), 0, "{}", last_message());
    let v3 = Ds(out);
    assert_eq!((del.version, del.rows_deleted, del.committed), (3, 550, 1));
    assert!(ids_of(&v3).iter().all(|i| i % 2 == 0));
    let none = cstr("id < 0");
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_delete(v3.ptr(), none.as_ptr(), std::ptr::null(), &mut out, &mut del), 0);
    let v4 = Ds(out);
    assert_eq!((del.version, del.rows_deleted, del.committed), (4, 0, 1), "as pylance: a version that deletes nothing");
    assert_eq!(ids_of(&v4), ids_of(&v3));
    for (bad, needle) in [("id <<< 3", "id <<< 3"), ("nope = 1", "nope"), ("   ", "empty")] {
        let b = cstr(bad);
        let mut out = std::ptr::null_mut();
        assert_err(lance_dataset_delete(v3.ptr(), b.as_ptr(), std::ptr::null(), &mut out, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, needle);
        assert!(out.is_null());
    }

    let (v5, r) = write(&uri, std::ptr::null(), vec![rows(7..9)], &params(LanceWriteMode::LANCE_WRITE_OVERWRITE)).unwrap();
    assert_eq!((r.version, r.rows_written), (5, 2));
    assert_eq!(ids_of(&v5), vec![7, 8]);
    assert_eq!(ids_of(&Ds::open(&uri, 3)).len(), 550, "older versions stay readable");
}

#[test]
fn bad_writes_are_clear_errors_and_write_nothing() {
    let uri = table_uri("bad");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..10)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let files = data_files(&uri);
    // another schema
    let other = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(other, vec![Arc::new(StringArray::from(vec!["x"]))]).unwrap();
    let err = write(&uri, v1.ptr(), vec![batch], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    // a NULL into a non-nullable column
    let nullable = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true), Field::new("name", DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(
        nullable,
        vec![Arc::new(Int64Array::from(vec![Some(1), None])), Arc::new(StringArray::from(vec![Some("a"), Some("b")]))],
    )
    .unwrap();
    let err = write(&uri, v1.ptr(), vec![batch], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    // bad parameters
    let mut p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    p.mode = 7;
    assert_eq!(write(&uri, v1.ptr(), vec![rows(0..1)], &p).unwrap_err().0, LANCE_ERR_INVALID_ARGUMENT as i32);
    let mut p = params(LanceWriteMode::LANCE_WRITE_OVERWRITE);
    let v = cstr("9.9");
    p.storage_version = v.as_ptr();
    let err = write(&uri, std::ptr::null(), vec![rows(0..1)], &p).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("9.9"), "{err:?}");
    // a handle of another table
    let other_uri = table_uri("other");
    let err = write(&other_uri, v1.ptr(), vec![rows(0..1)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("not of"), "{err:?}");
    // a host stream that fails halfway: nothing committed
    let failing = RecordBatchIterator::new(
        vec![Ok(rows(100..200)), Err(arrow::error::ArrowError::ComputeError("the host's source broke".into()))],
        schema(),
    );
    let mut data = FFI_ArrowArrayStream::new(Box::new(failing));
    let u = cstr(&uri);
    let rc = lance_table_write(u.as_ptr(), v1.ptr(), &mut data, &params(LanceWriteMode::LANCE_WRITE_APPEND), std::ptr::null_mut(), std::ptr::null_mut());
    assert_ne!(rc, 0);
    assert!(last_message().contains("the host's source broke"), "{}", last_message());
    // NULLs
    let p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    assert_err(lance_table_write(u.as_ptr(), v1.ptr(), std::ptr::null_mut(), &p, std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "data");
    let mut data = stream_of(vec![rows(0..1)]);
    assert_err(lance_table_write(std::ptr::null(), v1.ptr(), &mut data, &p, std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "uri");
    assert!(data.release.is_none());
    let mut small = result();
    small.struct_size = 8;
    let mut data = stream_of(vec![rows(0..1)]);
    assert_err(lance_table_write(u.as_ptr(), v1.ptr(), &mut data, &p, std::ptr::null_mut(), &mut small), LANCE_ERR_INVALID_ARGUMENT, "LanceWriteResult");

    let latest = Ds::open(&uri, 0);
    assert_eq!(lance_dataset_version(latest.ptr()), 1, "no failed write made a version");
    assert_eq!(ids_of(&latest), (0..10).collect::<Vec<_>>());
    assert_eq!(data_files(&uri), files, "the failed writes left no file behind");
    // a worker that staged and died before its share was committed or aborted leaves files
    // no version references; cleanup with delete_unverified removes exactly those
    let orphan = stage(&uri, latest.ptr(), vec![rows(500..600)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    drop(orphan);
    assert_eq!(data_files(&uri), files + 1);
    let mut removed_versions = u64::MAX;
    assert_eq!(lance_host::ffi::maintenance::lance_dataset_cleanup(latest.ptr(), 0, true, &mut removed_versions, std::ptr::null_mut()), 0, "{}", last_message());
    assert_eq!(removed_versions, 0);
    assert_eq!(data_files(&uri), files, "only the committed version's files remain");
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..10).collect::<Vec<_>>());
}

#[test]
fn staged_writes_of_many_workers_commit_as_one_version_exactly_once() {
    let uri = table_uri("staged");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..100)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    // the coordinator ships its pinned version as a snapshot token; workers stage on it
    let (mut tok, mut tok_len) = (std::ptr::null_mut(), 0usize);
    assert_eq!(lance_dataset_export_snapshot(v1.ptr(), &mut tok, &mut tok_len), 0);
    let token = unsafe { std::slice::from_raw_parts(tok, tok_len) }.to_vec();
    lance_bytes_free(tok, tok_len);
    let staged: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|w| {
                let (token, uri) = (token.clone(), uri.clone());
                s.spawn(move || {
                    let worker = Ds(lance_snapshot_open(token.as_ptr(), token.len(), std::ptr::null()));
                    assert!(!worker.0.is_null(), "{}", last_message());
                    let start = 1000 * (w + 1);
                    stage(&uri, worker.ptr(), vec![rows(start..start + 200), rows(start + 200..start + 250)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(staged.iter().all(|b| b.len() < 4096), "staged bytes carry no rows");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 1, "staging commits nothing");

    let mut p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    let stmt = cstr("query-42");
    p.statement_id = stmt.as_ptr();
    let (v2, r) = commit(&uri, &staged, &p).unwrap();
    assert_eq!((r.version, r.rows_written, r.committed), (2, 750, 1));
    let mut want: Vec<i64> = (0..100).collect();
    for w in 1..=3 {
        want.extend(1000 * w..1000 * w + 250);
    }
    assert_eq!(ids_of(&v2), want);
    // a retried coordinator: the same statement returns the same version, rows appear once
    let (again, r) = commit(&uri, &staged, &p).unwrap();
    assert_eq!((r.version, r.rows_written, r.committed), (2, 750, 0));
    assert_eq!(ids_of(&again), want);
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 2);

    // damaged, truncated, foreign and mixed bytes
    let mut damaged = staged[0].clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0xff;
    let truncated = staged[0][..staged[0].len() - 9].to_vec();
    let mut future = staged[0].clone();
    future[4] = 99;
    for (bytes, code, needle) in [
        (damaged, LANCE_ERR_CORRUPT, "checksum"),
        (truncated, LANCE_ERR_CORRUPT, "staged[0]"),
        (b"LHSPnot staged".to_vec(), LANCE_ERR_CORRUPT, "bad magic"),
        (future, LANCE_ERR_NOT_SUPPORTED, "format 99"),
    ] {
        let err = commit(&uri, &[bytes], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
        assert_eq!(err.0, code as i32, "{}", err.1);
        assert!(err.1.contains(needle), "{}", err.1);
    }
    let err = commit(&table_uri("elsewhere"), &staged, &p).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("not of"), "{err:?}");
    assert_err(
        lance_table_commit(cstr(&uri).as_ptr(), std::ptr::null(), std::ptr::null(), 0, &p, std::ptr::null_mut(), std::ptr::null_mut()),
        LANCE_ERR_INVALID_ARGUMENT,
        "no staged writes",
    );
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 2);
}

#[test]
fn an_overwrite_raced_by_an_append_is_a_conflict_and_aborted_stages_leave_no_files() {
    let uri = table_uri("race");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..100)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let before = data_files(&uri);
    let overwrite = stage(&uri, v1.ptr(), vec![rows(500..600)], &params(LanceWriteMode::LANCE_WRITE_OVERWRITE)).unwrap();
    let late_append = stage(&uri, v1.ptr(), vec![rows(900..910)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    assert_eq!(data_files(&uri), before + 2, "staged files exist but belong to no version");
    // another writer appends first
    let (v2, _) = write(&uri, v1.ptr(), vec![rows(100..150)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    let err = commit(&uri, &[overwrite.clone()], &params(LanceWriteMode::LANCE_WRITE_OVERWRITE)).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_CONFLICT as i32, "{}", err.1);
    assert!(err.1.contains("planned at version 1"), "{}", err.1);
    let latest = Ds::open(&uri, 0);
    assert_eq!(lance_dataset_version(latest.ptr()), 2, "the table is intact");
    assert_eq!(ids_of(&latest), ids_of(&v2));
    // the appender's work is still compatible and commits
    let (v3, _) = commit(&uri, &[late_append], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    assert_eq!(ids_of(&v3).len(), 160);
    // the losing overwrite is aborted: its files go, twice is fine
    let files_before_abort = data_files(&uri);
    let ptrs = [overwrite.as_ptr()];
    let lens = [overwrite.len()];
    let mut deleted = 0u64;
    assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), 1, std::ptr::null(), &mut deleted), 0, "{}", last_message());
    assert_eq!(deleted, 1);
    assert_eq!(data_files(&uri), files_before_abort - 1);
    assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), 1, std::ptr::null(), &mut deleted), 0);
    assert_eq!(deleted, 0);
    assert_eq!(ids_of(&Ds::open(&uri, 0)).len(), 160, "aborting touched no committed file");
    let _ = std::ptr::null::<c_char>();
}

#[test]
fn staged_creates_of_several_workers_make_a_table() {
    let uri = table_uri("created");
    let p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    let parts: Vec<Vec<u8>> = (0..2).map(|w| stage(&uri, std::ptr::null(), vec![rows(w * 100..w * 100 + 100)], &p).unwrap()).collect();
    let (ds, r) = commit(&uri, &parts, &p).unwrap();
    assert_eq!((r.version, r.rows_written), (1, 200));
    assert_eq!(ids_of(&ds), (0..200).collect::<Vec<_>>());
    // an append staged without the planned-at handle is refused
    let err = stage(&uri, std::ptr::null(), vec![rows(0..1)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("planned at"), "{err:?}");
    // committing the creates again: the table exists now
    let err = commit(&uri, &parts, &p).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("already exists"), "{err:?}");
}

#[test]
fn update_and_merge_insert_count_what_they_did() {
    let uri = table_uri("rows");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..100)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    // UPDATE t SET name = 'even' WHERE id % 2 = 0
    let cols = cstrs(&["name"]);
    let exprs = cstrs(&["'even'"]);
    let pred = cstr("id % 2 = 0");
    let (mut out, mut r) = (std::ptr::null_mut(), result());
    assert_eq!(lance_dataset_update(v1.ptr(), cols.ptrs.as_ptr(), exprs.ptrs.as_ptr(), 1, pred.as_ptr(), std::ptr::null(), &mut out, &mut r), 0, "{}", last_message());
    let v2 = Ds(out);
    assert_eq!((r.version, r.rows_updated, r.committed), (2, 50, 1));
    let mut o = default_opts();
    let f = cstr("name = 'even'");
    o.filter_sql = f.as_ptr();
    assert_eq!(total_rows(&scan(&v2, &o).unwrap()), 50);
    for (c, e, needle) in [("nope", "1", "nope"), ("id", "id +", "id +"), ("id", "'text'", "id")] {
        let (c, e) = (cstrs(&[c]), cstrs(&[e]));
        let mut out = std::ptr::null_mut();
        assert_err(lance_dataset_update(v2.ptr(), c.ptrs.as_ptr(), e.ptrs.as_ptr(), 1, std::ptr::null(), std::ptr::null(), &mut out, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, needle);
        assert!(out.is_null());
    }
    assert_err(lance_dataset_update(v2.ptr(), cols.ptrs.as_ptr(), exprs.ptrs.as_ptr(), 0, std::ptr::null(), std::ptr::null(), &mut out, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "at least one");

    // MERGE INTO t USING source ON id: upsert ids 90..120 (10 match, 20 new)
    let on = cstrs(&["id"]);
    let mut m = std::mem::MaybeUninit::<LanceMergeInsert>::uninit();
    assert_eq!(lance_merge_insert_init_v2(m.as_mut_ptr(), std::mem::size_of::<LanceMergeInsert>()), 0);
    let mut m = unsafe { m.assume_init() };
    m.on = on.ptrs.as_ptr();
    m.num_on = 1;
    m.when_matched = LanceWhenMatched::LANCE_WHEN_MATCHED_UPDATE_ALL as i32;
    let mut data = stream_of(vec![rows(90..120)]);
    let (mut out, mut r) = (std::ptr::null_mut(), result());
    assert_eq!(lance_dataset_merge_insert(v2.ptr(), &mut data, &m, std::ptr::null(), &mut out, &mut r), 0, "{}", last_message());
    let v3 = Ds(out);
    assert_eq!((r.version, r.rows_inserted, r.rows_updated, r.rows_deleted), (3, 20, 10, 0));
    assert_eq!(ids_of(&v3), (0..120).collect::<Vec<_>>());
    // a key column the table lacks, a bad rule, a missing condition: errors, nothing written
    let bad_on = cstrs(&["nope"]);
    let mut bad = m;
    bad.on = bad_on.ptrs.as_ptr();
    let mut data = stream_of(vec![rows(0..1)]);
    assert_err(lance_dataset_merge_insert(v3.ptr(), &mut data, &bad, std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "nope");
    assert!(data.release.is_none());
    let mut bad = m;
    bad.when_matched = 9;
    let mut data = stream_of(vec![rows(0..1)]);
    assert_err(lance_dataset_merge_insert(v3.ptr(), &mut data, &bad, std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "LanceWhenMatched");
    let mut bad = m;
    bad.when_matched = LanceWhenMatched::LANCE_WHEN_MATCHED_UPDATE_IF as i32;
    let mut data = stream_of(vec![rows(0..1)]);
    assert_err(lance_dataset_merge_insert(v3.ptr(), &mut data, &bad, std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "when_matched_condition");
    let mut data = stream_of(vec![rows(0..1)]);
    assert_err(lance_dataset_merge_insert(v3.ptr(), &mut data, std::ptr::null(), std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "spec is NULL");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 3);
}

#[test]
fn compaction_tags_restore_and_cleanup() {
    use lance_host::ffi::maintenance::*;
    let uri = table_uri("maint");
    let (mut latest, _) = write(&uri, std::ptr::null(), vec![rows(0..100)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    for i in 1..6 {
        let (next, _) = write(&uri, latest.ptr(), vec![rows(i * 100..i * 100 + 100)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
        latest = next;
    }
    assert_eq!(lance_dataset_version(latest.ptr()), 6);
    // tag version 3, then compact six small fragments into one
    let tag = cstr("before-compaction");
    assert_eq!(lance_dataset_create_tag(latest.ptr(), tag.as_ptr(), 3), 0, "{}", last_message());
    assert_ne!(lance_dataset_create_tag(latest.ptr(), tag.as_ptr(), 3), 0, "a tag exists once");
    let bad = cstr("no/slash");
    assert_err(lance_dataset_create_tag(latest.ptr(), bad.as_ptr(), 0), LANCE_ERR_INVALID_ARGUMENT, "bad tag name");
    let mut p = std::mem::MaybeUninit::<LanceCompactParams>::uninit();
    assert_eq!(lance_compact_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceCompactParams>()), 0);
    let p = unsafe { p.assume_init() };
    let mut r = LanceCompactResult { struct_size: std::mem::size_of::<LanceCompactResult>(), ..Default::default() };
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_compact(latest.ptr(), &p, &mut out, &mut r), 0, "{}", last_message());
    let compacted = Ds(out);
    // (Lance may commit a fragment-id reservation before the rewrite: one or two versions)
    assert!(r.version > 6 && r.version == lance_dataset_version(compacted.ptr()));
    assert_eq!((r.fragments_removed, r.fragments_added), (6, 1));
    assert_eq!(ids_of(&compacted), (0..600).collect::<Vec<_>>());
    let mut frags = std::ptr::null_mut();
    let mut n = 0;
    assert_eq!(lance_dataset_fragments(compacted.ptr(), &mut frags, &mut n), 0);
    lance_fragment_info_list_free(frags, n);
    assert_eq!(n, 1);
    let mut bad_p = p;
    bad_p.deletion_threshold = 2.0;
    assert_err(lance_dataset_compact(compacted.ptr(), &bad_p, std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "threshold");

    // the tag lists, opens its version and survives a cleanup of everything older than now
    let mut tags = std::ptr::null_mut();
    assert_eq!(lance_dataset_tags(compacted.ptr(), &mut tags), 0);
    assert_eq!(lance_tag_list_count(tags), 1);
    assert_eq!(unsafe { std::ffi::CStr::from_ptr(lance_tag_list_name(tags, 0)) }.to_str().unwrap(), "before-compaction");
    assert_eq!(lance_tag_list_version(tags, 0), 3);
    assert!(lance_tag_list_name(tags, 1).is_null());
    lance_tag_list_free(tags);
    let u = cstr(&uri);
    let tagged = Ds(lance_dataset_open_tag(u.as_ptr(), std::ptr::null(), tag.as_ptr()));
    assert!(!tagged.0.is_null(), "{}", last_message());
    assert_eq!(lance_dataset_version(tagged.ptr()), 3);
    let missing = cstr("missing");
    assert!(lance_dataset_open_tag(u.as_ptr(), std::ptr::null(), missing.as_ptr()).is_null());
    assert_eq!(last_code(), LANCE_ERR_NOT_FOUND as i32, "{}", last_message());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (mut versions, mut bytes) = (0u64, 0u64);
    assert_eq!(lance_dataset_cleanup(compacted.ptr(), 1, false, &mut versions, &mut bytes), 0, "{}", last_message());
    assert!(versions >= 5 && bytes > 0, "{versions} versions, {bytes} bytes");
    assert_eq!(ids_of(&Ds::open(&uri, 3)), (0..300).collect::<Vec<_>>(), "the tagged version stays");
    assert!(lance_dataset_open(u.as_ptr(), std::ptr::null(), 2).is_null(), "an untagged old version is gone");
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..600).collect::<Vec<_>>());

    // restore the tagged version as the latest, then delete the tag
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_restore(tagged.ptr(), &mut out), 0, "{}", last_message());
    let restored = Ds(out);
    assert_eq!(lance_dataset_version(restored.ptr()), r.version + 1);
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..300).collect::<Vec<_>>());
    assert_eq!(lance_dataset_delete_tag(restored.ptr(), tag.as_ptr()), 0, "{}", last_message());
    assert_ne!(lance_dataset_delete_tag(restored.ptr(), tag.as_ptr()), 0);
}

fn deletion_files(uri: &str) -> usize {
    std::fs::read_dir(std::path::Path::new(uri).join("_deletions")).map(|d| d.count()).unwrap_or(0)
}

/// Stage a delete on `split` (may be NULL) of `at`; the staged bytes and what the share deleted.
fn stage_delete(at: &Ds, split: *const lance_host::ffi::handles::LanceSplit, predicate: &str) -> Result<(Vec<u8>, LanceWriteResult), (i32, String)> {
    let pred = cstr(predicate);
    let (mut out, mut len, mut r) = (std::ptr::null_mut(), 0usize, result());
    let rc = lance_dataset_stage_delete(at.ptr(), split, pred.as_ptr(), &mut out, &mut len, &mut r);
    if rc != 0 {
        return Err((rc, last_message()));
    }
    let bytes = unsafe { std::slice::from_raw_parts(out, len) }.to_vec();
    lance_bytes_free(out, len);
    assert_eq!((r.version, r.committed), (0, 0));
    Ok((bytes, r))
}

#[test]
fn staged_deletes_of_many_workers_commit_as_one_delete() {
    use lance_host::ffi::split::*;
    let uri = table_uri("staged_delete");
    let mut p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    p.max_rows_per_file = 100;
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..400)], &p).unwrap();
    // the coordinator plans one scan split per fragment and ships them; each worker deletes in
    // its share: ids divisible by 3, and the whole of 300..400 (a fragment that disappears)
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan(v1.ptr(), 0, &mut plan), 0, "{}", last_message());
    let n = lance_split_plan_count(plan);
    assert_eq!(n, 4);
    let split_bytes: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let split = lance_split_plan_get(plan, i);
            let (mut b, mut len) = (std::ptr::null_mut(), 0usize);
            assert_eq!(lance_split_serialize(split, &mut b, &mut len), 0);
            let v = unsafe { std::slice::from_raw_parts(b, len) }.to_vec();
            lance_bytes_free(b, len);
            lance_split_free(split);
            v
        })
        .collect();
    lance_split_plan_free(plan);
    let predicate = "id % 3 = 0 OR id >= 300";
    let shares: Vec<(Vec<u8>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = split_bytes
            .iter()
            .map(|b| {
                let uri = uri.clone();
                s.spawn(move || {
                    let split = lance_split_deserialize(b.as_ptr(), b.len());
                    assert!(!split.is_null(), "{}", last_message());
                    let worker = Ds::open(&uri, 1);
                    let (bytes, r) = stage_delete(&worker, split, predicate).unwrap();
                    lance_split_free(split);
                    (bytes, r.rows_deleted)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let want_deleted = (0..400).filter(|i| i % 3 == 0 || *i >= 300).count() as u64;
    assert_eq!(shares.iter().map(|s| s.1).sum::<u64>(), want_deleted);
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 1, "staging commits nothing");
    assert_eq!(ids_of(&Ds::open(&uri, 0)).len(), 400);

    // two shares of one fragment, and shares of two statements, are refused
    let staged: Vec<Vec<u8>> = shares.iter().map(|s| s.0.clone()).collect();
    let err = commit(&uri, &[staged[0].clone(), staged[0].clone()], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("two staged deletes"), "{err:?}");
    let (other, _) = stage_delete(&Ds::open(&uri, 1), std::ptr::null(), "id = 5").unwrap();
    let err = commit(&uri, &[staged[1].clone(), other.clone()], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("one delete statement"), "{err:?}");
    let mut deleted = 0u64;
    let (ptrs, lens) = ([other.as_ptr()], [other.len()]);
    assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), 1, std::ptr::null(), &mut deleted), 0, "{}", last_message());
    assert_eq!(deleted, 1, "the aborted share's deletion file");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 1);

    let mut p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    let stmt = cstr("delete-7");
    p.statement_id = stmt.as_ptr();
    let (v2, r) = commit(&uri, &staged, &p).unwrap();
    assert_eq!((r.version, r.rows_deleted, r.committed), (2, want_deleted, 1));
    let want: Vec<i64> = (0..300).filter(|i| i % 3 != 0).collect();
    assert_eq!(ids_of(&v2), want);
    let frags = crate::dataset::fragments(&v2);
    assert_eq!(frags.len(), 3, "the fragment whose rows all went is gone");
    assert_eq!(frags.iter().map(|f| f.deleted_rows).sum::<u64>(), 100);
    let (_, r) = commit(&uri, &staged, &p).unwrap();
    assert_eq!((r.version, r.committed), (2, 0), "exactly once");
    // aborting the committed shares deletes nothing the table uses
    let files = deletion_files(&uri);
    let ptrs: Vec<*const u8> = staged.iter().map(|b| b.as_ptr()).collect();
    let lens: Vec<usize> = staged.iter().map(|b| b.len()).collect();
    assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), staged.len(), std::ptr::null(), &mut deleted), 0);
    assert_eq!((deleted, deletion_files(&uri)), (0, files));
    assert_eq!(ids_of(&Ds::open(&uri, 0)), want);
    // a pinned reader of version 1 still reads all its rows
    assert_eq!(ids_of(&v1).len(), 400);

    // bad input: a predicate that does not parse, a split of another version, a search split
    let err = stage_delete(&v2, std::ptr::null(), "id = = 1").unwrap_err();
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    let split = lance_split_deserialize(split_bytes[0].as_ptr(), split_bytes[0].len());
    let err = stage_delete(&v2, split, "id = 1").unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("version 1"), "{err:?}");
    lance_split_free(split);
    assert_err(lance_dataset_stage_delete(v2.ptr(), std::ptr::null(), std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "predicate");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 2);
}

#[test]
fn a_staged_merge_insert_commits_alone_and_aborts_cleanly() {
    let uri = table_uri("staged_merge");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..100)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let on = cstrs(&["id"]);
    let mut m = std::mem::MaybeUninit::<LanceMergeInsert>::uninit();
    assert_eq!(lance_merge_insert_init_v2(m.as_mut_ptr(), std::mem::size_of::<LanceMergeInsert>()), 0);
    let mut m = unsafe { m.assume_init() };
    m.on = on.ptrs.as_ptr();
    m.num_on = 1;
    m.when_matched = LanceWhenMatched::LANCE_WHEN_MATCHED_UPDATE_ALL as i32;
    let stage_merge = |at: &Ds, ids: std::ops::Range<i64>| {
        let mut data = stream_of(vec![rows(ids)]);
        let (mut out, mut len, mut r) = (std::ptr::null_mut(), 0usize, result());
        assert_eq!(lance_dataset_stage_merge_insert(at.ptr(), &mut data, &m, &mut out, &mut len, &mut r), 0, "{}", last_message());
        let bytes = unsafe { std::slice::from_raw_parts(out, len) }.to_vec();
        lance_bytes_free(out, len);
        (bytes, r)
    };
    // one that is aborted: its new files go, the table is as it was
    let files = data_files(&uri);
    let (dropped, _) = stage_merge(&v1, 50..60);
    assert!(data_files(&uri) > files);
    let mut deleted = 0u64;
    let (ptrs, lens) = ([dropped.as_ptr()], [dropped.len()]);
    assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), 1, std::ptr::null(), &mut deleted), 0, "{}", last_message());
    assert!(deleted >= 1);
    assert_eq!(data_files(&uri), files);
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..100).collect::<Vec<_>>());

    let (staged, r) = stage_merge(&v1, 90..130);
    assert_eq!((r.rows_inserted, r.rows_updated, r.version), (30, 10, 0));
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 1);
    let err = commit(&uri, &[staged.clone(), staged.clone()], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("alone"), "{err:?}");
    let mut p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    let msg = cstr("upsert batch 3");
    p.commit_message = msg.as_ptr();
    let (v2, r) = commit(&uri, &[staged], &p).unwrap();
    assert_eq!((r.version, r.rows_inserted, r.rows_updated, r.committed), (2, 30, 10, 1));
    assert_eq!(ids_of(&v2), (0..130).collect::<Vec<_>>());
}

fn compact_params(target_rows: u64) -> lance_host::ffi::maintenance::LanceCompactParams {
    use lance_host::ffi::maintenance::*;
    let mut p = std::mem::MaybeUninit::<LanceCompactParams>::uninit();
    assert_eq!(lance_compact_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceCompactParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    p.target_rows_per_fragment = target_rows;
    p
}

#[test]
fn a_compaction_planned_once_runs_on_workers_and_commits_once() {
    use lance_host::ffi::maintenance::*;
    let uri = table_uri("dist_compact");
    let (mut latest, _) = write(&uri, std::ptr::null(), vec![rows(0..50)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    for i in 1..8 {
        let (next, _) = write(&uri, latest.ptr(), vec![rows(i * 50..i * 50 + 50)], &params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
        latest = next;
    }
    // 8 fragments of 50 rows, target 200 rows: tasks of fragments to merge
    let p = compact_params(200);
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_compaction(latest.ptr(), &p, &mut plan), 0, "{}", last_message());
    let n = lance_bytes_list_count(plan);
    assert!(n >= 2, "{n} tasks");
    let tasks: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut len = 0usize;
            let ptr = lance_bytes_list_get(plan, i, &mut len);
            assert!(!ptr.is_null());
            unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()
        })
        .collect();
    let mut len = 0usize;
    assert!(lance_bytes_list_get(plan, n, &mut len).is_null());
    assert!(last_message().contains("out of range"));
    lance_bytes_list_free(plan);
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 8, "planning commits nothing");

    // workers: each opens the table itself and executes one task
    let results: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = tasks
            .iter()
            .map(|t| {
                let uri = uri.clone();
                s.spawn(move || {
                    let worker = Ds::open(&uri, 8);
                    let (mut out, mut len) = (std::ptr::null_mut(), 0usize);
                    assert_eq!(lance_compaction_task_execute(worker.ptr(), t.as_ptr(), t.len(), &mut out, &mut len), 0, "{}", last_message());
                    let v = unsafe { std::slice::from_raw_parts(out, len) }.to_vec();
                    lance_bytes_free(out, len);
                    v
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 8, "executing commits nothing");

    // damaged bytes, a task where a result belongs, results of another table
    let mut damaged = results[0].clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x55;
    let commit_results = |ds: &Ds, rs: &[Vec<u8>]| {
        let ptrs: Vec<*const u8> = rs.iter().map(|b| b.as_ptr()).collect();
        let lens: Vec<usize> = rs.iter().map(|b| b.len()).collect();
        let mut r = LanceCompactResult { struct_size: std::mem::size_of::<LanceCompactResult>(), ..Default::default() };
        let mut out = std::ptr::null_mut();
        let rc = lance_dataset_commit_compaction(ds.ptr(), ptrs.as_ptr(), lens.as_ptr(), rs.len(), &p, &mut out, &mut r);
        (rc, if rc == 0 { Some(Ds(out)) } else { None }, r, last_message())
    };
    let (rc, _, _, msg) = commit_results(&latest, &[damaged]);
    assert!(rc == LANCE_ERR_CORRUPT as i32 && msg.contains("results[0]"), "{rc} {msg}");
    let (rc, _, _, msg) = commit_results(&latest, &[tasks[0].clone()]);
    assert!(rc == LANCE_ERR_CORRUPT as i32 && msg.contains("bad magic"), "{rc} {msg}");
    let other = Ds::open(&{
        let o = table_uri("other");
        write(&o, std::ptr::null(), vec![rows(0..10)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
        o
    }, 0);
    let (rc, _, _, msg) = commit_results(&other, &results);
    assert!(rc == LANCE_ERR_INVALID_ARGUMENT as i32 && msg.contains("not of"), "{rc} {msg}");
    let mut out = std::ptr::null_mut();
    let mut len = 0usize;
    assert_err(lance_compaction_task_execute(other.ptr(), tasks[0].as_ptr(), tasks[0].len(), &mut out, &mut len), LANCE_ERR_INVALID_ARGUMENT, "not of");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 8);

    // the coordinator commits every result as one version
    let (rc, compacted, r, msg) = commit_results(&latest, &results);
    assert_eq!(rc, 0, "{msg}");
    let compacted = compacted.unwrap();
    assert!(r.version > 8 && r.version == lance_dataset_version(compacted.ptr()));
    assert_eq!(r.fragments_removed, 8);
    assert_eq!(r.fragments_added, 2);
    assert_eq!(ids_of(&compacted), (0..400).collect::<Vec<_>>());
    assert_eq!(crate::dataset::fragments(&compacted).len(), 2);
    assert_eq!(ids_of(&latest).len(), 400, "the handle planned on keeps its version");
    // nothing to compact: an empty plan
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_compaction(compacted.ptr(), &p, &mut plan), 0);
    assert_eq!(lance_bytes_list_count(plan), 0);
    lance_bytes_list_free(plan);
}

#[test]
fn columns_are_added_from_expressions_or_as_nulls_and_dropped() {
    use lance_host::ffi::maintenance::*;
    let uri = table_uri("columns");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..100)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let names = cstrs(&["twice", "tag"]);
    let exprs = cstrs(&["id * 2", "concat('t', CAST(id AS STRING))"]);
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_add_columns(v1.ptr(), names.ptrs.as_ptr(), exprs.ptrs.as_ptr(), 2, &mut out), 0, "{}", last_message());
    let v2 = Ds(out);
    assert_eq!(lance_dataset_version(v2.ptr()), 2);
    let batches = scan(&v2, &default_opts()).unwrap();
    let ids = i64_column(&batches, "id");
    let twice = i64_column(&batches, "twice");
    assert!(ids.iter().zip(&twice).all(|(i, t)| *t == 2 * i) && ids.len() == 100);
    // bad input: an existing name, an expression that does not parse, an unknown column
    for (n, e, needle) in [("twice", "1", "already exists"), ("x", "id +", "bad expression"), ("y", "nope + 1", "nope")] {
        let (n, e) = (cstrs(&[n]), cstrs(&[e]));
        let mut out = std::ptr::null_mut();
        assert_err(lance_dataset_add_columns(v2.ptr(), n.ptrs.as_ptr(), e.ptrs.as_ptr(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT, needle);
        assert!(out.is_null());
    }
    // null columns from a host's Arrow schema
    let fields = Schema::new(vec![Field::new("note", DataType::Utf8, true), Field::new("score", DataType::Float32, true)]);
    let ffi = arrow::ffi::FFI_ArrowSchema::try_from(&fields).unwrap();
    assert_eq!(lance_dataset_add_null_columns(v2.ptr(), &ffi, &mut out), 0, "{}", last_message());
    let v3 = Ds(out);
    let batches = scan(&v3, &default_opts()).unwrap();
    assert_eq!(batches[0].schema().field_with_name("note").unwrap().data_type(), &DataType::Utf8);
    assert!(batches.iter().all(|b| b.column_by_name("score").unwrap().null_count() == b.num_rows()));
    let strict = Schema::new(vec![Field::new("must", DataType::Int32, false)]);
    let ffi = arrow::ffi::FFI_ArrowSchema::try_from(&strict).unwrap();
    assert_err(lance_dataset_add_null_columns(v3.ptr(), &ffi, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "not nullable");
    let released = arrow::ffi::FFI_ArrowSchema::empty();
    assert_err(lance_dataset_add_null_columns(v3.ptr(), &released, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "released");
    assert_err(lance_dataset_add_null_columns(v3.ptr(), std::ptr::null(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "columns");
    // drop two, then an unknown one
    let drop = cstrs(&["tag", "note"]);
    assert_eq!(lance_dataset_drop_columns(v3.ptr(), drop.ptrs.as_ptr(), 2, &mut out), 0, "{}", last_message());
    let v4 = Ds(out);
    let schema = scan(&v4, &default_opts()).unwrap()[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "name", "twice", "score"]);
    let unknown = cstrs(&["ghost"]);
    assert_err(lance_dataset_drop_columns(v4.ptr(), unknown.ptrs.as_ptr(), 1, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "ghost");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 4, "failures committed nothing");
    // older handles keep their schema
    assert_eq!(scan(&v1, &default_opts()).unwrap()[0].num_columns(), 2);
}

/// A host stream that breaks after its first batch: its reader panics (a bug in a Rust host's
/// reader) or it returns an error (the engine's source query failed).
pub(crate) struct BreaksAfterOneBatch {
    first: Option<RecordBatch>,
    panics: bool,
}

impl BreaksAfterOneBatch {
    pub(crate) fn new(first: RecordBatch, panics: bool) -> Box<Self> {
        Box::new(Self { first: Some(first), panics })
    }
}

impl Iterator for BreaksAfterOneBatch {
    type Item = Result<RecordBatch, arrow::error::ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(b) = self.first.take() {
            return Some(Ok(b));
        }
        if self.panics {
            panic!("the host's reader broke");
        }
        Some(Err(arrow::error::ArrowError::ExternalError("the source query failed".into())))
    }
}

impl arrow::record_batch::RecordBatchReader for BreaksAfterOneBatch {
    fn schema(&self) -> Arc<Schema> {
        schema()
    }
}

#[test]
fn a_panic_in_the_hosts_reader_fails_the_write_and_commits_nothing() {
    // The stream is read on a thread of its own; a panic there must reach Lance as an error.
    // Were it taken as the end of the stream, the rows read so far would be committed.
    let uri = table_uri("reader_panics");
    let options = lance_host::write::WriteOptions::default(); // create
    let Err(err) = lance_host::write::table::write(&uri, None, BreaksAfterOneBatch::new(rows(0..10), true), &options) else {
        panic!("a write whose reader panicked must fail");
    };
    assert!(err.message.contains("panic while reading the host's stream"), "{}", err.message);
    assert!(lance_host::snapshot::open(&uri, Default::default(), 0).is_err(), "no table was created");
    // An append the same way leaves the table at its version, with its rows.
    write(&uri, std::ptr::null(), vec![rows(0..5)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let append = lance_host::write::WriteOptions { mode: lance_host::write::WriteMode::Append, ..Default::default() };
    let result = lance_host::write::table::write(&uri, None, BreaksAfterOneBatch::new(rows(0..10), true), &append);
    assert!(result.is_err(), "an append whose reader panicked must fail");
    let latest = Ds::open(&uri, 0);
    assert_eq!(lance_dataset_version(latest.ptr()), 1);
    assert_eq!(ids_of(&latest), (0..5).collect::<Vec<_>>());
}

#[test]
fn a_merge_insert_whose_source_fails_commits_nothing() {
    use lance_host::write::changes_by_predicate::{merge_insert, stage_merge_insert, MergeInsert, OnMatch};
    let uri = table_uri("merge_source_fails");
    write(&uri, std::ptr::null(), vec![rows(0..5)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let at = lance_host::snapshot::open(&uri, Default::default(), 0).unwrap();
    let spec = MergeInsert { on: vec!["id".into()], when_matched: OnMatch::UpdateAll, ..Default::default() };
    let options = lance_host::write::WriteOptions::default();
    // The first batch (3 updates, 3 inserts) is read, then the source fails.
    let source = || BreaksAfterOneBatch::new(rows(2..8), false);
    let err = merge_insert(&at, source(), &spec, &options).err().expect("a merge whose source failed must fail");
    assert!(err.message.contains("the host's stream failed") && err.message.contains("the source query failed"), "{}", err.message);
    assert_eq!(err.code, LANCE_ERR_HOST_STREAM, "the host's stream failed, not the library: {}", err.message);
    let err = stage_merge_insert(&at, source(), &spec, &options).err().expect("a staged merge whose source failed must fail");
    assert!(err.message.contains("the source query failed"), "{}", err.message);
    assert_eq!(err.code, LANCE_ERR_HOST_STREAM, "{}", err.message);
    let latest = Ds::open(&uri, 0);
    assert_eq!(lance_dataset_version(latest.ptr()), 1, "nothing committed");
    assert_eq!(ids_of(&latest), (0..5).collect::<Vec<_>>());
}

/// Commit preconditions through the C ABI: a commit lands only on the version it names and
/// only while the table config holds the fencing token; a caller built with the 0.13 header
/// (88-byte LanceWriteParams) commits without them, whatever follows its struct in memory.
#[test]
fn commits_with_preconditions_and_older_callers_without_them() {
    let uri = table_uri("pre");
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(0..10)], &params(LanceWriteMode::LANCE_WRITE_CREATE)).unwrap();
    let files = data_files(&uri);
    let mut p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    p.expected_version = 2; // the table is at version 1
    let err = write(&uri, v1.ptr(), vec![rows(10..20)], &p).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_CONFLICT as i32, "{}", err.1);
    assert!(err.1.contains("at version 2, and it is at version 1"), "{}", err.1);
    assert_eq!(data_files(&uri), files, "a refused write leaves no file");
    p.expected_version = 1;
    let (v2, r) = write(&uri, v1.ptr(), vec![rows(10..20)], &p).unwrap();
    assert_eq!((r.version, r.committed), (2, 1));
    // a fencing token the table does not hold
    let token = [cstr("fence"), cstr("job-1")];
    let kv = [token[0].as_ptr(), token[1].as_ptr(), std::ptr::null()];
    let mut p = params(LanceWriteMode::LANCE_WRITE_APPEND);
    p.required_config = kv.as_ptr();
    let err = write(&uri, v2.ptr(), vec![rows(20..30)], &p).unwrap_err();
    assert_eq!(err.0, LANCE_ERR_FAILED_PRECONDITION as i32, "{}", err.1);
    assert!(err.1.contains("'fence' = 'job-1'") && err.1.contains("is not set"), "{}", err.1);
    // set it, then the commit lands
    let mut out: *mut LanceDataset = std::ptr::null_mut();
    let mut res = result();
    assert_eq!(
        lance_host::ffi::maintenance::lance_dataset_update_config(v2.ptr(), kv.as_ptr(), std::ptr::null(), 0, std::ptr::null(), &mut out, &mut res),
        0,
        "{}",
        last_message()
    );
    let v3 = Ds(out);
    assert_eq!((res.version, res.committed), (3, 1));
    let (_, r) = write(&uri, v3.ptr(), vec![rows(20..30)], &p).unwrap();
    assert_eq!(r.version, 4);
    // an older caller: its struct ends before the preconditions, so they are not read
    let mut older = params(LanceWriteMode::LANCE_WRITE_APPEND);
    older.struct_size = 88;
    older.expected_version = 1; // stale, and not the caller's: ignored
    older.required_config = std::ptr::NonNull::<*const c_char>::dangling().as_ptr(); // garbage past its end
    let (latest, r) = write(&uri, std::ptr::null(), vec![rows(30..40)], &older).unwrap();
    assert_eq!(r.version, 5);
    assert_eq!(ids_of(&latest), (0..40).collect::<Vec<_>>());
}
