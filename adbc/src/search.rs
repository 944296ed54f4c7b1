//! Reads beyond a scan: vector search (planned, per split, merged), aggregates and the
//! planner statistics.

use std::ptr;

use adbc_core::error::Result;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;

use crate::api::{self, api, c_string, check, cstr, invalid, Api, CStrArray, Handle};
use crate::handles::{import_stream, serialize_plan, Dataset, Reader, ScanSpec};

/// A vector search: column, query vector, k and the index's knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorSearch {
    pub column: String,
    pub vector: Vec<f32>,
    pub k: u64,
    pub metric: i32,
    pub nprobes: u32,
    pub refine_factor: u32,
    pub use_index: bool,
}

pub(crate) struct BuiltQuery {
    pub(crate) query: api::VectorQuery,
    _column: std::ffi::CString,
    _columns: Option<CStrArray>,
    _filter: Option<std::ffi::CString>,
}

impl VectorSearch {
    pub(crate) fn build(&self, api: &Api, spec: &ScanSpec) -> Result<BuiltQuery> {
        // SAFETY: zeroed then initialised by the library with its defaults.
        let mut query: api::VectorQuery = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_vector_query_init_v2)(&mut query, std::mem::size_of::<api::VectorQuery>())
        };
        check(api, rc, "initialising a vector query")?;
        let column = c_string(&self.column, "the vector column")?;
        query.column = column.as_ptr();
        query.vector = self.vector.as_ptr() as *const std::ffi::c_void;
        query.dimension = self.vector.len();
        query.element_type = api::ELEMENT_F32;
        query.k = self.k;
        query.metric = self.metric;
        if self.nprobes > 0 {
            query.nprobes = self.nprobes;
        }
        if self.refine_factor > 0 {
            query.refine_factor = self.refine_factor;
        }
        query.with_row_id = true;
        let (columns, filter) = spec.c_columns_and_filter()?;
        if let Some(arr) = &columns {
            query.columns = arr.as_ptr();
            query.num_columns = arr.len();
        }
        if let Some(c) = &filter {
            query.prefilter_sql = c.as_ptr();
        }
        Ok(BuiltQuery {
            query,
            _column: column,
            _columns: columns,
            _filter: filter,
        })
    }
}

/// What the planner statistics say of a snapshot: visible rows (exact) and, per top-level
/// column, its encoded bytes when the format records them.
pub struct TableStatistics {
    pub rows: u64,
    pub columns: Vec<(String, Option<u64>)>,
}

impl Dataset {
    pub fn statistics(&self) -> Result<TableStatistics> {
        let api = api()?;
        let mut stats: Handle = ptr::null_mut();
        // SAFETY: live handle; `stats` owned here and freed below.
        let rc =
            unsafe { (api.lance_dataset_statistics_v2)(self.raw, &mut stats, ptr::null_mut()) };
        check(api, rc, "reading the table's statistics")?;
        let result = (|| {
            let mut rows = 0u64;
            // SAFETY: `stats` is live; the structs are ours, sized as the header says.
            for i in 0..unsafe { (api.lance_table_stats_fragment_count)(stats) } {
                let mut f = api::FragmentStats {
                    struct_size: std::mem::size_of::<api::FragmentStats>(),
                    ..Default::default()
                };
                check(
                    api,
                    unsafe { (api.lance_table_stats_fragment_v2)(stats, i, &mut f) },
                    "reading fragment statistics",
                )?;
                rows += f.physical_rows - f.deleted_rows;
            }
            let mut columns = Vec::new();
            for i in 0..unsafe { (api.lance_table_stats_column_count)(stats) } {
                let mut c = api::ColumnStats {
                    struct_size: std::mem::size_of::<api::ColumnStats>(),
                    name: ptr::null(),
                    bytes_on_disk: 0,
                    has_bytes_on_disk: false,
                };
                check(
                    api,
                    unsafe { (api.lance_table_stats_column_v2)(stats, i, &mut c) },
                    "reading column statistics",
                )?;
                // SAFETY: the name lives as long as `stats`; copied now.
                let name = unsafe { cstr(c.name) };
                columns.push((name, c.has_bytes_on_disk.then_some(c.bytes_on_disk)));
            }
            Ok(TableStatistics { rows, columns })
        })();
        // SAFETY: owned, freed once.
        unsafe { (api.lance_table_stats_free)(stats) };
        result
    }
}

/// Optional C strings (NULL entries) kept alive with their pointer array.
struct OptStrs {
    _strings: Vec<Option<std::ffi::CString>>,
    ptrs: Vec<*const std::ffi::c_char>,
}

impl OptStrs {
    fn new(items: &[Option<String>], what: &str) -> Result<OptStrs> {
        let strings = items
            .iter()
            .map(|s| s.as_deref().map(|s| c_string(s, what)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let ptrs = strings
            .iter()
            .map(|s| s.as_ref().map_or(ptr::null(), |c| c.as_ptr()))
            .collect();
        Ok(OptStrs {
            _strings: strings,
            ptrs,
        })
    }
}

impl Dataset {
    /// `lance_dataset_aggregate`: group-by columns, then one column per measure.
    pub fn aggregate(
        &self,
        group_by: &[lance_host_substrait::GroupKey],
        measures: &[lance_host_substrait::Measure],
        filter: Option<&str>,
    ) -> Result<Reader> {
        let api = api()?;
        // SAFETY: zeroed then initialised by the library.
        let mut spec: api::AggregateSpec = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_aggregate_init_v2)(&mut spec, std::mem::size_of::<api::AggregateSpec>())
        };
        check(api, rc, "initialising an aggregate")?;
        let names: Vec<String> = group_by.iter().map(|k| k.name.clone()).collect();
        let keys = CStrArray::new(&names, "a group-by column")?;
        let key_expressions = OptStrs::new(
            &group_by
                .iter()
                .map(|k| k.expression.clone())
                .collect::<Vec<_>>(),
            "a group-by expression",
        )?;
        let functions: Vec<i32> = measures.iter().map(|m| m.function).collect();
        let columns = OptStrs::new(
            &measures
                .iter()
                .map(|m| m.column.clone())
                .collect::<Vec<_>>(),
            "a column name",
        )?;
        let expressions = OptStrs::new(
            &measures
                .iter()
                .map(|m| m.expression.clone())
                .collect::<Vec<_>>(),
            "an expression",
        )?;
        let filter = filter.map(|f| c_string(f, "the filter")).transpose()?;
        spec.group_by = keys.as_ptr();
        spec.num_group_by = keys.len();
        if group_by.iter().any(|k| k.expression.is_some()) {
            spec.group_by_expressions = key_expressions.ptrs.as_ptr();
        }
        spec.functions = functions.as_ptr();
        spec.columns = columns.ptrs.as_ptr();
        spec.num_aggregates = measures.len();
        spec.expressions = expressions.ptrs.as_ptr();
        spec.filter_sql = filter.as_ref().map_or(ptr::null(), |f| f.as_ptr());
        let mut stream = FFI_ArrowArrayStream::empty();
        // SAFETY: every array lives until the call returns; the stream is ours after.
        let rc =
            unsafe { (api.lance_dataset_aggregate)(self.raw, &spec, &mut stream, ptr::null_mut()) };
        check(api, rc, "aggregating")?;
        import_stream(stream)
    }
}

impl Dataset {
    /// The vector-search splits of the snapshot (one per index segment, flat ones for the
    /// rest) as serialized split bytes.
    /// `flat_rows`: unindexed fragments grouped until a flat piece holds that many rows (0 = one
    /// fragment each).
    pub fn plan_search(&self, search: &VectorSearch, flat_rows: u64) -> Result<Vec<Vec<u8>>> {
        let api = api()?;
        let column = c_string(&search.column, "the vector column")?;
        let mut plan: Handle = ptr::null_mut();
        // SAFETY: live handle and string.
        let rc = unsafe {
            (api.lance_dataset_plan_vector_search)(
                self.raw,
                column.as_ptr(),
                search.metric,
                search.use_index,
                flat_rows,
                &mut plan,
            )
        };
        check(api, rc, "planning the vector search")?;
        serialize_plan(api, plan)
    }

    /// The global top k: every split searched, the candidates merged (`lance_topk_merge`).
    pub fn search(&self, search: &VectorSearch, spec: &ScanSpec) -> Result<Reader> {
        let api = api()?;
        let splits = self.plan_search(search, 0)?;
        let built = search.build(api, spec)?;
        let mut streams: Vec<FFI_ArrowArrayStream> = Vec::new();
        for bytes in &splits {
            // SAFETY: borrowed bytes; the split is freed below, its stream stays valid.
            let split = unsafe { (api.lance_split_deserialize)(bytes.as_ptr(), bytes.len()) };
            if split.is_null() {
                return Err(api::last_error(api, "reading a search split"));
            }
            let mut stream = FFI_ArrowArrayStream::empty();
            let rc =
                unsafe { (api.lance_split_search_v2)(self.raw, split, &built.query, &mut stream) };
            unsafe { (api.lance_split_free)(split) };
            check(api, rc, "searching a split")?;
            streams.push(stream);
        }
        let mut out = FFI_ArrowArrayStream::empty();
        // SAFETY: the merge takes every input stream (released also on failure); the Vec's
        // elements are then moved-from memory that must not be released again.
        let rc = unsafe {
            (api.lance_topk_merge)(streams.as_mut_ptr(), streams.len(), search.k, 0, &mut out)
        };
        for s in streams.iter_mut() {
            // the library took them: forget our copies without running their release
            unsafe { std::ptr::write(s, FFI_ArrowArrayStream::empty()) };
        }
        check(api, rc, "merging the search results")?;
        import_stream(out)
    }
}

/// The `lance_host.vector.*` options.
pub(crate) struct VectorOptions {
    pub(crate) column: Option<String>,
    pub(crate) query: Option<Vec<f32>>,
    pub(crate) k: u64,
    pub(crate) metric: i32,
    pub(crate) nprobes: u32,
    pub(crate) refine_factor: u32,
    pub(crate) use_index: bool,
}

impl Default for VectorOptions {
    fn default() -> Self {
        VectorOptions {
            column: None,
            query: None,
            k: 10,
            metric: 0,
            nprobes: 0,
            refine_factor: 0,
            use_index: true,
        }
    }
}

pub(crate) fn parse_vector(text: &str, key: &str) -> Result<Vec<f32>> {
    let values = text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|v| v.trim().parse::<f32>())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| {
            invalid(format!(
                "option `{key}` takes comma-separated numbers (or float32 bytes), not `{text}`"
            ))
        })?;
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return Err(invalid(format!(
            "option `{key}`: the query vector must be finite numbers"
        )));
    }
    Ok(values)
}

/// The same table location written two ways (`file://` or a trailing `/`).
fn same_location(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.strip_prefix("file://")
            .unwrap_or(s)
            .trim_end_matches('/')
            .to_string()
    };
    norm(a) == norm(b)
}

/// Run one serialized split on a worker with its own storage options: its scan, or its part of
/// a vector or full-text search. The split must read `location` (the table the caller described).
pub fn run_split(
    split_bytes: &[u8],
    location: &str,
    storage_options: &[String],
    spec: &ScanSpec,
    search: Option<&crate::partition::Search>,
    token: Option<&[u8]>,
) -> Result<Reader> {
    let api = api()?;
    // SAFETY: borrowed bytes for the call.
    let split = unsafe { (api.lance_split_deserialize)(split_bytes.as_ptr(), split_bytes.len()) };
    if split.is_null() {
        return Err(api::last_error(api, "reading the partition's split"));
    }
    // the reader's catalog gave credentials for `location`: a split of any other table (a forged
    // or mixed-up descriptor) is refused rather than opened with them
    // SAFETY: live split; the string is copied at once.
    let split_uri = unsafe { cstr((api.lance_split_uri)(split)) };
    if !same_location(&split_uri, location) {
        // SAFETY: owned split.
        unsafe { (api.lance_split_free)(split) };
        return Err(invalid(format!(
            "lance-host ADBC: the partition's split reads {split_uri}, but its table is at {location} in this connection's catalog"
        )));
    }
    let options = CStrArray::new(storage_options, "a storage option")?;
    // The split's own snapshot token when the descriptor carries one (no manifest read); the
    // library refuses to run a split on a token of another table or version.
    // SAFETY: live split or borrowed token bytes; options alive for the call.
    let dataset = match token {
        Some(t) => unsafe { (api.lance_snapshot_open)(t.as_ptr(), t.len(), options.as_ptr()) },
        None => unsafe { (api.lance_split_open_dataset)(split, options.as_ptr()) },
    };
    if dataset.is_null() {
        let e = api::last_error(api, "opening the partition's table");
        // SAFETY: owned split.
        unsafe { (api.lance_split_free)(split) };
        return Err(e);
    }
    let dataset = Dataset { raw: dataset };
    let result = (|| {
        let mut stream = FFI_ArrowArrayStream::empty();
        // SAFETY: live handles; the stream may outlive the dataset and split (documented).
        let rc = match search {
            Some(crate::partition::Search::Text(t, stats)) => {
                let built = t.build(api, spec)?;
                return import_stream(dataset.text_split(split, &built, stats)?);
            }
            Some(crate::partition::Search::Vector(v)) => {
                let built = v.build(api, spec)?;
                unsafe {
                    (api.lance_split_search_v2)(dataset.raw, split, &built.query, &mut stream)
                }
            }
            None => {
                let built = spec.build(api)?;
                unsafe {
                    (api.lance_split_scan_v2)(dataset.raw, split, &built.options, &mut stream)
                }
            }
        };
        check(api, rc, "reading the partition")?;
        import_stream(stream)
    })();
    // SAFETY: owned split, freed once; streams of it stay valid.
    unsafe { (api.lance_split_free)(split) };
    result
}
