//! Scans through the Arrow C Stream interface.

use std::sync::Arc;

use arrow::array::{Array, Float64Array, StringArray};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use lance::deps::datafusion::prelude::{col, lit, SessionContext};
use lance_host::ffi::dataset::*;
use lance_host::ffi::scan::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;

fn visible_ids(f: &lance_host_testkit::Facts) -> Vec<i64> {
    // What the testkit wrote: ids 0..v2.rows with multiples of 10 deleted at version 3.
    let total = f.get_u64("people.v2.rows") as i64;
    (0..total).filter(|i| i % 10 != 0).collect()
}

#[test]
fn full_scan_returns_every_visible_row() {
    let f = &fixture().facts;
    let ds = Ds::open(&people_uri(), 0);
    let batches = scan(&ds, &default_opts()).unwrap();
    assert_eq!(total_rows(&batches) as u64, f.get_u64("people.v3.rows"));
    let ids = i64_column(&batches, "id");
    assert_eq!(ids, visible_ids(f));
    assert_eq!(ids.iter().sum::<i64>(), f.get("people.v3.sum_id").parse::<i64>().unwrap());
    // Values match what the testkit wrote for each id.
    for b in &batches {
        let idc = b.column_by_name("id").unwrap();
        let idc = idc.as_any().downcast_ref::<arrow::array::Int64Array>().unwrap();
        let names = b.column_by_name("name").unwrap();
        let names = names.as_any().downcast_ref::<StringArray>().unwrap();
        let scores = b.column_by_name("score").unwrap();
        let scores = scores.as_any().downcast_ref::<Float64Array>().unwrap();
        for i in 0..b.num_rows() {
            let id = idc.value(i);
            assert_eq!(names.value(i), format!("person-{id}"));
            assert_eq!(scores.value(i), lance_host_testkit::score_of(id));
        }
    }
}

#[test]
fn projection_keeps_requested_order() {
    let ds = Ds::open(&people_uri(), 0);
    let cols = cstrs(&["score", "id"]);
    let mut o = default_opts();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = cols.ptrs.len();
    let batches = scan(&ds, &o).unwrap();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["score", "id"]);
}

#[test]
fn unknown_column_is_named() {
    let ds = Ds::open(&people_uri(), 0);
    let cols = cstrs(&["id", "no_such_column"]);
    let mut o = default_opts();
    o.columns = cols.ptrs.as_ptr();
    o.num_columns = 2;
    let mut stream = FFI_ArrowArrayStream::empty();
    let code = lance_dataset_scan_v2(ds.ptr(), &o, &mut stream);
    assert_err(code, LANCE_ERR_INVALID_ARGUMENT, "no_such_column");
    // Not written on failure.
    assert!(stream.release.is_none());
}

#[test]
fn sql_filter_limit_offset() {
    let f = &fixture().facts;
    let ds = Ds::open(&people_uri(), 0);
    let filter = cstr("id < 100");
    let mut o = default_opts();
    o.filter_sql = filter.as_ptr();
    let batches = scan(&ds, &o).unwrap();
    let ids = i64_column(&batches, "id");
    assert_eq!(ids.len() as u64, f.get_u64("people.v3.rows_id_lt_100"));
    assert!(ids.iter().all(|i| *i < 100 && i % 10 != 0));

    let filter = cstr("category = 'beta' AND score > 50");
    o.filter_sql = filter.as_ptr();
    let ids = i64_column(&scan(&ds, &o).unwrap(), "id");
    let expected: Vec<i64> = visible_ids(f)
        .into_iter()
        .filter(|i| {
            lance_host_testkit::category_of(*i) == "beta" && lance_host_testkit::score_of(*i) > 50.0
        })
        .collect();
    assert_eq!(ids, expected);

    let mut o = default_opts();
    o.limit = 7;
    o.offset = 20;
    let ids = i64_column(&scan(&ds, &o).unwrap(), "id");
    assert_eq!(ids, visible_ids(f)[20..27].to_vec());
    o.offset = -1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "offset",
    );
}

#[test]
fn bad_sql_filter_is_an_error() {
    let ds = Ds::open(&people_uri(), 0);
    let filter = cstr("no_such_col > 3");
    let mut o = default_opts();
    o.filter_sql = filter.as_ptr();
    let mut stream = FFI_ArrowArrayStream::empty();
    let code = lance_dataset_scan_v2(ds.ptr(), &o, &mut stream);
    assert_ne!(code, 0);
    assert!(last_message().contains("no_such_col"), "{}", last_message());
}

fn substrait_event_id_below(n: i64) -> Vec<u8> {
    let ds = Ds::open(&events_uri(), 0);
    let mut ffi = arrow::ffi::FFI_ArrowSchema::empty();
    assert_eq!(lance_dataset_schema(ds.ptr(), &mut ffi), 0);
    let schema = arrow::datatypes::Schema::try_from(&ffi).unwrap();
    let state = SessionContext::new().state();
    lance_datafusion::substrait::encode_substrait(
        col("event_id").lt(lit(n)),
        Arc::new(schema),
        &state,
    )
    .unwrap()
}

#[test]
fn substrait_filter() {
    let bytes = substrait_event_id_below(42);
    let ds = Ds::open(&events_uri(), 0);
    let mut o = default_opts();
    o.filter_substrait = bytes.as_ptr();
    o.filter_substrait_len = bytes.len();
    let ids = i64_column(&scan(&ds, &o).unwrap(), "event_id");
    assert_eq!(ids, (0..42).collect::<Vec<i64>>());

    // Corrupt bytes: an error at scan time, not a crash.
    let garbage: Vec<u8> = bytes.iter().rev().map(|b| b ^ 0x5a).collect();
    o.filter_substrait = garbage.as_ptr();
    o.filter_substrait_len = garbage.len();
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "filter_substrait",
    );
    // Truncated bytes too.
    o.filter_substrait = bytes.as_ptr();
    o.filter_substrait_len = bytes.len() / 2;
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "filter_substrait",
    );
    // (NULL, n > 0) is an invalid argument.
    o.filter_substrait = std::ptr::null();
    o.filter_substrait_len = 3;
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_INVALID_ARGUMENT,
        "filter_substrait",
    );
    // Both filters at once are ANDed (a front end's Substrait filter, a back end's runtime SQL).
    let sql = cstr("event_id > 1");
    o.filter_substrait = bytes.as_ptr();
    o.filter_substrait_len = bytes.len();
    o.filter_sql = sql.as_ptr();
    let ids = i64_column(&scan(&ds, &o).unwrap(), "event_id");
    assert_eq!(ids, (2..42).collect::<Vec<i64>>());
}

/// The key-set filter of LanceScanOptions: the array is moved out by the call that reads the
/// options (success or failure), ANDed with both other filters, and checked.
#[test]
fn key_filter_moves_the_array_and_ands_with_the_other_filters() {
    use arrow::array::{Array, Int32Array, StringArray};
    use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
    let bytes = substrait_event_id_below(42);
    let ds = Ds::open(&events_uri(), 0);
    let export = |a: &dyn Array| {
        let data = a.to_data();
        (FFI_ArrowArray::new(&data), FFI_ArrowSchema::try_from(data.data_type()).unwrap())
    };
    let column = cstr("event_id");
    let sql = cstr("event_id % 2 = 0");
    // int32 keys for an int64 column (cast exactly), a NULL and a key past the table
    let (mut values, schema) = export(&Int32Array::from(vec![Some(4), Some(7), None, Some(10), Some(40), Some(41), Some(900)]));
    let mut o = default_opts();
    o.filter_substrait = bytes.as_ptr();
    o.filter_substrait_len = bytes.len();
    o.filter_sql = sql.as_ptr();
    o.key_filter_column = column.as_ptr();
    o.key_filter_values = &mut values;
    o.key_filter_schema = &schema;
    let ids = i64_column(&scan(&ds, &o).unwrap(), "event_id");
    assert_eq!(ids, vec![4, 10, 40]);
    assert!(values.is_released(), "the call moved the array out");

    // values that do not fit the column: refused, and the array is moved out all the same
    let (mut words, word_schema) = export(&StringArray::from(vec!["a", "b"]));
    let mut o = default_opts();
    o.key_filter_column = column.as_ptr();
    o.key_filter_values = &mut words;
    o.key_filter_schema = &word_schema;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "do not fit column 'event_id'");
    assert!(words.is_released());

    // a column without values, and an unknown column
    let mut o = default_opts();
    o.key_filter_column = column.as_ptr();
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "key_filter_column, key_filter_values and key_filter_schema together");
    let nope = cstr("nope");
    let (mut one, one_schema) = export(&Int32Array::from(vec![1]));
    o.key_filter_column = nope.as_ptr();
    o.key_filter_values = &mut one;
    o.key_filter_schema = &one_schema;
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "'nope' is not a top-level column");
    // a released array is refused, not read
    let mut o = default_opts();
    o.key_filter_column = column.as_ptr();
    o.key_filter_values = &mut one;
    o.key_filter_schema = &one_schema;
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "released");

    // the key set as text (a NULL entry is a NULL key), cast to the column's type
    let texts = [cstr("4"), cstr("9"), cstr("40")];
    let ptrs = [texts[0].as_ptr(), std::ptr::null(), texts[1].as_ptr(), texts[2].as_ptr()];
    let mut o = default_opts();
    o.key_filter_column = column.as_ptr();
    o.key_filter_texts = ptrs.as_ptr();
    o.num_key_filter_texts = ptrs.len();
    let ids = i64_column(&scan(&ds, &o).unwrap(), "event_id");
    assert_eq!(ids, vec![4, 9, 40]);
    // texts and an array together are refused
    let (mut again, again_schema) = export(&Int32Array::from(vec![1]));
    o.key_filter_values = &mut again;
    o.key_filter_schema = &again_schema;
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "not both");
    assert!(again.is_released(), "moved out all the same");

    // a malformed array (an offset past its values) is refused, never read out of bounds
    let bad = unsafe {
        arrow::array::ArrayData::new_unchecked(
            arrow::datatypes::DataType::Utf8,
            1,
            None,
            None,
            0,
            vec![arrow::buffer::Buffer::from_slice_ref([0i32, 100]), arrow::buffer::Buffer::from_slice_ref(b"ab")],
            vec![],
        )
    };
    let mut bad_values = FFI_ArrowArray::new(&bad);
    let bad_schema = FFI_ArrowSchema::try_from(bad.data_type()).unwrap();
    let mut o = default_opts();
    o.key_filter_column = column.as_ptr();
    o.key_filter_values = &mut bad_values;
    o.key_filter_schema = &bad_schema;
    assert_err(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), LANCE_ERR_INVALID_ARGUMENT, "not a valid Arrow array");
}

#[test]
fn row_id_row_addr_and_batch_size() {
    let ds = Ds::open(&people_uri(), 0);
    let mut o = default_opts();
    o.with_row_id = true;
    o.with_row_addr = true;
    o.batch_size = 16;
    let batches = scan(&ds, &o).unwrap();
    assert!(batches.iter().all(|b| b.num_rows() <= 16));
    assert!(batches.len() > 1);
    let row_ids = u64_column(&batches, "_rowid");
    let addrs = u64_column(&batches, "_rowaddr");
    assert_eq!(row_ids.len(), total_rows(&batches));
    // Row addresses encode (fragment id << 32 | offset); ids are unique.
    let mut sorted = addrs.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), addrs.len());
    let frag_ids: std::collections::BTreeSet<u64> = addrs.iter().map(|a| a >> 32).collect();
    assert_eq!(frag_ids.len() as u64, fixture().facts.get_u64("people.fragments"));
}

#[test]
fn fragment_restriction() {
    let ds = Ds::open(&people_uri(), 0);
    let mut p = std::ptr::null_mut();
    let mut len = 0usize;
    assert_eq!(lance_dataset_fragments(ds.ptr(), &mut p, &mut len), 0);
    let frags = unsafe { std::slice::from_raw_parts(p, len) }.to_vec();
    lance_fragment_info_list_free(p, len);
    let mut union = Vec::new();
    for frag in &frags {
        let ids = [frag.id];
        let mut o = default_opts();
        o.fragment_ids = ids.as_ptr();
        o.num_fragment_ids = 1;
        o.with_row_addr = true;
        let batches = scan(&ds, &o).unwrap();
        assert_eq!(total_rows(&batches) as u64, frag.logical_rows);
        assert!(u64_column(&batches, "_rowaddr").iter().all(|a| a >> 32 == frag.id));
        union.extend(i64_column(&batches, "id"));
    }
    union.sort();
    let full = i64_column(&scan(&ds, &default_opts()).unwrap(), "id");
    assert_eq!(union, full);

    let bogus = [frags.iter().map(|f| f.id).max().unwrap() + 1000];
    let mut o = default_opts();
    o.fragment_ids = bogus.as_ptr();
    o.num_fragment_ids = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_err(
        lance_dataset_scan_v2(ds.ptr(), &o, &mut stream),
        LANCE_ERR_NOT_FOUND,
        &bogus[0].to_string(),
    );
}

#[test]
fn stream_outlives_handle_and_moves_threads() {
    let f = &fixture().facts;
    let ds = Ds::open(&people_uri(), 0);
    let mut o = default_opts();
    o.batch_size = 50;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0);
    drop(ds);
    let reader = ArrowArrayStreamReader::try_new(stream).unwrap();
    let rows = std::thread::spawn(move || {
        reader.map(|b| b.unwrap().num_rows()).sum::<usize>()
    })
    .join()
    .unwrap();
    assert_eq!(rows as u64, f.get_u64("people.v3.rows"));
}

#[test]
fn releasing_mid_stream_is_clean_and_repeatable() {
    let ds = Ds::open(&people_uri(), 0);
    for _ in 0..20 {
        let mut o = default_opts();
        o.batch_size = 10;
        let mut stream = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0);
        let mut reader = ArrowArrayStreamReader::try_new(stream).unwrap();
        let first = reader.next().unwrap().unwrap();
        assert_eq!(first.num_rows(), 10);
        drop(reader); // releases the C stream mid-way
    }
    // The handle still works afterwards.
    assert!(total_rows(&scan(&ds, &default_opts()).unwrap()) > 0);
}

#[test]
fn scan_in_order_false_returns_same_rows() {
    let ds = Ds::open(&people_uri(), 0);
    let mut o = default_opts();
    o.scan_in_order = false;
    o.batch_readahead = 2;
    o.fragment_readahead = 3;
    let mut ids = i64_column(&scan(&ds, &o).unwrap(), "id");
    ids.sort();
    assert_eq!(ids, visible_ids(&fixture().facts));
}

#[test]
fn bounded_io_buffer_and_readahead_return_the_same_rows() {
    let ds = Ds::open(&people_uri(), 0);
    for (io, batches, frags) in [(4096u64, 1u32, 1u32), (1 << 20, 2, 1), (64 << 20, 0, 0)] {
        let mut o = default_opts();
        o.io_buffer_bytes = io;
        o.batch_readahead = batches;
        o.fragment_readahead = frags;
        o.batch_size = 64;
        let ids = i64_column(&scan(&ds, &o).unwrap(), "id");
        assert_eq!(ids, visible_ids(&fixture().facts), "io_buffer_bytes {io}");
    }
}

#[test]
fn one_handle_many_threads() {
    let f = &fixture().facts;
    let ds = Arc::new(Ds::open(&people_uri(), 0));
    let expected = f.get_u64("people.v3.rows");
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let ds = ds.clone();
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let mut o = default_opts();
                    o.batch_size = 30 + t;
                    let batches = scan(&ds, &o).unwrap();
                    assert_eq!(total_rows(&batches) as u64, expected);
                    let mut n = 0;
                    assert_eq!(lance_dataset_count_rows(ds.ptr(), &mut n), 0);
                    assert_eq!(n, expected);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn read_errors_surface_through_get_last_error() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("people.lance");
    copy_dir(std::path::Path::new(&people_uri()), &table);
    let ds = Ds::open(table.to_str().unwrap(), 0);
    let mut o = default_opts();
    o.batch_size = 10;
    o.batch_readahead = 1;
    o.fragment_readahead = 1;
    let mut stream = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &o, &mut stream), 0);
    let next = |st: &mut FFI_ArrowArrayStream| {
        let mut a = arrow::ffi::FFI_ArrowArray::empty();
        let rc = unsafe { (st.get_next.unwrap())(st, &mut a) };
        (rc, a.is_released())
    };
    assert_eq!(next(&mut stream), (0, false));
    // The data files vanish while the scan runs.
    for entry in std::fs::read_dir(table.join("data")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let rc = loop {
        match next(&mut stream) {
            (0, false) => continue,
            (0, true) => panic!("the stream ended normally after its files were deleted"),
            (rc, _) => break rc,
        }
    };
    let error = unsafe { std::ffi::CStr::from_ptr((stream.get_last_error.unwrap())(&mut stream)) }
        .to_string_lossy()
        .into_owned();
    // The errno names the class (ENOENT: a file that no longer exists); the message names the
    // table and the pinned version.
    assert_eq!(rc, 2, "{error}");
    let expected = format!("reading table '{}' at version {} failed", table.to_str().unwrap(), lance_dataset_version(ds.ptr()));
    assert!(error.contains(&expected) && error.to_lowercase().contains("not found"), "{error}");
    // The missing file is named with its full local path (Lance prints it without the '/').
    assert!(error.contains(&format!("{}/data/", table.to_str().unwrap())), "{error}");
    assert_eq!(next(&mut stream).0, 2, "a failed stream must keep failing");
    unsafe { (stream.release.unwrap())(&mut stream) };
}

/// Lance's own request size limit for the child process (`LANCE_MAX_IOP_SIZE`, read once).
const PAGE_ROWS: &str = "LANCE_HOST_TEST_PAGE_ROWS";
const DIM: i32 = 128;

/// Writes a one-column table of `rows` 128-d float32 vectors in one batch (one page of
/// rows × 512 bytes), scans it once through the C ABI (metadata into the caches), then counts
/// the allocations of at least 45 % of the page's size during a second scan of the column (a
/// decoded batch, 8,192 rows = 4 MiB, stays below that for the pages used here).
#[test]
#[ignore = "run by local_pages_up_to_the_store_request_size_are_read_into_one_buffer in its own process"]
fn child_page_buffers() {
    use arrow::array::{FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator};
    use arrow::datatypes::{DataType, Field, Schema};
    let Ok(rows) = std::env::var(PAGE_ROWS) else { return };
    let rows: usize = rows.parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // On the parent's S3-compatible server when it names one, else in a local directory.
    let endpoint = std::env::var("LANCE_HOST_TEST_S3_ENDPOINT").ok();
    let (uri, storage) = match &endpoint {
        Some(e) => (format!("{}/page_buffers_{rows}/wide.lance", std::env::var("LANCE_HOST_TEST_S3_ROOT").unwrap()), crate::s3::s3_options(e)),
        None => (dir.path().join("wide.lance").to_str().unwrap().to_string(), Default::default()),
    };
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![Field::new("vec", DataType::FixedSizeList(item.clone(), DIM), false)]));
    let values = Float32Array::from_iter_values((0..rows * DIM as usize).map(|i| (i % 9973) as f32));
    let vec = FixedSizeListArray::try_new(item, DIM, Arc::new(values), None).unwrap();
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(vec)]).unwrap();
    let (w_uri, w_batch, w_storage) = (uri.clone(), batch.clone(), storage.clone());
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            let reader = RecordBatchIterator::new([Ok(w_batch.clone())], w_batch.schema());
            let store_params = (!w_storage.is_empty()).then(|| lance::io::ObjectStoreParams {
                storage_options_accessor: Some(Arc::new(lance::io::StorageOptionsAccessor::with_static_options(w_storage))),
                ..Default::default()
            });
            let params = lance::dataset::WriteParams { store_params, ..Default::default() };
            lance::Dataset::write(reader, &w_uri, Some(params)).await.unwrap();
        })
    })
    .join()
    .unwrap();
    let ds = match &endpoint {
        Some(_) => {
            // The data cache off: the second scan reads from the store, as the first.
            let mut o = std::mem::MaybeUninit::<lance_host::ffi::session::LanceSessionOptions>::uninit();
            let size = std::mem::size_of::<lance_host::ffi::session::LanceSessionOptions>();
            assert_eq!(lance_host::ffi::session::lance_session_options_default_v2(o.as_mut_ptr(), size), 0);
            let mut o = unsafe { o.assume_init() };
            o.data_cache_disabled = 1;
            assert_eq!(lance_host::ffi::session::lance_session_configure_v2(&o), 0, "{}", last_message());
            crate::s3::open_s3_with(&uri, &storage).unwrap()
        }
        None => Ds::open(&uri, 0),
    };
    let cols = cstrs(&["vec"]);
    let mut opts = default_opts();
    opts.columns = cols.ptrs.as_ptr();
    opts.num_columns = 1;
    // Batches of 4 MiB, below the counted size (Lance's default on object stores is 16,384 rows).
    opts.batch_size = 8192;
    assert_eq!(scan(&ds, &opts).unwrap().iter().map(|b| b.num_rows()).sum::<usize>(), rows);
    let page = rows * DIM as usize * 4;
    large_allocs_from(page / 100 * 45);
    let mut stream = arrow::ffi_stream::FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_scan_v2(ds.ptr(), &opts, &mut stream), 0, "{}", last_message());
    let (batches, stats) = collect_with_stats(&mut stream);
    let large = large_allocs_from(0);
    // The vectors came back as written.
    let read: Vec<f32> = batches
        .iter()
        .flat_map(|b| {
            let l = b.column(0).as_any().downcast_ref::<FixedSizeListArray>().unwrap();
            l.values().as_any().downcast_ref::<Float32Array>().unwrap().values().to_vec()
        })
        .collect();
    let written = batch.column(0).as_any().downcast_ref::<FixedSizeListArray>().unwrap();
    assert_eq!(read.as_slice(), written.values().as_any().downcast_ref::<Float32Array>().unwrap().values().as_ref());
    println!("LARGE_ALLOCS={large}");
    println!("READ_REQUESTS={}", stats.read_requests);
    println!("CHILD-OK");
}

/// The child's page-sized buffers and read requests of its second scan; on the tests'
/// S3-compatible server with `s3`, else on a local disk.
fn page_buffers(rows: usize, max_iop_size: usize, s3: bool) -> (usize, u64) {
    let (rows, iop) = (rows.to_string(), max_iop_size.to_string());
    let mut env = vec![(PAGE_ROWS, std::ffi::OsStr::new(&rows)), ("LANCE_MAX_IOP_SIZE", std::ffi::OsStr::new(&iop))];
    let shared = s3.then(crate::s3::shared);
    if let Some(s) = shared {
        env.push(("LANCE_HOST_TEST_S3_ENDPOINT", std::ffi::OsStr::new(&s.endpoint)));
        env.push(("LANCE_HOST_TEST_S3_ROOT", std::ffi::OsStr::new(s.facts.get("root"))));
    }
    let out = run_child("scan::child_page_buffers", &env);
    let value = |key: &str| -> u64 {
        let line = out.lines().find(|l| l.starts_with(key)).expect(&out);
        line[key.len()..].parse().unwrap()
    };
    (value("LARGE_ALLOCS=") as usize, value("READ_REQUESTS="))
}

/// A local page up to Lance's request size (`LANCE_MAX_IOP_SIZE`) is read into one buffer of
/// its size and decoded from there; Lance's default reader reads it in 8 MiB pieces and copies
/// them together into a second one. A page above the request size is still split by the store.
#[test]
fn local_pages_up_to_the_store_request_size_are_read_into_one_buffer() {
    const MIB: usize = 1 << 20;
    // 10 MiB page, Lance's default request size (16 MiB).
    assert_eq!(page_buffers(20_480, 16 * MIB, false).0, 1, "a 10 MiB page was copied");
    // 20 MiB page with the request size raised to 32 MiB.
    assert_eq!(page_buffers(40_960, 32 * MIB, false).0, 1, "a 20 MiB page was copied");
    // 20 MiB page above a 16 MiB request size: read in two halves, copied into a third buffer.
    assert_eq!(page_buffers(40_960, 16 * MIB, false).0, 3);
}

/// The same on an object store (the tests' S3-compatible server), where the store's request
/// size is also the size of a ranged GET: a page up to it is one GET into one buffer, a larger
/// one two GETs copied into a third buffer. With Lance's 8 MiB pieces the GETs were the same
/// (the pieces are merged before the store splits them) and every page above 8 MiB was copied.
#[test]
fn object_store_pages_up_to_the_request_size_are_one_get_into_one_buffer() {
    const MIB: usize = 1 << 20;
    assert_eq!(page_buffers(20_480, 16 * MIB, true), (1, 1), "10 MiB page: (buffers, GETs)");
    assert_eq!(page_buffers(40_960, 16 * MIB, true), (3, 2), "20 MiB page: (buffers, GETs)");
}
