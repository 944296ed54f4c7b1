//! Batch vector search bench side: the split protocol through the C ABI — plan once, then
//! either one split search per split for the whole batch of queries (`batch`), merged per query,
//! or one split search per split per query (`loop`), merged per query.
//!
//!     lance-host-bench batch <uri> <queries.json> <batch|loop|exact> <k> <nprobes> <refine>
//!
//! `queries.json` is a list of vectors. `exact` searches flat splits only (no index): the
//! ground truth. Prints one JSON line: the wall time of the searches (after one warm-up query),
//! and per query the merged `id`s in distance order.

use std::ffi::CString;
use std::time::Instant;

use arrow::array::{Array, Int32Array, Int64Array};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use lance_host::ffi::dataset::*;
use lance_host::ffi::split::*;
use lance_host::ffi::search::*;

fn msg() -> String {
    unsafe { std::ffi::CStr::from_ptr(lance_host::ffi::error::lance_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

struct Ctx {
    ds: *mut LanceDataset,
    splits: Vec<*mut LanceSplit>,
    column: CString,
    id: CString,
    k: u64,
    nprobes: u32,
    refine: u32,
}

impl Ctx {
    /// Search `queries` (flattened, `n` vectors of `dim`) on every split and merge per query:
    /// the ids per query.
    fn search(&self, flat: &[f32], n: usize, dim: usize) -> Vec<Vec<i64>> {
        let cols = [self.id.as_ptr()];
        let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
        assert_eq!(lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>()), 0);
        let mut q = unsafe { q.assume_init() };
        q.column = self.column.as_ptr();
        q.vector = flat.as_ptr() as *const _;
        q.dimension = dim;
        q.num_queries = n as u64;
        q.element_type = LanceElementType::LANCE_ELEMENT_F32 as i32;
        q.k = self.k;
        q.nprobes = self.nprobes;
        q.refine_factor = self.refine;
        q.columns = cols.as_ptr();
        q.num_columns = 1;
        q.with_row_id = true;
        let mut parts: Vec<FFI_ArrowArrayStream> = Vec::new();
        for s in &self.splits {
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_search_v2(self.ds, *s, &q, &mut st), 0, "{}", msg());
            parts.push(st);
        }
        let mut merged = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(parts.as_mut_ptr(), parts.len(), self.k, 0, &mut merged), 0, "{}", msg());
        let mut out = vec![Vec::new(); n];
        for b in ArrowArrayStreamReader::try_new(merged).unwrap() {
            let b = b.unwrap();
            let ids = b.column_by_name("id").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
            let qi = b.column_by_name("query_index").map(|c| c.as_any().downcast_ref::<Int32Array>().unwrap().clone());
            for r in 0..ids.len() {
                let at = qi.as_ref().map_or(0, |c| c.value(r) as usize);
                out[at].push(ids.value(r));
            }
        }
        out
    }
}

pub fn run(uri: &str, queries_path: &str, mode: &str, k: u64, nprobes: u32, refine: u32) {
    super::configure_data_cache();
    let queries: Vec<Vec<f32>> = serde_json::from_str(&std::fs::read_to_string(queries_path).unwrap()).unwrap();
    let dim = queries[0].len();
    let u = CString::new(uri).unwrap();
    let ds = lance_dataset_open(u.as_ptr(), std::ptr::null(), 0);
    assert!(!ds.is_null(), "{}", msg());
    let column = CString::new("vec").unwrap();
    let mut plan = std::ptr::null_mut();
    let use_index = mode != "exact";
    // Exact: the table's fragments as flat splits, grouped to ~500,000 rows each.
    let group = if use_index { 0 } else { 500_000 };
    assert_eq!(
        lance_dataset_plan_vector_search(ds, column.as_ptr(), LanceMetric::LANCE_METRIC_L2 as i32, use_index, group, &mut plan),
        0,
        "{}",
        msg()
    );
    let splits: Vec<*mut LanceSplit> = (0..lance_split_plan_count(plan)).map(|i| lance_split_plan_get(plan, i)).collect();
    let ctx = Ctx { ds, splits, column, id: CString::new("id").unwrap(), k, nprobes, refine };
    // Warm-up: one query (opens the index segments, fills the caches), not timed.
    let _ = ctx.search(&queries[0], 1, dim);
    let start = Instant::now();
    let results: Vec<Vec<i64>> = match mode {
        "batch" | "exact" => {
            let flat: Vec<f32> = queries.iter().flatten().cloned().collect();
            ctx.search(&flat, queries.len(), dim)
        }
        "loop" => queries.iter().map(|q| ctx.search(q, 1, dim).pop().unwrap()).collect(),
        other => panic!("mode {other}: batch, loop or exact"),
    };
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let splits = ctx.splits.len();
    for s in ctx.splits {
        lance_split_free(s);
    }
    lance_split_plan_free(plan);
    lance_dataset_free(ds);
    let (hwm, _) = super::rusage();
    println!(
        "{}",
        serde_json::json!({ "side": format!("lance-host-{mode}"), "ms": ms, "splits": splits, "peak_rss_kib": hwm, "ids": results })
    );
}
