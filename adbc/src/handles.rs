//! Owned handles of the library (catalog, table info, dataset, split) that free themselves.

use std::ptr;

use adbc_core::error::Result;
use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchReader};
use std::sync::Arc;

use arrow_schema::Schema;

use crate::api::{self, api, c_string, check, cstr, invalid, Api, CStrArray, Handle, ScanOptions};

/// A table's place in the catalog: its namespace path and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRef {
    pub namespace: Vec<String>,
    pub name: String,
}

impl From<&lance_host_substrait::TableRef> for TableRef {
    fn from(t: &lance_host_substrait::TableRef) -> Self {
        TableRef {
            namespace: t.namespace.clone(),
            name: t.name.clone(),
        }
    }
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
    pub(crate) raw: Handle,
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

/// Rows per batch of the driver's scans unless `lance_host.batch_size` says otherwise: every
/// batch crosses two Arrow C stream hops (the library's, the driver manager's), and at the
/// library's default of a few thousand rows that cost is 15 % of a scan (bench/ADBC_POLARS.md).
pub const DEFAULT_BATCH_ROWS: u64 = 65_536;

/// What a scan reads: columns (None = all), a Lance SQL filter, a row limit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanSpec {
    pub columns: Option<Vec<String>>,
    pub filter: Option<String>,
    pub limit: Option<i64>,
    pub batch_size: Option<u64>,
}

pub(crate) struct BuiltScan {
    pub(crate) options: ScanOptions,
    _columns: Option<CStrArray>,
    _filter: Option<std::ffi::CString>,
}

impl ScanSpec {
    /// The columns and the filter as C values, owned by the caller while the library reads
    /// pointers into them (scans and searches take both).
    pub(crate) fn c_columns_and_filter(
        &self,
    ) -> Result<(Option<CStrArray>, Option<std::ffi::CString>)> {
        let columns = self
            .columns
            .as_ref()
            .map(|c| CStrArray::new(c, "a column name"))
            .transpose()?;
        let filter = self
            .filter
            .as_deref()
            .map(|f| c_string(f, "the filter"))
            .transpose()?;
        Ok((columns, filter))
    }

    pub(crate) fn build(&self, api: &Api) -> Result<BuiltScan> {
        // SAFETY: zeroed then initialised by the library with its defaults.
        let mut options: ScanOptions = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_scan_options_init_v2)(&mut options, std::mem::size_of::<ScanOptions>())
        };
        check(api, rc, "initialising scan options")?;
        let (columns, filter) = self.c_columns_and_filter()?;
        if let Some(arr) = &columns {
            options.columns = arr.as_ptr();
            options.num_columns = arr.len();
        }
        if let Some(c) = &filter {
            options.filter_sql = c.as_ptr();
        }
        if let Some(limit) = self.limit {
            options.limit = limit;
        }
        options.batch_size = self.batch_size.unwrap_or(DEFAULT_BATCH_ROWS);
        Ok(BuiltScan {
            options,
            _columns: columns,
            _filter: filter,
        })
    }
}

pub type Reader = Box<dyn RecordBatchReader + Send + 'static>;

pub(crate) fn import_stream(stream: FFI_ArrowArrayStream) -> Result<Reader> {
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

impl Dataset {
    /// The split-scoped snapshot token of scan split `split` (serialized split bytes).
    pub fn split_snapshot(&self, split: &[u8]) -> Result<Vec<u8>> {
        let api = api()?;
        // SAFETY: borrowed bytes for the call.
        let s = unsafe { (api.lance_split_deserialize)(split.as_ptr(), split.len()) };
        if s.is_null() {
            return Err(api::last_error(api, "reading a planned split"));
        }
        let mut bytes: *mut u8 = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: live handles; the split is freed once, after the call.
        let rc =
            unsafe { (api.lance_dataset_export_split_snapshot)(self.raw, s, &mut bytes, &mut len) };
        unsafe { (api.lance_split_free)(s) };
        check(api, rc, "exporting a split's snapshot")?;
        // SAFETY: library-owned bytes copied, then freed once.
        let out = unsafe { std::slice::from_raw_parts(bytes, len).to_vec() };
        unsafe { (api.lance_bytes_free)(bytes, len) };
        Ok(out)
    }
}

/// Serialize every split of a plan (then freed) into bytes.
pub(crate) fn serialize_plan(api: &Api, plan: Handle) -> Result<Vec<Vec<u8>>> {
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

/// A reader with renamed columns and at most `limit` rows.
struct Shaped {
    inner: Reader,
    schema: arrow_schema::SchemaRef,
    left: Option<usize>,
}

pub(crate) fn shaped(
    inner: Reader,
    names: Option<Vec<String>>,
    limit: Option<i64>,
) -> Result<Reader> {
    if names.is_none() && limit.is_none() {
        return Ok(inner);
    }
    let schema = inner.schema();
    let schema = match names {
        Some(names) => {
            if names.len() != schema.fields().len() {
                return Err(invalid(format!(
                    "lance-host ADBC: the plan names {} output columns, the result has {}",
                    names.len(),
                    schema.fields().len()
                )));
            }
            let fields: Vec<arrow_schema::Field> = schema
                .fields()
                .iter()
                .zip(names)
                .map(|(f, n)| f.as_ref().clone().with_name(n))
                .collect();
            Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
        }
        None => schema,
    };
    Ok(Box::new(Shaped {
        inner,
        schema,
        left: limit.map(|l| l.max(0) as usize),
    }))
}

impl Iterator for Shaped {
    type Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == Some(0) {
            return None;
        }
        let batch = match self.inner.next()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        let batch = match self.left {
            Some(left) if batch.num_rows() > left => batch.slice(0, left),
            _ => batch,
        };
        if let Some(left) = self.left.as_mut() {
            *left -= batch.num_rows();
        }
        Some(RecordBatch::try_new(
            self.schema.clone(),
            batch.columns().to_vec(),
        ))
    }
}

impl RecordBatchReader for Shaped {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
}
