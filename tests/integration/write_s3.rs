//! Writes on object storage (moto on 127.0.0.1, a fault proxy in front of it): what lance-host
//! writes is read fresh through the data cache (deletion files, updates, appends, overwrites),
//! pinned handles keep reading their version, and storage faults during a stage or a commit
//! are retried or a clear error — never a half-written version.

use std::collections::HashMap;

use arrow::array::RecordBatchIterator;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::dataset::*;
use lance_host::ffi::split::lance_bytes_free;
use lance_host::ffi::changes_by_predicate::*;
use lance_host::ffi::write::*;
use lance_host::LanceErrorCode::*;
use lance_host_testkit::{FaultProxy, Faults};

use crate::common::*;
use crate::s3::{open_s3, open_s3_with, private_vectors_table, s3_options, shared};

/// Write params over `opts` (the returned buffers must outlive the params).
fn params_with(mode: LanceWriteMode, opts: &HashMap<String, String>) -> (LanceWriteParams, CStrs, Vec<*const std::ffi::c_char>) {
    let mut p = std::mem::MaybeUninit::<LanceWriteParams>::uninit();
    assert_eq!(lance_write_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceWriteParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    p.mode = mode as i32;
    let pairs: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (keep, ptrs) = kv(&pairs);
    p.storage_options = ptrs.as_ptr();
    (p, keep, ptrs)
}

fn result() -> LanceWriteResult {
    LanceWriteResult { struct_size: std::mem::size_of::<LanceWriteResult>(), ..Default::default() }
}

fn rows_of(start: i64, end: i64) -> FFI_ArrowArrayStream {
    let b = lance_host_testkit::vectors_batch(start, end);
    let schema = b.schema();
    FFI_ArrowArrayStream::new(Box::new(RecordBatchIterator::new(vec![Ok(b)], schema)))
}

fn ids(ds: &Ds) -> Vec<i64> {
    let mut o = default_opts();
    let c = cstrs(&["id"]);
    o.columns = c.ptrs.as_ptr();
    o.num_columns = 1;
    let mut v = i64_column(&scan(ds, &o).unwrap(), "id");
    v.sort();
    v
}

#[test]
fn writes_on_s3_are_read_fresh_and_pinned_handles_keep_their_version() {
    let s = shared();
    let table = private_vectors_table("write-fresh");
    let opts = s3_options(&s.endpoint);
    let v1 = open_s3(&table, &s.endpoint).unwrap();
    let all = ids(&v1);
    assert_eq!(ids(&v1), all, "warm");
    let (p, _k, _v) = params_with(LanceWriteMode::LANCE_WRITE_APPEND, &opts);

    // DELETE: a new deletion file; a fresh open sees the rows gone, the pinned handle does not
    let pred = cstr("id % 2 = 0");
    let (mut out, mut r) = (std::ptr::null_mut(), result());
    assert_eq!(lance_dataset_delete(v1.ptr(), pred.as_ptr(), &p, &mut out, &mut r), 0, "{}", last_message());
    let v2 = Ds(out);
    let odd: Vec<i64> = all.iter().copied().filter(|i| i % 2 != 0).collect();
    assert_eq!(r.rows_deleted as usize, all.len() - odd.len());
    assert_eq!(ids(&v2), odd);
    assert_eq!(ids(&open_s3(&table, &s.endpoint).unwrap()), odd);
    assert_eq!(ids(&v1), all, "the pinned handle reads its version");

    // a delete staged on a worker and committed: another deletion file of the same fragments
    let pred = cstr("id % 3 = 0");
    let (mut b, mut len, mut sr) = (std::ptr::null_mut(), 0usize, result());
    assert_eq!(lance_dataset_stage_delete(v2.ptr(), std::ptr::null(), pred.as_ptr(), &mut b, &mut len, &mut sr), 0, "{}", last_message());
    let u = cstr(&table);
    let ptrs = [b as *const u8];
    let lens = [len];
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_table_commit(u.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), 1, &p, &mut out, &mut r), 0, "{}", last_message());
    lance_bytes_free(b, len);
    let v3 = Ds(out);
    let kept: Vec<i64> = odd.iter().copied().filter(|i| i % 3 != 0).collect();
    assert_eq!(ids(&v3), kept);
    assert_eq!(ids(&open_s3(&table, &s.endpoint).unwrap()), kept);

    // APPEND, then OVERWRITE: fresh opens see each; the older handles keep theirs
    let mut data = rows_of(100_000, 100_050);
    assert_eq!(lance_table_write(u.as_ptr(), v3.ptr(), &mut data, &p, &mut out, &mut r), 0, "{}", last_message());
    let v4 = Ds(out);
    assert_eq!(ids(&open_s3(&table, &s.endpoint).unwrap()).len(), kept.len() + 50);
    let (po, _k2, _v2) = params_with(LanceWriteMode::LANCE_WRITE_OVERWRITE, &opts);
    let mut data = rows_of(200_000, 200_010);
    assert_eq!(lance_table_write(u.as_ptr(), v4.ptr(), &mut data, &po, &mut out, &mut r), 0, "{}", last_message());
    let v5 = Ds(out);
    assert_eq!(ids(&v5), (200_000..200_010).collect::<Vec<_>>());
    assert_eq!(ids(&open_s3(&table, &s.endpoint).unwrap()), (200_000..200_010).collect::<Vec<_>>());
    assert_eq!(ids(&v4).len(), kept.len() + 50);
    assert_eq!(ids(&v1), all);
}

/// The table through the server directly: its version and row count.
fn state(table: &str) -> (u64, usize) {
    let ds = open_s3(table, &shared().endpoint).unwrap();
    (lance_dataset_version(ds.ptr()), ids(&ds).len())
}

#[test]
fn storage_faults_during_stage_and_commit_are_retried_or_clear_and_never_half_commit() {
    let s = shared();
    let table = private_vectors_table("write-faults");
    let moto_port: u16 = s.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = FaultProxy::start(moto_port).unwrap();
    let ep = format!("http://127.0.0.1:{}", proxy.port);
    let u = cstr(&table);
    let (v0, n0) = state(&table);

    // with retries: a short burst of 503s during the stage and the commit is absorbed
    let mut retrying = s3_options(&ep);
    retrying.insert("client_max_retries".into(), "4".into());
    let at = open_s3_with(&table, &retrying).unwrap();
    let (p, _k, _v) = params_with(LanceWriteMode::LANCE_WRITE_APPEND, &retrying);
    proxy.set(Faults { status_burst: Some((503, 2)), ..Default::default() });
    let (mut b, mut len, mut r) = (std::ptr::null_mut(), 0usize, result());
    let mut data = rows_of(300_000, 300_100);
    assert_eq!(lance_table_stage_write(u.as_ptr(), at.ptr(), &mut data, &p, &mut b, &mut len, &mut r), 0, "{}", last_message());
    let staged = unsafe { std::slice::from_raw_parts(b, len) }.to_vec();
    lance_bytes_free(b, len);
    proxy.set(Faults { status_burst: Some((503, 2)), ..Default::default() });
    let (ptrs, lens) = ([staged.as_ptr()], [staged.len()]);
    assert_eq!(lance_table_commit(u.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), 1, &p, std::ptr::null_mut(), &mut r), 0, "{}", last_message());
    assert!(proxy.counts().statuses >= 2, "the faults were injected: {:?}", proxy.counts());
    assert_eq!(state(&table), (v0 + 1, n0 + 100));

    // without retries: a fault during a stage is a clear I/O error; nothing is committed
    let mut strict = s3_options(&ep);
    strict.insert("client_max_retries".into(), "0".into());
    let at = open_s3_with(&table, &strict).unwrap();
    let (p, _k, _v) = params_with(LanceWriteMode::LANCE_WRITE_APPEND, &strict);
    for faults in [
        Faults { status_burst: Some((500, u32::MAX)), ..Default::default() },
        Faults { reset_next: u32::MAX, ..Default::default() },
    ] {
        proxy.set(faults);
        let mut data = rows_of(400_000, 400_100);
        let (mut b, mut len) = (std::ptr::null_mut(), 0usize);
        let rc = lance_table_stage_write(u.as_ptr(), at.ptr(), &mut data, &p, &mut b, &mut len, std::ptr::null_mut());
        assert!(data.release.is_none());
        proxy.set(Faults::default());
        if rc == 0 {
            // (a cut connection may hit only responses without a body: the stage then worked)
            let (ptrs, lens) = ([b as *const u8], [len]);
            assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), 1, _v.as_ptr(), std::ptr::null_mut()), 0);
            lance_bytes_free(b, len);
        } else {
            assert_eq!(rc, LANCE_ERR_IO as i32, "{}", last_message());
        }
        assert_eq!(state(&table), (v0 + 1, n0 + 100), "a failed stage commits nothing");
    }

    // faults during the commit: an error or success, never half; a retried coordinator with
    // the statement id ends with the rows exactly once
    let mut data = rows_of(500_000, 500_100);
    let (mut b, mut len) = (std::ptr::null_mut(), 0usize);
    assert_eq!(lance_table_stage_write(u.as_ptr(), at.ptr(), &mut data, &p, &mut b, &mut len, std::ptr::null_mut()), 0, "{}", last_message());
    let staged = unsafe { std::slice::from_raw_parts(b, len) }.to_vec();
    lance_bytes_free(b, len);
    let (ptrs, lens) = ([staged.as_ptr()], [staged.len()]);
    let mut p = p;
    let stmt = cstr("faulty-commit-1");
    p.statement_id = stmt.as_ptr();
    for faults in [
        Faults { status_burst: Some((503, u32::MAX)), ..Default::default() },
        Faults { reset_next: u32::MAX, ..Default::default() },
        Faults { reset_next: 1, ..Default::default() },
    ] {
        proxy.set(faults);
        let rc = lance_table_commit(u.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), 1, &p, std::ptr::null_mut(), std::ptr::null_mut());
        proxy.set(Faults::default());
        let (v, n) = state(&table);
        if rc == 0 {
            assert_eq!((v, n), (v0 + 2, n0 + 200));
        } else {
            assert!(rc == LANCE_ERR_IO as i32 || rc == LANCE_ERR_CONFLICT as i32, "{rc}: {}", last_message());
            assert!((v, n) == (v0 + 1, n0 + 100) || (v, n) == (v0 + 2, n0 + 200), "half a commit: {v} {n}");
        }
    }
    let mut r = result();
    assert_eq!(lance_table_commit(u.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), 1, &p, std::ptr::null_mut(), &mut r), 0, "{}", last_message());
    assert_eq!(r.version, v0 + 2);
    assert_eq!(state(&table), (v0 + 2, n0 + 200), "the rows are in exactly once");
}
