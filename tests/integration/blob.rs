//! Blob columns through the C ABI: descriptors, range reads into caller memory and into
//! library buffers, concurrency, bad input; on s3:// range reads make ranged requests only.

use lance_host::ffi::blob::*;
use lance_host::ffi::handles::LanceIoStats;
use lance_host::ffi::split::lance_bytes_free;
use lance_host::LanceErrorCode::*;
use lance_host_testkit::{blob_byte, blob_deleted, blob_len, BLOB_ROWS};

use crate::common::*;

/// (row id, id) of every visible row of the blobs table.
pub(crate) fn row_ids(ds: &Ds) -> Vec<(u64, i64)> {
    let mut o = default_opts();
    o.with_row_id = true;
    let cols = cstrs(&["id"]);
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 1;
    let batches = scan(ds, &o).unwrap();
    u64_column(&batches, "_rowid").into_iter().zip(i64_column(&batches, "id")).collect()
}

pub(crate) fn take(ds: &Ds, column: &str, ids: &[u64]) -> Result<*mut LanceBlobs, i32> {
    let mut out = std::ptr::null_mut();
    let c = cstr(column);
    match lance_dataset_take_blobs(ds.ptr(), c.as_ptr(), ids.as_ptr(), ids.len(), &mut out) {
        0 => Ok(out),
        rc => Err(rc),
    }
}

pub(crate) fn info(b: *const LanceBlobs, i: usize) -> LanceBlobInfo {
    let mut out = LanceBlobInfo { struct_size: std::mem::size_of::<LanceBlobInfo>(), ..Default::default() };
    assert_eq!(lance_blobs_info(b, i, &mut out), 0, "{}", last_message());
    out
}

pub(crate) fn read(b: *const LanceBlobs, i: usize, offset: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0xAAu8; len];
    match lance_blobs_read(b, i, offset, len as u64, buf.as_mut_ptr(), buf.len()) {
        0 => Ok(buf),
        rc => Err(rc),
    }
}

fn expected(id: i64, offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len).map(|j| blob_byte(id, j)).collect()
}

/// The ranges a test reads from a blob of `size` bytes: start, middle, end, and across 4 KiB,
/// 64 KiB and 256 KiB boundaries where the blob reaches them.
pub(crate) fn ranges(size: usize) -> Vec<(usize, usize)> {
    let mut r = vec![(0, size.min(100)), (size / 2, (size - size / 2).min(777)), (size.saturating_sub(50), size.min(50))];
    for boundary in [4096usize, 65_536, 262_144] {
        if size > boundary + 300 {
            r.push((boundary - 300, 600));
        }
    }
    r.push((0, size));
    r
}

#[test]
fn blob_descriptors_and_range_reads_equal_the_written_bytes() {
    let f = fixture();
    let ds = Ds::open(f.facts.get("blobs.uri"), 0);
    let rows = row_ids(&ds);
    assert_eq!(rows.len(), (0..BLOB_ROWS).filter(|i| !blob_deleted(*i)).count());
    // Request order kept, duplicates kept: reversed, with the first row twice.
    let mut ask: Vec<(u64, i64)> = rows.iter().rev().cloned().collect();
    ask.push(rows[0]);
    let ids: Vec<u64> = ask.iter().map(|r| r.0).collect();
    let b = take(&ds, "payload", &ids).unwrap_or_else(|_| panic!("{}", last_message()));
    assert_eq!(lance_blobs_count(b), ids.len());
    let mut kinds = std::collections::BTreeSet::new();
    for (i, (rowid, id)) in ask.iter().enumerate() {
        let inf = info(b, i);
        assert_eq!(inf.row_id, *rowid);
        match blob_len(*id) {
            None => {
                assert!(inf.is_null && inf.kind == LanceBlobKind::LANCE_BLOB_NULL as i32 && inf.size == 0);
                assert_err(read(b, i, 0, 0).unwrap_err(), LANCE_ERR_INVALID_ARGUMENT, "is null");
            }
            Some(n) => {
                assert!(!inf.is_null);
                assert_eq!(inf.size, n as u64, "size of row {id}");
                assert!(inf.uri.is_null());
                kinds.insert(inf.kind);
                for (off, len) in ranges(n) {
                    assert_eq!(read(b, i, off as u64, len).unwrap(), expected(*id, off, len), "row {id} range {off}+{len}");
                }
                // Into a library buffer.
                let (mut p, mut plen) = (std::ptr::null_mut(), 0usize);
                let (off, len) = (n / 3, n - n / 3);
                assert_eq!(lance_blobs_read_alloc(b, i, off as u64, len as u64, &mut p, &mut plen), 0, "{}", last_message());
                assert_eq!(plen, len);
                let got = if len == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(p, plen) }.to_vec() };
                assert_eq!(got, expected(*id, off, len));
                lance_bytes_free(p, plen);
                // Past the end: the message names the size; the buffer is untouched.
                let mut buf = vec![0xAAu8; 2];
                let rc = lance_blobs_read(b, i, n as u64, 1, buf.as_mut_ptr(), 2);
                assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, &format!("holds {n} bytes"));
                assert_eq!(buf, vec![0xAA, 0xAA]);
                assert_err(lance_blobs_read(b, i, u64::MAX, 2, buf.as_mut_ptr(), 2), LANCE_ERR_INVALID_ARGUMENT, "past the end");
            }
        }
    }
    assert!(kinds.contains(&(LanceBlobKind::LANCE_BLOB_INLINE as i32)));
    assert!(kinds.contains(&(LanceBlobKind::LANCE_BLOB_PACKED as i32)));
    assert!(kinds.contains(&(LanceBlobKind::LANCE_BLOB_DEDICATED as i32)));

    // Several threads read from one set at once.
    let addr = b as usize;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let ask = ask.clone();
            std::thread::spawn(move || {
                let b = addr as *const LanceBlobs;
                for (i, (_, id)) in ask.iter().enumerate().skip(t).step_by(4) {
                    if let Some(n) = blob_len(*id) {
                        assert_eq!(read(b, i, 0, n).unwrap(), expected(*id, 0, n));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut io = LanceIoStats { struct_size: std::mem::size_of::<LanceIoStats>(), ..Default::default() };
    assert_eq!(lance_blobs_io_stats(b, &mut io), 0);
    lance_blobs_free(b);

    // The set outlives the dataset handle.
    let b = take(&ds, "payload", &ids[..3]).unwrap();
    drop(ds);
    let (_, id) = ask[0];
    if let Some(n) = blob_len(id) {
        assert_eq!(read(b, 0, 0, n).unwrap(), expected(id, 0, n));
    }
    lance_blobs_free(b);
}

#[test]
fn blob_bad_input_is_a_clear_error() {
    let f = fixture();
    let ds = Ds::open(f.facts.get("blobs.uri"), 0);
    let rows = row_ids(&ds);
    let ids: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let mut out = std::ptr::null_mut();
    let col = cstr("payload");
    assert_err(lance_dataset_take_blobs(std::ptr::null(), col.as_ptr(), ids.as_ptr(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    assert_err(lance_dataset_take_blobs(ds.ptr(), std::ptr::null(), ids.as_ptr(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT, "column");
    assert_err(lance_dataset_take_blobs(ds.ptr(), col.as_ptr(), std::ptr::null(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT, "row_ids");
    assert_err(lance_dataset_take_blobs(ds.ptr(), col.as_ptr(), ids.as_ptr(), 1, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    let bad = [b'p', 0xff, 0];
    assert_err(lance_dataset_take_blobs(ds.ptr(), bad.as_ptr() as *const _, ids.as_ptr(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT, "UTF-8");
    assert_err(take(&ds, "id", &ids[..1]).unwrap_err(), LANCE_ERR_INVALID_ARGUMENT, "'id' is not a blob column");
    assert_err(take(&ds, "nope", &ids[..1]).unwrap_err(), LANCE_ERR_INVALID_ARGUMENT, "unknown column 'nope'");
    // A deleted row and one past the fragment's end.
    let deleted = (0..BLOB_ROWS).find(|i| blob_deleted(*i)).unwrap() as u64; // fragment 0: row id = offset
    assert_err(take(&ds, "payload", &[ids[0], deleted]).unwrap_err(), LANCE_ERR_NOT_FOUND, &format!("row id {deleted}"));
    assert_err(take(&ds, "payload", &[1u64 << 40]).unwrap_err(), LANCE_ERR_NOT_FOUND, "does not exist");
    // (NULL, 0) is an empty set.
    let mut empty = std::ptr::null_mut();
    assert_eq!(lance_dataset_take_blobs(ds.ptr(), col.as_ptr(), std::ptr::null(), 0, &mut empty), 0);
    assert_eq!(lance_blobs_count(empty), 0);
    lance_blobs_free(empty);

    let b = take(&ds, "payload", &ids[..2]).unwrap();
    let mut inf = LanceBlobInfo::default();
    assert_err(lance_blobs_info(b, 2, &mut inf), LANCE_ERR_INVALID_ARGUMENT, "out of range");
    inf.struct_size = 0;
    assert_err(lance_blobs_info(b, 0, &mut inf), LANCE_ERR_INVALID_ARGUMENT, "struct_size");
    assert_err(lance_blobs_info(b, 0, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    assert_eq!(lance_blobs_count(std::ptr::null()), 0);
    assert_eq!(last_code(), LANCE_ERR_INVALID_ARGUMENT as i32);
    let mut buf = [0u8; 8];
    assert_err(lance_blobs_read(b, 5, 0, 1, buf.as_mut_ptr(), 8), LANCE_ERR_INVALID_ARGUMENT, "out of range");
    assert_err(lance_blobs_read(b, 0, 0, 9, buf.as_mut_ptr(), 8), LANCE_ERR_INVALID_ARGUMENT, "buf_len 8");
    assert_err(lance_blobs_read(b, 0, 0, 1, std::ptr::null_mut(), 8), LANCE_ERR_INVALID_ARGUMENT, "buf is NULL");
    assert_err(lance_blobs_read(std::ptr::null(), 0, 0, 1, buf.as_mut_ptr(), 8), LANCE_ERR_INVALID_ARGUMENT, "blobs");
    let mut p = std::ptr::null_mut();
    assert_err(lance_blobs_read_alloc(b, 0, 0, 1, &mut p, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out_len");
    assert_err(lance_blobs_io_stats(b, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    lance_blobs_free(b);
    lance_blobs_free(std::ptr::null_mut());
}

/// Every regular file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A blob's bytes gone from under a reader (a file truncated or removed after the descriptors
/// were taken): every read is an error with a code and a message, never bytes of another blob,
/// a crash or a hang — on the calling-thread path (truncated: LANCE_ERR_IO) and on Lance's
/// (a file that cannot be opened any more).
#[test]
fn blob_reads_of_files_gone_from_under_the_reader_are_errors() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    // A private copy of the fixture's table: this test damages it.
    let src = std::path::PathBuf::from(f.facts.get("blobs.uri"));
    let copy = dir.path().join("blobs.lance");
    for file in files_under(&src) {
        let to = copy.join(file.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    let ds = Ds::open(copy.to_str().unwrap(), 0);
    let rows = row_ids(&ds);
    let ids: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let sized: Vec<(usize, usize)> =
        rows.iter().enumerate().filter_map(|(i, (_, id))| blob_len(*id).filter(|n| *n > 0).map(|n| (i, n))).collect();
    assert!(sized.len() > 3);
    let data_files: Vec<std::path::PathBuf> = files_under(&copy.join("data"));
    assert!(!data_files.is_empty());

    // Truncated: the descriptors were taken, then every data and blob file lost its bytes.
    let b = take(&ds, "payload", &ids).unwrap();
    for file in &data_files {
        std::fs::OpenOptions::new().write(true).open(file).unwrap().set_len(0).unwrap();
    }
    let mut kinds = std::collections::BTreeSet::new();
    for (i, n) in &sized {
        kinds.insert(info(b, *i).kind);
        let rc = read(b, *i, 0, (*n).min(1000)).unwrap_err();
        assert_err(rc, LANCE_ERR_IO, "cannot read blob");
    }
    assert!(kinds.len() >= 3, "inline, packed and dedicated blobs were read: {kinds:?}");
    lance_blobs_free(b);

    // Removed: a new set cannot open its files and reads through Lance, which fails too.
    for file in &data_files {
        std::fs::remove_file(file).unwrap();
    }
    match take(&ds, "payload", &ids) {
        Err(rc) => assert!(rc == LANCE_ERR_IO as i32 || rc == LANCE_ERR_NOT_FOUND as i32, "{rc}: {}", last_message()),
        Ok(b) => {
            for (i, n) in &sized {
                let rc = read(b, *i, 0, (*n).min(1000)).unwrap_err();
                assert!(rc == LANCE_ERR_IO as i32 || rc == LANCE_ERR_NOT_FOUND as i32, "{rc}: {}", last_message());
                assert!(!last_message().is_empty());
            }
            lance_blobs_free(b);
        }
    }
}

#[test]
fn poll_refuses_foreign_streams_and_alloc_reads_need_their_outputs() {
    use arrow::array::{Int64Array, RecordBatch, RecordBatchIterator};
    use arrow::ffi_stream::FFI_ArrowArrayStream;
    use lance_host::ffi::scan::lance_stream_poll_next;
    // A stream arrow exported, not lance-host: refused, not read.
    let batch = RecordBatch::try_from_iter([("x", std::sync::Arc::new(Int64Array::from(vec![1, 2])) as _)]).unwrap();
    let schema = batch.schema();
    let mut foreign = FFI_ArrowArrayStream::new(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)));
    let mut a = arrow::ffi::FFI_ArrowArray::empty();
    let mut status = -1;
    let rc = lance_stream_poll_next(&mut foreign, &mut a, None, std::ptr::null_mut(), &mut status);
    assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, "not created by lance-host");
    assert_eq!(status, -1, "status written on failure");
    // lance_blobs_read_alloc without its outputs.
    let f = fixture();
    let ds = Ds::open(f.facts.get("blobs.uri"), 0);
    let ids: Vec<u64> = row_ids(&ds).iter().map(|r| r.0).collect();
    let b = take(&ds, "payload", &ids[..1]).unwrap();
    let mut n = 0usize;
    assert_err(lance_blobs_read_alloc(b, 0, 0, 0, std::ptr::null_mut(), &mut n), LANCE_ERR_INVALID_ARGUMENT, "out");
    lance_blobs_free(b);
}
