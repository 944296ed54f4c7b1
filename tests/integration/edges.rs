//! Rough edges a first C/C++ user hit (issue 19): messages that name what is missing where it
//! is, local paths printed as the host knows them.

use std::ffi::CStr;

use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::catalog::*;
use lance_host::ffi::dataset::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::take::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;

#[test]
fn catalog_says_which_table_is_missing_where() {
    let root = fixture().root.to_str().unwrap().to_string();
    let (_keep, props) = kv(&[("root", &root)]);
    let cat = lance_catalog_open(props.as_ptr());
    assert!(!cat.is_null(), "{}", last_message());
    let t = cstr("missing");
    let ds = lance_catalog_open_table(cat, std::ptr::null(), 0, t.as_ptr(), 0);
    assert!(ds.is_null());
    assert_eq!(last_code(), LANCE_ERR_NOT_FOUND as i32);
    let msg = last_message();
    assert!(msg.contains("table 'missing' not found in namespace <root>"), "{msg}");
    assert!(msg.contains(&format!("directory catalog '{root}'")), "{msg}");
    lance_catalog_free(cat);
}

#[test]
fn local_paths_keep_their_leading_slash() {
    // Explain names the table's files with the absolute path.
    let uri = people_uri();
    assert!(uri.starts_with('/'));
    let ds = Ds::open(&uri, 0);
    let mut text = std::ptr::null_mut();
    assert_eq!(lance_dataset_explain_scan_v2(ds.ptr(), &default_opts(), &mut text), 0, "{}", last_message());
    let plan = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    lance_string_free(text);
    assert!(plan.contains(&format!("uri={uri}")), "{plan}");
    assert!(!plan.contains(&format!("={}", &uri[1..])), "{plan}");

    // A data file that disappeared: take names it with its absolute path.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("people.lance");
    copy_dir(std::path::Path::new(&uri), &copy);
    let copy_uri = copy.to_str().unwrap().to_string();
    let ds = Ds::open(&copy_uri, 0);
    for f in std::fs::read_dir(copy.join("data")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let cols = cstrs(&["id"]);
    let ids = [1u64];
    let mut out = FFI_ArrowArrayStream::empty();
    let rc = lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), 1, cols.ptrs.as_ptr(), 1, &mut out);
    assert_ne!(rc, 0);
    let msg = last_message();
    assert!(msg.contains(&copy_uri), "{msg}");
    assert!(!msg.contains(&format!(" {}", &copy_uri[1..])), "{msg}");
}

pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn merged_and_counted_streams_carry_the_io_figures_of_their_work() {
    use lance_host::ffi::search::*;
    let ds = Ds::open(&crate::vector::vectors_uri(), 0);
    // A filtered count answered by the BTREE reports its index-cache lookups.
    let f = cstr("id < 100");
    let mut n = 0u64;
    let mut io = LanceIoStats::default();
    assert_eq!(lance_dataset_count_rows_where_v2(ds.ptr(), f.as_ptr(), &mut n, &mut io), 0, "{}", last_message());
    assert!(n > 0);
    assert!(io.index_cache_hits + io.index_cache_misses > 0, "{io:?}");
    // The merged stream of index-segment searches reports the searches' figures.
    let plan = crate::vector::plan_vector(&ds, "embedding", lance_host::ffi::split::LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let mut q = crate::vector::query("embedding", crate::vector::query_vector(11), 5);
    let raw = q.raw();
    let mut inputs: Vec<FFI_ArrowArrayStream> = crate::vector::splits(&plan)
        .iter()
        .map(|s| {
            let mut out = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_search_v2(ds.ptr(), s.0, &raw, &mut out), 0);
            out
        })
        .collect();
    let mut merged = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_topk_merge(inputs.as_mut_ptr(), inputs.len(), 5, 0, &mut merged), 0);
    let (batches, io) = collect_with_stats(&mut merged);
    assert_eq!(total_rows(&batches), 5);
    assert!(io.index_cache_hits + io.index_cache_misses > 0, "merged stream reports no work: {io:?}");
}

#[test]
fn bad_distance_ranges_are_clear_errors() {
    use lance_host::ffi::split::*;
    use lance_host::ffi::search::*;
    let ds = Ds::open(&crate::vector::vectors_uri(), 0);
    let plan = crate::vector::plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let split = &crate::vector::splits(&plan)[0];
    let mut q = crate::vector::query("embedding", crate::vector::query_vector(2), 5);
    let mut out = FFI_ArrowArrayStream::empty();
    for (lower, upper, bits, needle) in [
        (2.0f32, 1.0f32, 3u32, "inverted"),
        (f32::NAN, 0.0, 1, "finite"),
        (0.0, f32::INFINITY, 2, "finite"),
        (0.0, 0.0, 4, "distance_bounds"),
    ] {
        let mut raw = q.raw();
        raw.distance_lower = lower;
        raw.distance_upper = upper;
        raw.distance_bounds = bits;
        assert_err(lance_split_search_v2(ds.ptr(), split.0, &raw, &mut out), LANCE_ERR_INVALID_ARGUMENT, needle);
    }
    // An upper bound of 0 keeps nothing but exact matches: a valid, possibly empty answer.
    let mut raw = q.raw();
    raw.distance_upper = 1e-9;
    raw.distance_bounds = 2;
    assert_eq!(lance_split_search_v2(ds.ptr(), split.0, &raw, &mut out), 0, "{}", last_message());
    let batches = read_stream(out).unwrap();
    assert!(f32_values(&batches).iter().all(|d| *d < 1e-9));
}

fn f32_values(batches: &[arrow::array::RecordBatch]) -> Vec<f32> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("_distance").unwrap();
            c.as_any().downcast_ref::<arrow::array::Float32Array>().unwrap().values().to_vec()
        })
        .collect()
}

#[test]
fn bad_batches_and_query_values_are_clear_errors() {
    use lance_host::ffi::split::*;
    use lance_host::ffi::search::*;
    let ds = Ds::open(&crate::vector::vectors_uri(), 0);
    let plan = crate::vector::plan_vector(&ds, "embedding", LanceMetric::LANCE_METRIC_L2, false).unwrap();
    let split = &crate::vector::splits(&plan)[0];
    let v = crate::vector::query_vector(2);
    let dim = v.len();
    let mut out = FFI_ArrowArrayStream::empty();
    // A NaN or an infinity in the query (single and batch): no search with meaningless distances.
    let mut nan = v.clone();
    nan[3] = f32::NAN;
    let mut q = crate::vector::query("embedding", nan, 5);
    assert_err(lance_split_search_v2(ds.ptr(), split.0, &q.raw(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "value 3 is NaN or infinite");
    let mut batch: Vec<f32> = v.iter().chain(v.iter()).cloned().collect();
    batch[dim + 1] = f32::INFINITY;
    let mut q = crate::vector::query("embedding", batch, 5);
    let mut raw = q.raw();
    raw.dimension = dim;
    raw.num_queries = 2;
    assert_err(lance_split_search_v2(ds.ptr(), split.0, &raw, &mut out), LANCE_ERR_INVALID_ARGUMENT, "query vector 1 of the batch");
    // A batch whose vectors do not have the column's dimension; a batch over the maximum.
    let mut q = crate::vector::query("embedding", vec![0.5; (dim - 1) * 3], 5);
    let mut raw = q.raw();
    raw.dimension = dim - 1;
    raw.num_queries = 3;
    assert_err(lance_split_search_v2(ds.ptr(), split.0, &raw, &mut out), LANCE_ERR_INVALID_ARGUMENT, &format!("dimension {dim}"));
    raw.num_queries = 1 << 20;
    assert_err(lance_split_search_v2(ds.ptr(), split.0, &raw, &mut out), LANCE_ERR_INVALID_ARGUMENT, "exceeds the maximum");
    // No vector at all.
    let mut q = crate::vector::query("embedding", Vec::new(), 5);
    assert_err(lance_split_search_v2(ds.ptr(), split.0, &q.raw(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "dimension is 0");
}
