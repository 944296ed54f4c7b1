//! Owned handles of the library (catalog, table info, dataset, split) that free themselves.

use std::ptr;

use adbc_core::error::Result;
use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::RecordBatchReader;
use arrow_schema::Schema;

use crate::api::{self, api, c_string, check, cstr, Api, CStrArray, Handle, ScanOptions};

/// A table's place in the catalog: its namespace path and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRef {
    pub namespace: Vec<String>,
    pub name: String,
}

impl TableRef {
    /// `ns.sub.table`, `table`, with `"quoted"` parts for names holding dots.
    pub fn parse(text: &str) -> Result<TableRef> {
        let parts = split_identifier(text)?;
        let (name, namespace) = parts
            .split_last()
            .ok_or_else(|| api::invalid("empty table name"))?;
        Ok(TableRef {
            namespace: namespace.to_vec(),
            name: name.clone(),
        })
    }

    pub fn with_schema(db_schema: Option<&str>, table: &str) -> Result<TableRef> {
        if table.is_empty() {
            return Err(api::invalid("empty table name"));
        }
        let namespace = match db_schema {
            None | Some("") => Vec::new(),
            Some(s) => split_identifier(s)?,
        };
        Ok(TableRef {
            namespace,
            name: table.to_string(),
        })
    }

    pub fn display(&self) -> String {
        let mut parts = self.namespace.clone();
        parts.push(self.name.clone());
        parts.join(".")
    }
}

/// Split `a."b.c".d` into its parts; a doubled quote inside quotes is one quote.
pub fn split_identifier(text: &str) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.trim().chars().peekable();
    let mut quoted_part = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if current.is_empty() && !quoted_part => {
                quoted_part = true;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            current.push('"');
                        }
                        Some('"') => break,
                        Some(other) => current.push(other),
                        None => {
                            return Err(api::invalid(format!(
                                "unterminated quote in name `{text}`"
                            )))
                        }
                    }
                }
            }
            '.' => {
                if current.is_empty() && !quoted_part {
                    return Err(api::invalid(format!("empty part in name `{text}`")));
                }
                parts.push(std::mem::take(&mut current));
                quoted_part = false;
            }
            c if quoted_part => {
                return Err(api::invalid(format!(
                    "unexpected `{c}` after a quoted part in name `{text}`"
                )));
            }
            c => current.push(c),
        }
    }
    if current.is_empty() && !quoted_part {
        return Err(api::invalid(format!("empty part in name `{text}`")));
    }
    parts.push(current);
    Ok(parts)
}

pub struct Catalog {
    raw: Handle,
}

// SAFETY: the library documents catalogs as usable by many threads at once.
unsafe impl Send for Catalog {}
unsafe impl Sync for Catalog {}

impl Drop for Catalog {
    fn drop(&mut self) {
        if let Ok(api) = api() {
            // SAFETY: owned handle, freed once.
            unsafe { (api.lance_catalog_free)(self.raw) };
        }
    }
}

pub struct TableInfo {
    pub location: String,
    pub latest_version: u64,
    pub storage_options: Vec<String>,
}

impl Catalog {
    pub fn open(properties: &[(String, String)]) -> Result<Catalog> {
        let api = api()?;
        let flat = CStrArray::new(
            properties
                .iter()
                .flat_map(|(k, v)| [k.as_str(), v.as_str()]),
            "a database option",
        )?;
        // SAFETY: NULL-terminated array kept alive for the call.
        let raw = unsafe { (api.lance_catalog_open)(flat.as_ptr()) };
        if raw.is_null() {
            return Err(api::last_error(api, "opening the catalog"));
        }
        Ok(Catalog { raw })
    }

    /// Every namespace path under the root, depth first as the library lists them.
    pub fn list_namespaces(&self) -> Result<Vec<Vec<String>>> {
        let api = api()?;
        let mut list: Handle = ptr::null_mut();
        // SAFETY: live catalog; empty parent path.
        let rc = unsafe {
            (api.lance_catalog_list_namespaces)(self.raw, ptr::null(), 0, true, &mut list)
        };
        check(api, rc, "listing namespaces")?;
        let mut out = Vec::new();
        // SAFETY: `list` is a live list owned here, freed below.
        unsafe {
            for i in 0..(api.lance_namespace_list_count)(list) {
                let depth = (api.lance_namespace_list_depth)(list, i);
                out.push(
                    (0..depth)
                        .map(|p| cstr((api.lance_namespace_list_part)(list, i, p)))
                        .collect(),
                );
            }
            (api.lance_namespace_list_free)(list);
        }
        Ok(out)
    }

    pub fn list_tables(&self, namespace: &[String]) -> Result<Vec<String>> {
        let api = api()?;
        let ns = CStrArray::new(namespace, "a namespace name")?;
        let mut list: Handle = ptr::null_mut();
        // SAFETY: live catalog and arrays.
        let rc =
            unsafe { (api.lance_catalog_list_tables)(self.raw, ns.as_ptr(), ns.len(), &mut list) };
        check(
            api,
            rc,
            &format!("listing the tables of namespace `{}`", namespace.join(".")),
        )?;
        let mut out = Vec::new();
        // SAFETY: `list` owned here, freed below.
        unsafe {
            for i in 0..(api.lance_string_list_count)(list) {
                out.push(cstr((api.lance_string_list_get)(list, i)));
            }
            (api.lance_string_list_free)(list);
        }
        Ok(out)
    }

    pub fn describe(&self, table: &TableRef) -> Result<TableInfo> {
        let api = api()?;
        let ns = CStrArray::new(&table.namespace, "a namespace name")?;
        let name = c_string(&table.name, "the table name")?;
        let mut info: Handle = ptr::null_mut();
        // SAFETY: live arguments for the call.
        let rc = unsafe {
            (api.lance_catalog_describe_table)(
                self.raw,
                ns.as_ptr(),
                ns.len(),
                name.as_ptr(),
                &mut info,
            )
        };
        check(api, rc, &format!("describing table `{}`", table.display()))?;
        // SAFETY: `info` owned here, freed below; strings copied before.
        unsafe {
            let out = TableInfo {
                location: cstr((api.lance_table_info_location)(info)),
                latest_version: (api.lance_table_info_latest_version)(info),
                storage_options: api::copy_pairs((api.lance_table_info_storage_options)(info)),
            };
            (api.lance_table_info_free)(info);
            Ok(out)
        }
    }

    /// Open a table at `version` (0 = latest), on `branch` if given.
    pub fn open_table(
        &self,
        table: &TableRef,
        version: u64,
        branch: Option<&str>,
    ) -> Result<Dataset> {
        let api = api()?;
        let ns = CStrArray::new(&table.namespace, "a namespace name")?;
        let name = c_string(&table.name, "the table name")?;
        // SAFETY: live arguments for the call.
        let raw = unsafe {
            match branch {
                Some(b) => {
                    let b = c_string(b, "the branch")?;
                    (api.lance_catalog_open_table_branch)(
                        self.raw,
                        ns.as_ptr(),
                        ns.len(),
                        name.as_ptr(),
                        b.as_ptr(),
                        version,
                    )
                }
                None => (api.lance_catalog_open_table)(
                    self.raw,
                    ns.as_ptr(),
                    ns.len(),
                    name.as_ptr(),
                    version,
                ),
            }
        };
        if raw.is_null() {
            return Err(api::last_error(
                api,
                &format!("opening table `{}`", table.display()),
            ));
        }
        Ok(Dataset { raw })
    }

    /// Create `table` holding the rows of `data` (one commit); returns the rows written.
    pub fn create_table(
        &self,
        table: &TableRef,
        data: Box<dyn RecordBatchReader + Send>,
        params: &WriteSettings,
    ) -> Result<u64> {
        let api = api()?;
        let ns = CStrArray::new(&table.namespace, "a namespace name")?;
        let name = c_string(&table.name, "the table name")?;
        let mut stream = FFI_ArrowArrayStream::new(data);
        let p = params.build(api, crate::api::WRITE_CREATE, &[])?;
        let mut result = api::WriteResult {
            struct_size: std::mem::size_of::<api::WriteResult>(),
            ..Default::default()
        };
        // SAFETY: the library takes ownership of `stream` (released also on failure).
        let rc = unsafe {
            (api.lance_catalog_create_table)(
                self.raw,
                ns.as_ptr(),
                ns.len(),
                name.as_ptr(),
                &mut stream,
                &p.params,
                ptr::null_mut(),
                &mut result,
            )
        };
        check(api, rc, &format!("creating table `{}`", table.display()))?;
        Ok(result.rows_written)
    }
}

impl Catalog {
    pub fn drop_table(&self, table: &TableRef) -> Result<()> {
        let api = api()?;
        let ns = CStrArray::new(&table.namespace, "a namespace name")?;
        let name = c_string(&table.name, "the table name")?;
        // SAFETY: live arguments for the call.
        let rc = unsafe {
            (api.lance_catalog_drop_table)(self.raw, ns.as_ptr(), ns.len(), name.as_ptr(), true)
        };
        check(api, rc, &format!("dropping table `{}`", table.display()))
    }
}

/// Write settings the statement carries into `LanceWriteParams`.
#[derive(Clone, Default)]
pub struct WriteSettings {
    pub statement_id: Option<String>,
    pub commit_message: Option<String>,
}

pub struct BuiltParams {
    pub params: api::WriteParams,
    _keep: Vec<std::ffi::CString>,
    _options: Option<CStrArray>,
}

impl WriteSettings {
    pub fn build(&self, api: &Api, mode: i32, storage_options: &[String]) -> Result<BuiltParams> {
        // SAFETY: zeroed then initialised by the library with its defaults.
        let mut params: api::WriteParams = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_write_params_init_v2)(&mut params, std::mem::size_of::<api::WriteParams>())
        };
        check(api, rc, "initialising write parameters")?;
        params.mode = mode;
        let mut keep = Vec::new();
        if let Some(id) = &self.statement_id {
            let c = c_string(id, "the statement id")?;
            params.statement_id = c.as_ptr();
            keep.push(c);
        }
        if let Some(m) = &self.commit_message {
            let c = c_string(m, "the commit message")?;
            params.commit_message = c.as_ptr();
            keep.push(c);
        }
        let options = if storage_options.is_empty() {
            None
        } else {
            let arr = CStrArray::new(storage_options, "a storage option")?;
            params.storage_options = arr.as_ptr();
            Some(arr)
        };
        Ok(BuiltParams {
            params,
            _keep: keep,
            _options: options,
        })
    }
}

pub struct Dataset {
    pub raw: Handle,
}

// SAFETY: dataset handles are documented thread-safe.
unsafe impl Send for Dataset {}
unsafe impl Sync for Dataset {}

impl Drop for Dataset {
    fn drop(&mut self) {
        if let Ok(api) = api() {
            // SAFETY: owned handle, freed once.
            unsafe { (api.lance_dataset_free)(self.raw) };
        }
    }
}

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

struct BuiltQuery {
    query: api::VectorQuery,
    _column: std::ffi::CString,
    _columns: Option<CStrArray>,
    _filter: Option<std::ffi::CString>,
}

impl VectorSearch {
    fn build(&self, api: &Api, spec: &ScanSpec) -> Result<BuiltQuery> {
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
        let columns = match &spec.columns {
            Some(cols) => {
                let arr = CStrArray::new(cols, "a column name")?;
                query.columns = arr.as_ptr();
                query.num_columns = arr.len();
                Some(arr)
            }
            None => None,
        };
        let filter = match &spec.filter {
            Some(f) => {
                let c = c_string(f, "the filter")?;
                query.prefilter_sql = c.as_ptr();
                Some(c)
            }
            None => None,
        };
        Ok(BuiltQuery {
            query,
            _column: column,
            _columns: columns,
            _filter: filter,
        })
    }
}

/// What a scan reads: columns (None = all), a Lance SQL filter, a row limit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanSpec {
    pub columns: Option<Vec<String>>,
    pub filter: Option<String>,
    pub limit: Option<i64>,
    pub batch_size: Option<u64>,
}

struct BuiltScan {
    options: ScanOptions,
    _columns: Option<CStrArray>,
    _filter: Option<std::ffi::CString>,
}

impl ScanSpec {
    fn build(&self, api: &Api) -> Result<BuiltScan> {
        // SAFETY: zeroed then initialised by the library with its defaults.
        let mut options: ScanOptions = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_scan_options_init_v2)(&mut options, std::mem::size_of::<ScanOptions>())
        };
        check(api, rc, "initialising scan options")?;
        let columns = match &self.columns {
            Some(cols) => {
                let arr = CStrArray::new(cols, "a column name")?;
                options.columns = arr.as_ptr();
                options.num_columns = arr.len();
                Some(arr)
            }
            None => None,
        };
        let filter = match &self.filter {
            Some(f) => {
                let c = c_string(f, "the filter")?;
                options.filter_sql = c.as_ptr();
                Some(c)
            }
            None => None,
        };
        if let Some(limit) = self.limit {
            options.limit = limit;
        }
        if let Some(b) = self.batch_size {
            options.batch_size = b;
        }
        Ok(BuiltScan {
            options,
            _columns: columns,
            _filter: filter,
        })
    }
}

pub type Reader = Box<dyn RecordBatchReader + Send + 'static>;

fn import_stream(stream: FFI_ArrowArrayStream) -> Result<Reader> {
    let reader = ArrowArrayStreamReader::try_new(stream)?;
    Ok(Box::new(reader))
}

impl Dataset {
    pub fn version(&self) -> u64 {
        // SAFETY: live handle.
        api()
            .map(|api| unsafe { (api.lance_dataset_version)(self.raw) })
            .unwrap_or(0)
    }

    pub fn count_rows(&self) -> Result<u64> {
        let api = api()?;
        let mut n = 0u64;
        // SAFETY: live handle.
        let rc = unsafe { (api.lance_dataset_count_rows)(self.raw, &mut n) };
        check(api, rc, "counting rows")?;
        Ok(n)
    }

    pub fn schema(&self) -> Result<Schema> {
        let api = api()?;
        let mut schema = FFI_ArrowSchema::empty();
        // SAFETY: the library fills `schema`; we own it afterwards.
        let rc = unsafe { (api.lance_dataset_schema)(self.raw, &mut schema) };
        check(api, rc, "reading the table's schema")?;
        Ok(Schema::try_from(&schema)?)
    }

    pub fn scan(&self, spec: &ScanSpec) -> Result<Reader> {
        let api = api()?;
        let built = spec.build(api)?;
        let mut stream = FFI_ArrowArrayStream::empty();
        // SAFETY: options and their strings alive for the call; the stream is ours after.
        let rc = unsafe { (api.lance_dataset_scan_v2)(self.raw, &built.options, &mut stream) };
        check(api, rc, "scanning")?;
        import_stream(stream)
    }

    /// The vector-search splits of the snapshot (one per index segment, flat ones for the
    /// rest) as serialized split bytes.
    pub fn plan_search(&self, search: &VectorSearch) -> Result<Vec<Vec<u8>>> {
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
                0,
                &mut plan,
            )
        };
        check(api, rc, "planning the vector search")?;
        serialize_plan(api, plan)
    }

    /// The global top k: every split searched, the candidates merged (`lance_topk_merge`).
    pub fn search(&self, search: &VectorSearch, spec: &ScanSpec) -> Result<Reader> {
        let api = api()?;
        let splits = self.plan_search(search)?;
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

    /// The scan splits of the snapshot as serialized split bytes.
    pub fn plan_scan(&self, target_rows: u64) -> Result<Vec<Vec<u8>>> {
        let api = api()?;
        let mut plan: Handle = ptr::null_mut();
        // SAFETY: live handle.
        let rc = unsafe { (api.lance_dataset_plan_scan)(self.raw, target_rows, &mut plan) };
        check(api, rc, "planning splits")?;
        serialize_plan(api, plan)
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

/// Serialize every split of a plan (then freed) into bytes.
fn serialize_plan(api: &Api, plan: Handle) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut failure = None;
    // SAFETY: `plan` owned here, freed below; each split from `get` owned and freed.
    unsafe {
        for i in 0..(api.lance_split_plan_count)(plan) {
            let split = (api.lance_split_plan_get)(plan, i);
            if split.is_null() {
                failure = Some(api::last_error(api, "reading the split plan"));
                break;
            }
            let mut bytes: *mut u8 = ptr::null_mut();
            let mut len = 0usize;
            let rc = (api.lance_split_serialize)(split, &mut bytes, &mut len);
            (api.lance_split_free)(split);
            if rc != 0 {
                failure = Some(api::last_error(api, "serializing a split"));
                break;
            }
            out.push(std::slice::from_raw_parts(bytes, len).to_vec());
            (api.lance_bytes_free)(bytes, len);
        }
        (api.lance_split_plan_free)(plan);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
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
        group_by: &[String],
        measures: &[crate::substrait_plan::Measure],
        filter: Option<&str>,
    ) -> Result<Reader> {
        let api = api()?;
        // SAFETY: zeroed then initialised by the library.
        let mut spec: api::AggregateSpec = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_aggregate_init_v2)(&mut spec, std::mem::size_of::<api::AggregateSpec>())
        };
        check(api, rc, "initialising an aggregate")?;
        let keys = CStrArray::new(group_by, "a group-by column")?;
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

/// Run one serialized split on a worker with its own storage options: its scan, or its part of
/// a vector search.
pub fn run_split(
    split_bytes: &[u8],
    storage_options: &[String],
    spec: &ScanSpec,
    search: Option<&VectorSearch>,
) -> Result<Reader> {
    let api = api()?;
    // SAFETY: borrowed bytes for the call.
    let split = unsafe { (api.lance_split_deserialize)(split_bytes.as_ptr(), split_bytes.len()) };
    if split.is_null() {
        return Err(api::last_error(api, "reading the partition's split"));
    }
    let options = CStrArray::new(storage_options, "a storage option")?;
    // SAFETY: live split; options alive for the call.
    let dataset = unsafe { (api.lance_split_open_dataset)(split, options.as_ptr()) };
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
            Some(v) => {
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

/// Write `data` to the table at `uri` in one commit (append or overwrite).
pub fn table_write(
    uri: &str,
    data: Reader,
    mode: i32,
    storage_options: &[String],
    settings: &WriteSettings,
) -> Result<api::WriteResult> {
    let api = api()?;
    let uri_c = c_string(uri, "the table location")?;
    let p = settings.build(api, mode, storage_options)?;
    let mut stream = FFI_ArrowArrayStream::new(data);
    let mut result = api::WriteResult {
        struct_size: std::mem::size_of::<api::WriteResult>(),
        ..Default::default()
    };
    // SAFETY: the library takes `stream`; the rest is borrowed for the call.
    let rc = unsafe {
        (api.lance_table_write)(
            uri_c.as_ptr(),
            ptr::null_mut(),
            &mut stream,
            &p.params,
            ptr::null_mut(),
            &mut result,
        )
    };
    check(api, rc, "writing")?;
    Ok(result)
}

/// Stage a share of a write at `at` (the table's pinned version); returns its bytes.
pub fn stage_write(
    uri: &str,
    at: &Dataset,
    data: Reader,
    mode: i32,
    storage_options: &[String],
) -> Result<(Vec<u8>, u64)> {
    let api = api()?;
    let uri_c = c_string(uri, "the table location")?;
    let p = WriteSettings::default().build(api, mode, storage_options)?;
    let mut stream = FFI_ArrowArrayStream::new(data);
    let mut bytes: *mut u8 = ptr::null_mut();
    let mut len = 0usize;
    let mut result = api::WriteResult {
        struct_size: std::mem::size_of::<api::WriteResult>(),
        ..Default::default()
    };
    // SAFETY: the library takes `stream`; outputs are ours after success.
    let rc = unsafe {
        (api.lance_table_stage_write)(
            uri_c.as_ptr(),
            at.raw,
            &mut stream,
            &p.params,
            &mut bytes,
            &mut len,
            &mut result,
        )
    };
    check(api, rc, "staging a write")?;
    // SAFETY: library-owned bytes copied, then freed once.
    let out = unsafe { std::slice::from_raw_parts(bytes, len).to_vec() };
    unsafe { (api.lance_bytes_free)(bytes, len) };
    Ok((out, result.rows_written))
}

/// Commit staged shares of one table as one version.
pub fn commit_shares(
    uri: &str,
    shares: &[Vec<u8>],
    storage_options: &[String],
    settings: &WriteSettings,
) -> Result<api::WriteResult> {
    let api = api()?;
    let uri_c = c_string(uri, "the table location")?;
    let p = settings.build(api, crate::api::WRITE_APPEND, storage_options)?;
    let ptrs: Vec<*const u8> = shares.iter().map(|s| s.as_ptr()).collect();
    let lens: Vec<usize> = shares.iter().map(|s| s.len()).collect();
    let mut result = api::WriteResult {
        struct_size: std::mem::size_of::<api::WriteResult>(),
        ..Default::default()
    };
    // SAFETY: borrowed arrays for the call.
    let rc = unsafe {
        (api.lance_table_commit)(
            uri_c.as_ptr(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            shares.len(),
            &p.params,
            ptr::null_mut(),
            &mut result,
        )
    };
    check(api, rc, "committing the staged writes")?;
    Ok(result)
}

/// Delete the files of staged shares that will not be committed.
pub fn abort_shares(shares: &[Vec<u8>], storage_options: &[String]) -> Result<()> {
    let api = api()?;
    let ptrs: Vec<*const u8> = shares.iter().map(|s| s.as_ptr()).collect();
    let lens: Vec<usize> = shares.iter().map(|s| s.len()).collect();
    let options = CStrArray::new(storage_options, "a storage option")?;
    let mut deleted = 0u64;
    // SAFETY: borrowed arrays for the call.
    let rc = unsafe {
        (api.lance_staged_write_abort)(
            ptrs.as_ptr(),
            lens.as_ptr(),
            shares.len(),
            options.as_ptr(),
            &mut deleted,
        )
    };
    check(api, rc, "discarding the staged writes")
}
