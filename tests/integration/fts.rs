//! Full-text search across splits on the testkit's `docs` table (INVERTED index in two
//! segments, an unindexed tail, deletions), through the C ABI: the merged top-k equals Lance's
//! own single-process search (local and through a REST catalog), statistics the worker would
//! have alone give different scores, prewarm makes segment searches read no index file, and
//! bad input is a clear error.

use std::ffi::{c_char, CStr};

use arrow::array::{Array, Float32Array, UInt64Array};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::fts::*;
use lance_host::ffi::index::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::LanceIoStats;
use lance_host::LanceErrorCode::*;
use lance_host_testkit as tk;

use crate::common::*;
use crate::vector::{combine, splits, Plan, SplitH};

fn docs_uri() -> String {
    fixture().facts.get("docs.uri").to_string()
}

struct Q {
    q: LanceTextQuery,
    _keep: (std::ffi::CString, std::ffi::CString, Option<std::ffi::CString>, CStrs),
}

fn text_query(text: &str, kind: LanceTextMatch, slop: u32, k: u64, filter: Option<&str>) -> Q {
    let mut q = std::mem::MaybeUninit::<LanceTextQuery>::uninit();
    assert_eq!(lance_text_query_init(q.as_mut_ptr(), std::mem::size_of::<LanceTextQuery>()), 0);
    let mut q = unsafe { q.assume_init() };
    let (column, t, f, cols) = (cstr("text"), cstr(text), filter.map(cstr), cstrs(&["id"]));
    q.column = column.as_ptr();
    q.text = t.as_ptr();
    q.match_kind = kind as i32;
    q.slop = slop;
    q.k = k;
    q.prefilter_sql = f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr());
    q.columns = cols.ptrs.as_ptr();
    q.num_columns = 1;
    Q { q, _keep: (column, t, f, cols) }
}

fn plan_fts(ds: &Ds) -> Result<Plan, (i32, String)> {
    let c = cstr("text");
    let mut p = std::ptr::null_mut();
    match lance_dataset_plan_fts(ds.ptr(), c.as_ptr(), 0, &mut p) {
        0 => Ok(Plan(p)),
        code => Err((code, last_message())),
    }
}

fn stats(ds: &Ds, q: &Q) -> Result<(Vec<u8>, LanceIoStats), (i32, String)> {
    let mut p = std::ptr::null_mut();
    let mut n = 0usize;
    let mut io = LanceIoStats::default();
    match lance_dataset_fts_stats(ds.ptr(), &q.q, &mut p, &mut n, &mut io) {
        0 => {
            let v = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
            lance_bytes_free(p, n);
            Ok((v, io))
        }
        code => Err((code, last_message())),
    }
}

fn search_split(ds: &Ds, s: &SplitH, q: &Q, st: &[u8]) -> Result<FFI_ArrowArrayStream, (i32, String)> {
    let mut out = FFI_ArrowArrayStream::empty();
    match lance_split_fts_search(ds.ptr(), s.0, &q.q, st.as_ptr(), st.len(), &mut out) {
        0 => Ok(out),
        code => Err((code, last_message())),
    }
}

/// (row ids, scores, ids) of a full-text result.
type Hits = (Vec<u64>, Vec<f32>, Vec<i64>);

fn hits(batches: &[arrow::array::RecordBatch]) -> Hits {
    let mut h: Hits = Default::default();
    for b in batches {
        let r = b.column_by_name("_rowid").unwrap().as_any().downcast_ref::<UInt64Array>().unwrap();
        let s = b.column_by_name("_score").unwrap().as_any().downcast_ref::<Float32Array>().unwrap();
        h.0.extend(r.values().iter());
        h.1.extend(s.values().iter());
    }
    h.2 = i64_column(batches, "id");
    h
}

/// Plan, compute statistics once, search every split with them, merge by score.
fn distributed(ds: &Ds, q: &Q, k: u64) -> Hits {
    let plan = plan_fts(ds).unwrap();
    let all = splits(&plan);
    let (st, _) = stats(ds, q).unwrap();
    let mut streams: Vec<FFI_ArrowArrayStream> = all.iter().map(|s| search_split(ds, s, q, &st).unwrap()).collect();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_fts_merge(streams.as_mut_ptr(), streams.len(), k, 0, &mut out), 0, "{}", last_message());
    hits(&read_stream(out).unwrap())
}

/// Lance's own single-process full-text search of the table (a separate reader, its own runtime).
fn lance_search(uri: &str, text: &str, kind: LanceTextMatch, slop: u32, k: usize, filter: Option<&str>) -> Hits {
    lance_search_at(uri, None, text, kind, slop, k, filter)
}

/// `lance_search` of a version (None: the latest).
fn lance_search_at(
    uri: &str,
    version: Option<u64>,
    text: &str,
    kind: LanceTextMatch,
    slop: u32,
    k: usize,
    filter: Option<&str>,
) -> Hits {
    use lance_index::scalar::FullTextSearchQuery;
    use lance_index::scalar::inverted::query::{FtsQuery, MatchQuery, Operator, PhraseQuery};
    let (uri, text, filter) = (uri.to_string(), text.to_string(), filter.map(str::to_string));
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            let mut ds = lance::Dataset::open(&uri).await.unwrap();
            if let Some(v) = version {
                ds = ds.checkout_version(v).await.unwrap();
            }
            let query = match kind {
                LanceTextMatch::LANCE_TEXT_MATCH_PHRASE => {
                    FtsQuery::Phrase(PhraseQuery::new(text).with_column(Some("text".into())).with_slop(slop))
                }
                other => {
                    let op = if other == LanceTextMatch::LANCE_TEXT_MATCH_ALL { Operator::And } else { Operator::Or };
                    FtsQuery::Match(MatchQuery::new(text).with_column(Some("text".into())).with_operator(op))
                }
            };
            let mut scanner = ds.scan();
            scanner.full_text_search(FullTextSearchQuery::new_query(query)).unwrap();
            scanner.project(&["id"]).unwrap();
            scanner.with_row_id();
            scanner.limit(Some(k as i64), None).unwrap();
            if let Some(f) = filter {
                scanner.filter(&f).unwrap();
                scanner.prefilter(true);
            }
            let batch = scanner.try_into_batch().await.unwrap();
            hits(&[batch])
        })
    })
    .join()
    .unwrap()
}

/// Same rows with the same scores (1e-5 relative); rows tied with the k-th score may differ.
#[track_caller]
fn assert_same(got: &Hits, want: &Hits, what: &str) {
    assert_eq!(got.0.len(), want.0.len(), "{what}: row count");
    for (i, (a, b)) in got.1.iter().zip(&want.1).enumerate() {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-6), "{what}: score {i}: {a} vs {b}");
    }
    if let Some(last) = want.1.last() {
        let tol = 1e-5 * last.abs().max(1e-6);
        let above = |h: &Hits| -> Vec<u64> {
            let mut v: Vec<u64> = h.0.iter().zip(&h.1).filter(|(_, s)| **s > last + tol).map(|(r, _)| *r).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(above(got), above(want), "{what}: rows");
    }
}

fn queries() -> Vec<(String, LanceTextMatch, u32)> {
    use LanceTextMatch::*;
    let mut v: Vec<(String, LanceTextMatch, u32)> = ["t000", "t001", "t010", "t050", "t120", "t199", "quick", "nothere"]
        .iter()
        .map(|t| (t.to_string(), LANCE_TEXT_MATCH_ANY, 0))
        .collect();
    v.push(("t000 t002 t030".into(), LANCE_TEXT_MATCH_ANY, 0));
    v.push(("t000 t001".into(), LANCE_TEXT_MATCH_ALL, 0));
    v.push(("quick brown fox".into(), LANCE_TEXT_MATCH_PHRASE, 0));
    v.push(("quick fox".into(), LANCE_TEXT_MATCH_PHRASE, 1));
    v.push(("brown quick".into(), LANCE_TEXT_MATCH_PHRASE, 0));
    v
}

#[test]
fn fts_merged_top_k_equals_lances_own_search() {
    let uri = docs_uri();
    let ds = Ds::open(&uri, 0);
    let plan = plan_fts(&ds).unwrap();
    let kinds: Vec<i32> = splits(&plan).iter().map(|s| lance_split_kind(s.0)).collect();
    assert!(kinds.iter().filter(|k| **k == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32).count() >= 2, "{kinds:?}");
    assert!(kinds.contains(&(LanceSplitKind::LANCE_SPLIT_FTS_FLAT as i32)), "{kinds:?}");
    let mut nonempty = 0;
    for filter in [None, Some("id % 3 = 1")] {
        for (text, kind, slop) in queries() {
            let q = text_query(&text, kind, slop, 10, filter);
            let got = distributed(&ds, &q, 10);
            let want = lance_search(&uri, &text, kind, slop, 10, filter);
            assert_same(&got, &want, &format!("{text:?} {kind:?} slop {slop} filter {filter:?}"));
            assert!(got.2.iter().all(|id| !tk::doc_deleted(*id)), "deleted rows returned");
            nonempty += usize::from(!want.0.is_empty());
        }
    }
    assert!(nonempty >= 16, "too few queries matched: {nonempty}");
}

#[test]
fn combined_fts_splits_equal_lances_own_search() {
    // A worker that runs every segment split as one search, and the flat splits as another.
    let uri = docs_uri();
    let ds = Ds::open(&uri, 0);
    let plan = plan_fts(&ds).unwrap();
    let all = splits(&plan);
    let of = |kind: LanceSplitKind| all.iter().filter(|s| lance_split_kind(s.0) == kind as i32).collect::<Vec<_>>();
    let (segs, flats) = (of(LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT), of(LanceSplitKind::LANCE_SPLIT_FTS_FLAT));
    assert!(segs.len() >= 2 && !flats.is_empty());
    let combined = [combine(&segs).unwrap(), combine(&flats).unwrap()];
    let mut count = 0usize;
    let mut n = 0usize;
    assert!(!lance_split_segment_uuids(combined[0].0, &mut count).is_null());
    assert_eq!(count, segs.len());
    assert!(lance_split_segment_uuids(combined[1].0, &mut n).is_null() && n == 0);
    let mut explained = std::ptr::null_mut();
    let q = text_query("t001", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 10, None);
    let (st, _) = stats(&ds, &q).unwrap();
    assert_eq!(lance_split_explain_fts(ds.ptr(), combined[0].0, &q.q, st.as_ptr(), st.len(), &mut explained), 0);
    let text = unsafe { CStr::from_ptr(explained) }.to_string_lossy().into_owned();
    lance_host::ffi::dataset::lance_string_free(explained);
    assert!(text.contains("segments "), "{text}");
    for filter in [None, Some("id % 3 = 1")] {
        for (text, kind, slop) in queries() {
            let q = text_query(&text, kind, slop, 10, filter);
            let (st, _) = stats(&ds, &q).unwrap();
            let mut streams: Vec<FFI_ArrowArrayStream> =
                combined.iter().map(|s| search_split(&ds, s, &q, &st).unwrap()).collect();
            let mut out = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_fts_merge(streams.as_mut_ptr(), streams.len(), 10, 0, &mut out), 0, "{}", last_message());
            let got = hits(&read_stream(out).unwrap());
            let want = lance_search(&uri, &text, kind, slop, 10, filter);
            assert_same(&got, &want, &format!("combined: {text:?} {kind:?} slop {slop} filter {filter:?}"));
        }
    }
}

/// The latest version of the docs table whose index covers every fragment (before the tail
/// was appended): segment splits only, at least two.
fn fully_indexed_docs_version(uri: &str) -> u64 {
    let latest = lance_host::snapshot::open(uri, Default::default(), 0).unwrap().version();
    (1..=latest)
        .rev()
        .find(|v| {
            let snap = lance_host::snapshot::open(uri, Default::default(), *v).unwrap();
            lance_host::fts::plan_text(&snap, "text", 0).is_ok_and(|p| {
                p.splits.len() >= 2 && p.splits.iter().all(|s| s.kind == lance_host::split::SplitKind::TextSegment)
            })
        })
        .expect("a version of the docs table with every fragment indexed")
}

#[test]
fn a_whole_corpus_split_is_searched_without_shipped_statistics() {
    // One process, one split of every segment on a fully indexed snapshot: no statistics pass,
    // the search computes them, and the answer is still Lance's.
    let uri = docs_uri();
    let v = fully_indexed_docs_version(&uri);
    let ds = Ds::open(&uri, v);
    let plan = plan_fts(&ds).unwrap();
    let all = splits(&plan);
    let whole = combine(&all.iter().collect::<Vec<_>>()).unwrap();
    let mut nonempty = 0;
    for filter in [None, Some("id % 3 = 1")] {
        for (text, kind, slop) in queries() {
            let what = format!("{text:?} {kind:?} slop {slop} filter {filter:?} at version {v}");
            let q = text_query(&text, kind, slop, 10, filter);
            let mut out = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_fts_search(ds.ptr(), whole.0, &q.q, std::ptr::null(), 0, &mut out), 0, "{what}: {}", last_message());
            let own = hits(&read_stream(out).unwrap());
            let (st, _) = stats(&ds, &q).unwrap();
            let shipped = hits(&read_stream(search_split(&ds, &whole, &q, &st).unwrap()).unwrap());
            assert_same(&own, &shipped, &format!("without against with statistics: {what}"));
            assert_same(&own, &lance_search_at(&uri, Some(v), &text, kind, slop, 10, filter), &what);
            nonempty += usize::from(!own.0.is_empty());
        }
    }
    assert!(nonempty >= 16, "too few queries matched: {nonempty}");
    let q = text_query("t001", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 10, None);
    let mut text: *mut c_char = std::ptr::null_mut();
    assert_eq!(lance_split_explain_fts(ds.ptr(), whole.0, &q.q, std::ptr::null(), 0, &mut text), 0, "{}", last_message());
    let explained = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    lance_host::ffi::dataset::lance_string_free(text);
    assert!(explained.contains("the whole corpus"), "{explained}");
    // A split naming another index of the column (bytes not from this table's plan) is refused.
    let snap = lance_host::snapshot::open(&uri, Default::default(), v).unwrap();
    let mut forged = lance_host::fts::plan_text(&snap, "text", 0).unwrap().splits.remove(0);
    forged.segments = lance_host::fts::plan_text(&snap, "text", 0).unwrap().splits.iter().flat_map(|s| s.segments.clone()).collect();
    let tq = lance_host::fts::TextQuery {
        column: "text".into(),
        text: "t001".into(),
        kind: lance_host::fts::TextMatch::Any,
        k: 10,
        prefilter: None,
        columns: vec![],
        with_row_id: true,
    };
    assert!(lance_host::fts::search_split(&snap, &forged, &tq, None).is_ok(), "every segment: the whole corpus");
    forged.index_name = "other_idx".into();
    let e = lance_host::fts::search_split(&snap, &forged, &tq, None).err().unwrap();
    assert_eq!(e.code, LANCE_ERR_INVALID_ARGUMENT, "{}", e.message);
    assert!(e.message.contains("'other_idx'") && e.message.contains("plan again"), "{}", e.message);

    // Anything less than the whole corpus needs the statistics: one segment of the two ...
    let mut out = FFI_ArrowArrayStream::empty();
    assert_err(lance_split_fts_search(ds.ptr(), all[0].0, &q.q, std::ptr::null(), 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "segments of index");
    assert_err(lance_split_explain_fts(ds.ptr(), all[0].0, &q.q, std::ptr::null(), 0, &mut text), LANCE_ERR_INVALID_ARGUMENT, "segments of index");
    // ... every segment of a later version with an unindexed tail, and its flat splits.
    let latest = Ds::open(&uri, 0);
    let lplan = plan_fts(&latest).unwrap();
    let lall = splits(&lplan);
    let of = |kind: LanceSplitKind| lall.iter().filter(|s| lance_split_kind(s.0) == kind as i32).collect::<Vec<_>>();
    let segs = combine(&of(LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT)).unwrap();
    assert_err(lance_split_fts_search(latest.ptr(), segs.0, &q.q, std::ptr::null(), 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "not covered by index");
    let flats = combine(&of(LanceSplitKind::LANCE_SPLIT_FTS_FLAT)).unwrap();
    assert_err(lance_split_fts_search(latest.ptr(), flats.0, &q.q, std::ptr::null(), 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "flat split");
    // A non-NULL pointer with length 0 is "no statistics" too; NULL with a length stays an error.
    let empty: [u8; 0] = [];
    assert_err(lance_split_fts_search(latest.ptr(), flats.0, &q.q, empty.as_ptr(), 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "flat split");
    assert_err(lance_split_fts_search(ds.ptr(), whole.0, &q.q, std::ptr::null(), 3, &mut out), LANCE_ERR_INVALID_ARGUMENT, "stats");
}

#[test]
fn fts_through_a_rest_catalog_equals_lances_own_search() {
    let root = fixture().root.clone();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = rt
        .block_on(lance_host_rest_server::start(root.to_str().unwrap(), Default::default()))
        .expect("start REST server");
    let uri = server.uri();
    let (_keep, props) = kv(&[("type", "rest"), ("uri", &uri)]);
    let cat = lance_host::ffi::catalog::lance_catalog_open(props.as_ptr());
    assert!(!cat.is_null(), "{}", last_message());
    let table = cstr("docs");
    let ds = lance_host::ffi::catalog::lance_catalog_open_table(cat, std::ptr::null(), 0, table.as_ptr(), 0);
    assert!(!ds.is_null(), "{}", last_message());
    let ds = Ds(ds);
    for (text, kind, slop) in queries().into_iter().take(6) {
        let q = text_query(&text, kind, slop, 10, None);
        assert_same(&distributed(&ds, &q, 10), &lance_search(&docs_uri(), &text, kind, slop, 10, None), &text);
    }
    lance_host::ffi::catalog::lance_catalog_free(cat);
    drop(server);
}

#[test]
fn scores_without_shipped_statistics_are_detectably_different() {
    // A worker that scored its segment with only its segment's statistics (what it can see
    // alone) would rank differently from the corpus: the shipped statistics exist for this.
    let uri = docs_uri();
    let snap = lance_host::snapshot::open(&uri, Default::default(), 0).unwrap();
    let plan = lance_host::fts::plan_text(&snap, "text", 0).unwrap();
    let q = lance_host::fts::TextQuery {
        column: "text".into(),
        text: "t040 t005".into(),
        kind: lance_host::fts::TextMatch::Any,
        k: 20,
        prefilter: None,
        columns: vec!["id".into()],
        with_row_id: true,
    };
    let (global, _) = lance_host::fts::corpus_stats(&snap, &q).unwrap();
    let mut differs = 0;
    for split in &plan.splits {
        let local = lance_host::fts::local_only_stats(&snap, split, &q).unwrap();
        assert_ne!(local.indexed.num_docs + local.flat.len() as u64, 0);
        let read = |st| {
            hits(&lance_host::fts::search_split(&snap, split, &q, Some(st)).unwrap().collect_batches().unwrap())
        };
        let (a, b) = (read(&global), read(&local));
        assert_eq!(a.0.len(), b.0.len());
        differs += a.1.iter().zip(&b.1).filter(|(x, y)| (*x - *y).abs() > 1e-3 * x.abs()).count();
    }
    assert!(differs > 0, "local statistics gave the same scores as the corpus's");
    // And the merged answer with shipped statistics is Lance's.
    let ds = Ds::open(&uri, 0);
    let cq = text_query("t040 t005", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 20, None);
    assert_same(&distributed(&ds, &cq, 20), &lance_search(&uri, "t040 t005", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 20, None), "global");
}

#[test]
fn prewarmed_inverted_segments_are_searched_without_index_reads() {
    // s3:// with the data cache off for these tables, so the counts are storage requests.
    let s3 = crate::s3::shared();
    let write = |name: &str| {
        let table = format!("{}/{name}/docs.lance", s3.facts.get("root"));
        let (t, opts) = (table.clone(), crate::s3::s3_options(&s3.endpoint));
        std::thread::spawn(move || {
            tokio::runtime::Runtime::new().unwrap().block_on(async move {
                tk::write_docs(&t, &mut tk::Facts::default(), &opts).await.expect("write docs")
            })
        })
        .join()
        .unwrap();
        table
    };
    let mut opts = crate::s3::s3_options(&s3.endpoint);
    opts.insert("lance_host.data_cache".into(), "false".into());
    // A match and a phrase query (phrases read the positions too).
    let search_segments = |ds: &Ds| -> LanceIoStats {
        let plan = plan_fts(ds).unwrap();
        let mut total = LanceIoStats::default();
        for q in [
            text_query("t003 quick", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 10, None),
            text_query("quick brown fox", LanceTextMatch::LANCE_TEXT_MATCH_PHRASE, 0, 10, None),
        ] {
            let (st, _) = stats(ds, &q).unwrap();
            for s in splits(&plan).iter().filter(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32) {
                let mut out = search_split(ds, s, &q, &st).unwrap();
                let (batches, io) = collect_with_stats(&mut out);
                assert!(total_rows(&batches) > 0);
                add_io(&mut total, &io);
            }
        }
        total
    };
    // Cold: the segment searches read index files.
    let cold_uri = write("fts_cold");
    let cold = crate::s3::open_s3_with(&cold_uri, &opts).unwrap();
    let c = search_segments(&cold);
    assert!(c.index_read_requests > 0 && c.index_cache_misses > 0, "{c:?}");
    // Warmed: prewarm reads them once; the searches then read no index file.
    let warm_uri = write("fts_warm");
    let warm = crate::s3::open_s3_with(&warm_uri, &opts).unwrap();
    let name = cstr("text_idx");
    let mut p = LanceIoStats::default();
    assert_eq!(lance_dataset_prewarm_index_with_stats_v2(warm.ptr(), name.as_ptr(), &mut p), 0, "{}", last_message());
    assert!(p.index_read_requests > 0 && p.index_cache_misses == 2, "{p:?}");
    let w = search_segments(&warm);
    assert_eq!(w.index_read_requests, 0, "index files read after prewarm: {w:?}");
    assert_eq!(w.index_cache_misses, 0, "{w:?}");
    assert!(w.index_cache_hits > 0, "{w:?}");
}

#[test]
fn bad_fts_input_is_a_clear_error() {
    let ds = Ds::open(&docs_uri(), 0);
    let plan = plan_fts(&ds).unwrap();
    let all = splits(&plan);
    let q = text_query("quick", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 5, None);
    let (st, _) = stats(&ds, &q).unwrap();
    let mut out = FFI_ArrowArrayStream::empty();
    // NULL arguments.
    assert_err(lance_split_fts_search(std::ptr::null(), all[0].0, &q.q, st.as_ptr(), st.len(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "dataset");
    assert_err(lance_split_fts_search(ds.ptr(), std::ptr::null(), &q.q, st.as_ptr(), st.len(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "split");
    assert_err(lance_split_fts_search(ds.ptr(), all[0].0, std::ptr::null(), st.as_ptr(), st.len(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "query");
    assert_err(lance_split_fts_search(ds.ptr(), all[0].0, &q.q, std::ptr::null(), 5, &mut out), LANCE_ERR_INVALID_ARGUMENT, "stats");
    assert_err(lance_split_fts_search(ds.ptr(), all[0].0, &q.q, st.as_ptr(), st.len(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "out");
    assert_err(lance_dataset_plan_fts(ds.ptr(), std::ptr::null(), 0, &mut std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "column");
    // Invalid UTF-8 in the query text.
    let bad = [0x66u8, 0xff, 0x00];
    let mut bq = text_query("x", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 5, None);
    bq.q.text = bad.as_ptr() as *const c_char;
    let (mut p, mut n) = (std::ptr::null_mut(), 0usize);
    assert_err(lance_dataset_fts_stats(ds.ptr(), &bq.q, &mut p, &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "UTF-8");
    // A struct_size of 0 (the caller forgot the init function).
    let mut zq = text_query("x", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 5, None);
    zq.q.struct_size = 0;
    assert_err(lance_dataset_fts_stats(ds.ptr(), &zq.q, &mut p, &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "struct_size");
    // Unknown projection column and bad prefilter.
    let mut cq = text_query("quick", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 5, None);
    let nope = cstrs(&["nope"]);
    cq.q.columns = nope.ptrs.as_ptr();
    assert_err(lance_split_fts_search(ds.ptr(), all[0].0, &cq.q, st.as_ptr(), st.len(), &mut out), LANCE_ERR_INVALID_ARGUMENT, "nope");
    let fq = text_query("quick", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 5, Some("nope > 1"));
    assert_err(lance_dataset_fts_stats(ds.ptr(), &fq.q, &mut p, &mut n, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT, "nope");
    // A vector split cannot run a text search, and a text split no vector search.
    let vds = Ds::open(&crate::vector::vectors_uri(), 0);
    let vplan = crate::vector::plan_vector(&vds, "embedding", lance_host::ffi::split::LanceMetric::LANCE_METRIC_L2, true).unwrap();
    let vsplit = &splits(&vplan)[0];
    let code = lance_split_fts_search(vds.ptr(), vsplit.0, &q.q, st.as_ptr(), st.len(), &mut out);
    assert!(code == LANCE_ERR_CORRUPT as i32 || code == LANCE_ERR_INVALID_ARGUMENT as i32, "{code}: {}", last_message());
    let mut vq = crate::vector::query("embedding", crate::vector::query_vector(1), 5);
    assert_err(
        lance_host::ffi::search::lance_split_search_v2(ds.ptr(), all[0].0, &vq.raw(), &mut out),
        LANCE_ERR_INVALID_ARGUMENT,
        "full-text split",
    );
    // The merge needs `_score`; a vector result is refused.
    let mut streams = [search_split(&ds, &all[0], &q, &st).unwrap()];
    let mut merged = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_fts_merge(streams.as_mut_ptr(), 1, 0, 0, &mut merged), 0);
    assert_eq!(total_rows(&read_stream(merged).unwrap()), 0, "k = 0 merges to nothing");
    // RRF: NULL and bad constants.
    let mut o = FFI_ArrowArrayStream::empty();
    assert_err(lance_rrf_merge(std::ptr::null_mut(), std::ptr::null_mut(), 5, 60.0, &mut o), LANCE_ERR_INVALID_ARGUMENT, "NULL");
    let mut a = search_split(&ds, &all[0], &q, &st).unwrap();
    let mut b = search_split(&ds, &all[0], &q, &st).unwrap();
    assert_err(lance_rrf_merge(&mut a, &mut b, 5, f64::NAN, &mut o), LANCE_ERR_INVALID_ARGUMENT, "RRF constant");
    let mut a = search_split(&ds, &all[0], &q, &st).unwrap();
    let mut b = search_split(&ds, &all[0], &q, &st).unwrap();
    assert_err(lance_rrf_merge(&mut a, &mut b, 5, 60.0, &mut o), LANCE_ERR_INVALID_ARGUMENT, "_distance");
    // Explain names the index and the segment.
    let mut text: *mut c_char = std::ptr::null_mut();
    let seg = all.iter().find(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32).unwrap();
    assert_eq!(lance_split_explain_fts(ds.ptr(), seg.0, &q.q, st.as_ptr(), st.len(), &mut text), 0, "{}", last_message());
    let explained = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    lance_host::ffi::dataset::lance_string_free(text);
    assert!(explained.contains("text_idx") && explained.contains("MatchQuery"), "{explained}");
}

#[test]
fn hybrid_rrf_of_vector_and_text_results() {
    // Fuse a text result with itself standing in as the "vector" list (distance = -score): the
    // fused order must be the text order, and scores follow 2 / (c + rank).
    let ds = Ds::open(&docs_uri(), 0);
    let q = text_query("t007 t011", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 8, None);
    let text = distributed(&ds, &q, 8);
    assert!(!text.0.is_empty());
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("_distance", arrow_schema::DataType::Float32, true),
        arrow_schema::Field::new("_rowid", arrow_schema::DataType::UInt64, false),
    ]));
    let vb = arrow::array::RecordBatch::try_new(
        schema.clone(),
        vec![
            std::sync::Arc::new(Float32Array::from(text.1.iter().map(|s| -s).collect::<Vec<_>>())),
            std::sync::Arc::new(UInt64Array::from(text.0.clone())),
        ],
    )
    .unwrap();
    let tschema = std::sync::Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("_score", arrow_schema::DataType::Float32, false),
        arrow_schema::Field::new("_rowid", arrow_schema::DataType::UInt64, false),
    ]));
    let tb = arrow::array::RecordBatch::try_new(
        tschema.clone(),
        vec![
            std::sync::Arc::new(Float32Array::from(text.1.clone())),
            std::sync::Arc::new(UInt64Array::from(text.0.clone())),
        ],
    )
    .unwrap();
    let export = |b: arrow::array::RecordBatch| {
        let r = arrow::array::RecordBatchIterator::new(vec![Ok(b.clone())], b.schema());
        FFI_ArrowArrayStream::new(Box::new(r))
    };
    let (mut v, mut t) = (export(vb), export(tb));
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_rrf_merge(&mut v, &mut t, 5, 60.0, &mut out), 0, "{}", last_message());
    let fused = read_stream(out).unwrap();
    let ids = u64_column(&fused, "_rowid");
    assert_eq!(ids.len(), text.0.len().min(5));
    // Ties in score are ranked by row id in both lists, so compare with the tie-broken order.
    let mut order: Vec<(f32, u64)> = text.1.iter().copied().zip(text.0.iter().copied()).collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    assert_eq!(ids, order.iter().take(5).map(|x| x.1).collect::<Vec<_>>());
    let rel = fused[0].column_by_name("_relevance_score").unwrap().as_any().downcast_ref::<Float32Array>().unwrap();
    for (rank, r) in rel.values().iter().enumerate() {
        assert!((r - 2.0 / (60.0 + rank as f32 + 1.0)).abs() < 1e-6, "rank {rank}: {r}");
    }
}

#[test]
fn fts_struct_and_merge_arguments_are_checked() {
    // A struct_size below the first LanceTextQuery.
    let mut q = std::mem::MaybeUninit::<LanceTextQuery>::uninit();
    assert_err(lance_text_query_init(q.as_mut_ptr(), 8), LANCE_ERR_INVALID_ARGUMENT, "struct_size");
    assert_err(lance_text_query_init(std::ptr::null_mut(), std::mem::size_of::<LanceTextQuery>()), LANCE_ERR_INVALID_ARGUMENT, "out");
    // Merges: NULL streams with a count, and k = 0 for the fusion.
    let mut out = FFI_ArrowArrayStream::empty();
    assert_err(lance_fts_merge(std::ptr::null_mut(), 2, 5, 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "streams");
    assert_err(lance_fts_merge(std::ptr::null_mut(), 0, 5, 0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "no input");
    let ds = Ds::open(&docs_uri(), 0);
    let plan = plan_fts(&ds).unwrap();
    let all = splits(&plan);
    let tq = text_query("quick", LanceTextMatch::LANCE_TEXT_MATCH_ANY, 0, 5, None);
    let (st, _) = stats(&ds, &tq).unwrap();
    let mut a = search_split(&ds, &all[0], &tq, &st).unwrap();
    let mut b = search_split(&ds, &all[0], &tq, &st).unwrap();
    assert_err(lance_rrf_merge(&mut a, &mut b, 0, 60.0, &mut out), LANCE_ERR_INVALID_ARGUMENT, "k must");
    assert!(a.release.is_none() && b.release.is_none(), "the fusion takes its inputs also on failure");
}

/// The index-cache figures of the statistics pass and of the flat splits' searches of `q`.
fn tail_cache_io(ds: &Ds, q: &Q) -> (LanceIoStats, LanceIoStats) {
    let (st, io) = stats(ds, q).unwrap();
    let plan = plan_fts(ds).unwrap();
    let mut flat = LanceIoStats::default();
    for s in splits(&plan).iter().filter(|s| lance_split_kind(s.0) == LanceSplitKind::LANCE_SPLIT_FTS_FLAT as i32) {
        let mut out = search_split(ds, s, q, &st).unwrap();
        let (_, one) = collect_with_stats(&mut out);
        add_io(&mut flat, &one);
    }
    (io, flat)
}

#[test]
fn the_unindexed_tail_is_tokenized_once_per_process() {
    use LanceTextMatch::*;
    // A table of its own, so that no other test has tokenized its tail (one fragment).
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("docs.lance").to_str().unwrap().to_string();
    let u = uri.clone();
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            tk::write_docs(&u, &mut tk::Facts::default(), &Default::default()).await.expect("write docs")
        })
    })
    .join()
    .unwrap();
    let ds = Ds::open(&uri, 0);
    let session = || {
        let mut s = lance_host::ffi::session::LanceSessionStats::default();
        assert_eq!(lance_host::ffi::session::lance_session_stats_v2(&mut s), 0, "{}", last_message());
        s
    };
    let before = session();
    // First query: the statistics pass tokenizes the tail; the flat split reuses it.
    let q = text_query("t001 t007", LANCE_TEXT_MATCH_ANY, 0, 10, None);
    let (st, flat) = tail_cache_io(&ds, &q);
    assert_eq!((st.index_cache_hits, st.index_cache_misses), (0, 1), "statistics pass: {st:?}");
    assert_eq!((flat.index_cache_hits, flat.index_cache_misses), (1, 0), "flat split: {flat:?}");
    // Other queries, a prefilter, a phrase: no fragment is tokenized again.
    for q in [
        text_query("t050 quick", LANCE_TEXT_MATCH_ANY, 0, 10, Some("id % 2 = 0")),
        text_query("quick brown fox", LANCE_TEXT_MATCH_PHRASE, 0, 10, None),
        text_query("t000 t001", LANCE_TEXT_MATCH_ALL, 0, 10, Some("id > 1250")),
    ] {
        let (st, flat) = tail_cache_io(&ds, &q);
        assert_eq!((st.index_cache_hits, st.index_cache_misses), (1, 0), "statistics pass: {st:?}");
        assert_eq!((flat.index_cache_hits, flat.index_cache_misses), (1, 0), "flat split: {flat:?}");
    }
    let after = session();
    assert!(after.text_tail_misses >= before.text_tail_misses + 1, "{after:?}");
    assert!(after.text_tail_hits >= before.text_tail_hits + 7, "{after:?}");
    // A host built with the 0.7 header (176 bytes) gets what it knew, nothing written past it.
    let canary = 0xABAB_ABAB_ABAB_ABABu64;
    let mut buf = vec![canary; 32];
    buf[0] = 176;
    assert_eq!(lance_host::ffi::session::lance_session_stats_v2(buf.as_mut_ptr() as *mut _), 0, "{}", last_message());
    assert!(buf[176 / 8..].iter().all(|b| *b == canary), "bytes after the 0.7 struct were written");
    // The answers with a cached tail are Lance's.
    for (text, kind, slop) in queries() {
        let q = text_query(&text, kind, slop, 10, Some("id % 3 = 1"));
        let want = lance_search(&uri, &text, kind, slop, 10, Some("id % 3 = 1"));
        assert_same(&distributed(&ds, &q, 10), &want, &format!("{text:?} {kind:?}"));
    }
    // Rows of the tail deleted afterwards: the tail's identity changed, it is tokenized again,
    // and the deleted rows are not found.
    let hits_of = |ds: &Ds| distributed(ds, &text_query("quick", LANCE_TEXT_MATCH_ANY, 0, 500, None), 500);
    let tail_ids = |h: &Hits| h.2.iter().copied().filter(|id| *id >= 1200).collect::<Vec<_>>();
    let old = hits_of(&ds);
    assert!(tail_ids(&old).len() >= 10, "{:?}", old.2);
    let u = uri.clone();
    std::thread::spawn(move || {
        tokio::runtime::Runtime::new().unwrap().block_on(async move {
            let mut d = lance::Dataset::open(&u).await.unwrap();
            d.delete("id >= 1300").await.unwrap();
        })
    })
    .join()
    .unwrap();
    let newer = Ds::open(&uri, 0);
    let (st, _) = tail_cache_io(&newer, &text_query("quick", LANCE_TEXT_MATCH_ANY, 0, 10, None));
    assert_eq!(st.index_cache_misses, 1, "the changed tail is tokenized again: {st:?}");
    let now = hits_of(&newer);
    assert!(!tail_ids(&now).is_empty() && tail_ids(&now).iter().all(|id| *id < 1300), "{:?}", now.2);
    assert_same(&now, &lance_search(&uri, "quick", LANCE_TEXT_MATCH_ANY, 0, 500, None), "after the delete");
    // The handle pinned before the delete still sees its own tail.
    assert_eq!(hits_of(&ds), old);
}
