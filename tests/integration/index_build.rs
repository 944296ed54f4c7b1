//! Index builds through the C ABI on a table the test writes: every vector index type, the
//! scalar types and INVERTED are built, listed, used by the plans (vector and full-text
//! splits, scalar filters in the scan plan) and dropped; bad input is a clear error and commits
//! nothing. pylance checks what these build in tests/python/test_index_build.py.

use std::sync::Arc;

use arrow::array::{FixedSizeListArray, Float32Array, Int64Array, ListBuilder, RecordBatch, RecordBatchIterator, StringArray, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::dataset::*;
use lance_host::ffi::fts::lance_dataset_plan_fts;
use lance_host::ffi::index::*;
use lance_host::ffi::index_build::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::lance_dataset_explain_scan_v2;
use lance_host::ffi::write::*;
use lance_host::LanceErrorCode::*;

use crate::common::*;
use crate::engine::take_string;

const DIM: i32 = 16;
pub(crate) const ROWS: i64 = 1200;

pub(crate) fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("category", DataType::Utf8, true),
        Field::new("tags", DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), true),
        Field::new("text", DataType::Utf8, true),
        Field::new("emb", DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), DIM), true),
    ]));
    let ids: Vec<i64> = (start..start + n).collect();
    let mut tags = ListBuilder::new(StringBuilder::new());
    for i in &ids {
        for t in 0..(i % 3) {
            tags.values().append_value(format!("t{}", (i + t) % 5));
        }
        tags.append(true);
    }
    let words = ["quick", "brown", "fox", "lazy", "dog", "jumps", "over", "river"];
    let texts: Vec<String> = ids.iter().map(|i| format!("{} {} {}", words[(*i % 8) as usize], words[(*i / 8 % 8) as usize], words[(*i / 64 % 8) as usize])).collect();
    let values: Vec<f32> = ids.iter().flat_map(|i| (0..DIM).map(move |d| ((i * 31 + d as i64 * 7) % 97) as f32 / 97.0)).collect();
    let emb = FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), DIM, Arc::new(Float32Array::from(values)), None);
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringArray::from_iter_values(ids.iter().map(|i| ["red", "green", "blue"][(*i % 3) as usize]))),
            Arc::new(tags.finish()),
            Arc::new(StringArray::from(texts)),
            Arc::new(emb),
        ],
    )
    .unwrap()
}

pub(crate) fn write(uri: &str, at: Option<&Ds>, b: RecordBatch) -> Ds {
    let schema = b.schema();
    let mut data = FFI_ArrowArrayStream::new(Box::new(RecordBatchIterator::new(vec![Ok(b)], schema)));
    let mut p = std::mem::MaybeUninit::<LanceWriteParams>::uninit();
    assert_eq!(lance_write_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceWriteParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    p.max_rows_per_file = 400;
    if at.is_some() {
        p.mode = LanceWriteMode::LANCE_WRITE_APPEND as i32;
    }
    let u = cstr(uri);
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_table_write(u.as_ptr(), at.map_or(std::ptr::null(), |d| d.ptr()), &mut data, &p, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    Ds(out)
}

pub(crate) fn table() -> (String, Ds) {
    let uri = tempfile::tempdir().unwrap().keep().join("indexed.lance").to_str().unwrap().to_string();
    let ds = write(&uri, None, batch(0, ROWS));
    (uri, ds)
}

pub(crate) fn vector_params(kind: LanceVectorIndexType) -> LanceVectorIndexParams {
    let mut p = std::mem::MaybeUninit::<LanceVectorIndexParams>::uninit();
    assert_eq!(lance_vector_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceVectorIndexParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    p.index_type = kind as i32;
    p.num_partitions = 4;
    p.num_sub_vectors = 4;
    p
}

fn vector_index(ds: &Ds, column: &str, name: Option<&str>, replace: bool, p: &LanceVectorIndexParams) -> Result<Ds, (i32, String)> {
    let c = cstr(column);
    let n = name.map(cstr);
    let mut out = std::ptr::null_mut();
    let rc = lance_dataset_create_vector_index(ds.ptr(), c.as_ptr(), n.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()), replace, p, &mut out);
    if rc != 0 {
        return Err((rc, last_message()));
    }
    Ok(Ds(out))
}

/// (name, column, type) of every index.
pub(crate) fn indexes(ds: &Ds) -> Vec<(String, String, String)> {
    let mut list = std::ptr::null_mut();
    assert_eq!(lance_dataset_indexes(ds.ptr(), &mut list), 0, "{}", last_message());
    let s = |p: *const std::ffi::c_char| unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap().to_string();
    let out = (0..lance_index_list_count(list))
        .map(|i| (s(lance_index_list_name(list, i)), s(lance_index_list_column(list, i)), s(lance_index_list_type(list, i))))
        .collect();
    lance_index_list_free(list);
    out
}

pub(crate) fn kinds(plan: *mut LanceSplitPlan) -> Vec<i32> {
    let k = (0..lance_split_plan_count(plan))
        .map(|i| {
            let s = lance_split_plan_get(plan, i);
            let k = lance_split_kind(s);
            lance_split_free(s);
            k
        })
        .collect();
    lance_split_plan_free(plan);
    k
}

#[test]
fn every_vector_index_type_is_built_listed_and_planned() {
    let (uri, v1) = table();
    let mut latest = v1;
    for (kind, column_name) in [
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ, "ivf_pq"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_FLAT, "ivf_flat"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_SQ, "ivf_sq"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_HNSW_FLAT, "ivf_hnsw_flat"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_HNSW_PQ, "ivf_hnsw_pq"),
        (LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_HNSW_SQ, "ivf_hnsw_sq"),
    ] {
        let before = lance_dataset_version(latest.ptr());
        let next = vector_index(&latest, "emb", Some(column_name), true, &vector_params(kind)).unwrap_or_else(|e| panic!("{column_name}: {e:?}"));
        assert_eq!(lance_dataset_version(next.ptr()), before + 1, "{column_name}: one new version");
        let found = indexes(&next);
        assert!(found.iter().any(|(n, c, _)| n == column_name && c == "emb"), "{column_name}: {found:?}");
        latest = next;
    }
    // the vector plan of the latest index type uses index segments, no flat split
    let c = cstr("emb");
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_vector_search(latest.ptr(), c.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan), 0, "{}", last_message());
    let k = kinds(plan);
    assert!(!k.is_empty() && k.iter().all(|k| *k == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32), "{k:?}");
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 7);

    // bad input: nothing committed
    let mut bad = vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ);
    for (column, name, replace, edit, code, needle) in [
        ("nope", None, false, 0, LANCE_ERR_INVALID_ARGUMENT, "nope"),
        ("id", None, false, 0, LANCE_ERR_INVALID_ARGUMENT, "fixed-size list"),
        ("emb", Some("ivf_pq"), false, 0, LANCE_ERR_INVALID_ARGUMENT, "already exists"),
        ("emb", None, false, 1, LANCE_ERR_INVALID_ARGUMENT, "num_partitions"),
        ("emb", None, false, 2, LANCE_ERR_INVALID_ARGUMENT, "divide the dimension"),
        ("emb", None, false, 3, LANCE_ERR_INVALID_ARGUMENT, "LanceVectorIndexType"),
        ("emb", None, false, 4, LANCE_ERR_INVALID_ARGUMENT, "metric"),
    ] {
        bad = vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ);
        match edit {
            1 => bad.num_partitions = (ROWS + 1) as u32,
            2 => bad.num_sub_vectors = 5,
            3 => bad.index_type = 42,
            4 => bad.metric = 99,
            _ => {}
        }
        let err = vector_index(&latest, column, name, replace, &bad).unwrap_err();
        assert_eq!(err.0, code as i32, "{column} {edit}: {}", err.1);
        assert!(err.1.contains(needle), "{column} {edit}: {}", err.1);
    }
    let _ = bad;
    assert_eq!(lance_dataset_version(Ds::open(&uri, 0).ptr()), 7, "failures committed nothing");

    // drop: gone from the list and the plan falls back to flat splits; twice is NOT_FOUND
    let mut current = latest;
    for name in ["ivf_pq", "ivf_flat", "ivf_sq", "ivf_hnsw_flat", "ivf_hnsw_pq", "ivf_hnsw_sq"] {
        let n = cstr(name);
        let mut out = std::ptr::null_mut();
        assert_eq!(lance_dataset_drop_index(current.ptr(), n.as_ptr(), &mut out), 0, "{}", last_message());
        current = Ds(out);
    }
    assert!(indexes(&current).is_empty());
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_vector_search(current.ptr(), c.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan), 0);
    assert!(kinds(plan).iter().all(|k| *k == LanceSplitKind::LANCE_SPLIT_FLAT as i32));
    let n = cstr("ivf_pq");
    assert_err(lance_dataset_drop_index(current.ptr(), n.as_ptr(), std::ptr::null_mut()), LANCE_ERR_NOT_FOUND, "ivf_pq");
}

#[test]
fn scalar_and_full_text_indexes_are_used_by_the_plans() {
    let (_uri, v1) = table();
    let scalar = |ds: &Ds, column: &str, kind: LanceScalarIndexType| -> Result<Ds, (i32, String)> {
        let mut p = std::mem::MaybeUninit::<LanceScalarIndexParams>::uninit();
        assert_eq!(lance_scalar_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceScalarIndexParams>()), 0);
        let mut p = unsafe { p.assume_init() };
        p.index_type = kind as i32;
        let c = cstr(column);
        let mut out = std::ptr::null_mut();
        match lance_dataset_create_scalar_index(ds.ptr(), c.as_ptr(), std::ptr::null(), false, &p, &mut out) {
            0 => Ok(Ds(out)),
            rc => Err((rc, last_message())),
        }
    };
    let v2 = scalar(&v1, "id", LanceScalarIndexType::LANCE_SCALAR_INDEX_BTREE).unwrap();
    let v3 = scalar(&v2, "category", LanceScalarIndexType::LANCE_SCALAR_INDEX_BITMAP).unwrap();
    let v4 = scalar(&v3, "tags", LanceScalarIndexType::LANCE_SCALAR_INDEX_LABEL_LIST).unwrap();
    let names: Vec<String> = indexes(&v4).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let explain = |ds: &Ds, filter: &str| {
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
    for filter in ["id < 100", "category = 'red'", "array_has_any(tags, ['t1'])"] {
        let plan = explain(&v4, filter);
        assert!(plan.contains("ScalarIndexQuery"), "{filter}: {plan}");
        let mut with = 0u64;
        let mut without = 0u64;
        assert_eq!(lance_dataset_count_rows_where_v2(v4.ptr(), cstr(filter).as_ptr(), &mut with, std::ptr::null_mut()), 0);
        assert_eq!(lance_dataset_count_rows_where_v2(v1.ptr(), cstr(filter).as_ptr(), &mut without, std::ptr::null_mut()), 0);
        assert_eq!(with, without, "{filter}: the index gives the same count");
    }
    assert!(!explain(&v1, "id < 100").contains("ScalarIndexQuery"));
    // a type that does not fit
    let err = scalar(&v4, "tags", LanceScalarIndexType::LANCE_SCALAR_INDEX_BTREE).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("BTREE"), "{err:?}");
    let err = scalar(&v4, "id", LanceScalarIndexType::LANCE_SCALAR_INDEX_LABEL_LIST).unwrap_err();
    assert!(err.0 == LANCE_ERR_INVALID_ARGUMENT as i32 && err.1.contains("list column"), "{err:?}");

    // INVERTED with positions: the full-text plan has a segment split and no flat split
    let mut p = std::mem::MaybeUninit::<LanceInvertedIndexParams>::uninit();
    assert_eq!(lance_inverted_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceInvertedIndexParams>()), 0);
    let mut p = unsafe { p.assume_init() };
    assert_eq!((p.max_token_length, p.lower_case, p.stem, p.with_position), (40, 1, 1, 0), "Lance's defaults");
    p.with_position = 1;
    let c = cstr("text");
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_create_inverted_index(v4.ptr(), c.as_ptr(), std::ptr::null(), false, &p, &mut out), 0, "{}", last_message());
    let v5 = Ds(out);
    let mut plan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_fts(v5.ptr(), c.as_ptr(), 0, &mut plan), 0, "{}", last_message());
    let k = kinds(plan);
    assert!(!k.is_empty() && k.iter().all(|k| *k == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32), "{k:?}");
    // bad tokenizer options, a non-string column
    let lang = cstr("Klingon");
    let mut bad = p;
    bad.language = lang.as_ptr();
    assert_err(lance_dataset_create_inverted_index(v5.ptr(), c.as_ptr(), cstr("t2").as_ptr(), false, &bad, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "Klingon");
    let id = cstr("id");
    assert_err(lance_dataset_create_inverted_index(v5.ptr(), id.as_ptr(), std::ptr::null(), false, &p, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "string column");
}

#[test]
fn appended_rows_are_indexed_by_optimize_and_the_flat_splits_go() {
    let (uri, v1) = table();
    let with_vec = vector_index(&v1, "emb", Some("emb_idx"), false, &vector_params(LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ)).unwrap();
    let c = cstr("text");
    let mut p = std::mem::MaybeUninit::<LanceInvertedIndexParams>::uninit();
    assert_eq!(lance_inverted_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceInvertedIndexParams>()), 0);
    let p = unsafe { p.assume_init() };
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_create_inverted_index(with_vec.ptr(), c.as_ptr(), std::ptr::null(), false, &p, &mut out), 0, "{}", last_message());
    let indexed = Ds(out);
    let appended = write(&uri, Some(&indexed), batch(ROWS, 400));
    let emb = cstr("emb");
    let vector_kinds = |ds: &Ds| {
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_vector_search(ds.ptr(), emb.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, true, 0, &mut plan), 0, "{}", last_message());
        kinds(plan)
    };
    let text_kinds = |ds: &Ds| {
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_fts(ds.ptr(), c.as_ptr(), 0, &mut plan), 0, "{}", last_message());
        kinds(plan)
    };
    assert!(vector_kinds(&appended).contains(&(LanceSplitKind::LANCE_SPLIT_FLAT as i32)));
    assert!(text_kinds(&appended).contains(&(LanceSplitKind::LANCE_SPLIT_FTS_FLAT as i32)));
    // one index first, by name: its plan loses the flat split, the other keeps it
    let name = cstr("emb_idx");
    assert_eq!(lance_dataset_optimize_indexes(appended.ptr(), name.as_ptr(), 0, &mut out), 0, "{}", last_message());
    let one = Ds(out);
    let k = vector_kinds(&one);
    assert_eq!(k, vec![LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32; 2], "a new segment for the appended rows");
    assert!(text_kinds(&one).contains(&(LanceSplitKind::LANCE_SPLIT_FTS_FLAT as i32)));
    // then every index, merging into one segment
    assert_eq!(lance_dataset_optimize_indexes(one.ptr(), std::ptr::null(), 2, &mut out), 0, "{}", last_message());
    let all = Ds(out);
    assert!(text_kinds(&all).iter().all(|k| *k == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32));
    assert_eq!(vector_kinds(&all), vec![LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32], "merged into one segment");
    // nothing to do: no new version; an unknown name
    assert_eq!(lance_dataset_optimize_indexes(all.ptr(), std::ptr::null(), 0, &mut out), 0, "{}", last_message());
    let again = Ds(out);
    assert_eq!(lance_dataset_version(again.ptr()), lance_dataset_version(all.ptr()));
    let ghost = cstr("ghost");
    assert_err(lance_dataset_optimize_indexes(all.ptr(), ghost.as_ptr(), 0, std::ptr::null_mut()), LANCE_ERR_NOT_FOUND, "ghost");
}
