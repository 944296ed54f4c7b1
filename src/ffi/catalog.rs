//! C ABI of catalogs (Lance directory and REST namespaces).

use std::ffi::{c_char, CString};

use crate::catalog::{Catalog, TableInfo};
use crate::error::HostError;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use super::handles::LanceDataset;
use super::scan::import_stream;
use super::sized::{out_slot, Layout};
use super::write::{params_arg, write_result, LanceWriteParams, LanceWriteResult};
use super::{
    dataset_out, free_handle, guard_code, guard_free, guard_ptr, guard_value, handle_ref, into_handle, item_at,
    kv_arg, out_arg, owned_cstring, str_arg, str_list_arg,
};

/// A connected catalog. Opaque; create with `lance_catalog_open`, free with
/// `lance_catalog_free`.
pub struct LanceCatalog {
    catalog: Catalog,
}

/// A list of strings (table names). Opaque; read with `lance_string_list_count` and
/// `lance_string_list_get`, free with `lance_string_list_free`.
pub struct LanceStringList {
    items: Vec<CString>,
}

impl LanceStringList {
    /// A list of `items` (a NUL inside one is replaced, as everywhere strings go out).
    pub(crate) fn of<'a>(items: impl IntoIterator<Item = &'a str>) -> Self {
        LanceStringList {
            items: items.into_iter().map(owned_cstring).collect(),
        }
    }
}

/// A list of namespace paths, each an array of name parts. Opaque; read with
/// `lance_namespace_list_count`, `lance_namespace_list_depth` and `lance_namespace_list_part`,
/// free with `lance_namespace_list_free`.
pub struct LanceNamespaceList {
    items: Vec<Vec<CString>>,
}

/// A described table. Opaque; read with the `lance_table_info_*` functions, free with
/// `lance_table_info_free`.
pub struct LanceTableInfo {
    location: CString,
    latest_version: u64,
    _options: Vec<CString>,
    /// NULL-terminated key/value pointer array into `_options`.
    option_ptrs: Vec<*const c_char>,
}

impl LanceTableInfo {
    fn new(info: TableInfo) -> Self {
        let mut keys: Vec<&String> = info.storage_options.keys().collect();
        keys.sort();
        let mut options = Vec::with_capacity(keys.len() * 2);
        for k in keys {
            options.push(owned_cstring(k));
            options.push(owned_cstring(&info.storage_options[k]));
        }
        let mut option_ptrs: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();
        option_ptrs.push(std::ptr::null());
        Self {
            location: owned_cstring(&info.location),
            latest_version: info.latest_version,
            _options: options,
            option_ptrs,
        }
    }
}

fn namespace_arg(ns: *const *const c_char, len: usize) -> crate::error::Result<Vec<String>> {
    str_list_arg(ns, len, "namespace")
}

/// Connect to a catalog described by a NULL-terminated key/value array:
/// - `type`: `dir` (default) or `rest`.
/// - dir: `root` — absolute path, `file://` or `s3://` URI of the warehouse;
///   `storage.<key>` — storage options for the root, passed on to its tables.
/// - rest: `uri` — http(s) URL; `auth` = `none` | `bearer` | `api_key` with `bearer_token` /
///   `api_key`; `header.<Name>` — custom header sent on every request.
/// - both: `parent` — namespace path (e.g. `prod$analytics`) the catalog is scoped to;
///   `delimiter` (default `$`); `timeout_ms` — bound for each call (default 30000);
///   `page_size` — entries per listing request (default 1000; pages are followed to the end).
///
/// An unknown, missing or contradictory property is LANCE_ERR_INVALID_ARGUMENT naming the key.
/// Secret values (tokens, keys, secret storage options) never appear in messages.
///
/// Caller owns the result; free it with `lance_catalog_free`. Borrows `properties` for the
/// duration of the call. Thread-safe; the catalog may be used by many threads at once.
/// Returns NULL and sets the last error on failure.
#[no_mangle]
pub extern "C" fn lance_catalog_open(properties: *const *const c_char) -> *mut LanceCatalog {
    guard_ptr(|| {
        let props = kv_arg(properties, "properties")?;
        let catalog = Catalog::open(props)?;
        Ok(into_handle(LanceCatalog { catalog }))
    })
}

/// Free a catalog. NULL is ignored. Datasets opened through it stay valid.
///
/// Not thread-safe with respect to other calls on the same catalog: free it once, last.
#[no_mangle]
pub extern "C" fn lance_catalog_free(catalog: *mut LanceCatalog) {
    guard_free(|| free_handle(catalog))
}

/// List the child namespaces of `namespace` (`namespace_len` name parts relative to the
/// catalog's `parent`; `(NULL, 0)` = the catalog's top). With `recursive`, all descendants.
/// Each entry is a full path relative to the catalog's `parent`, sorted.
///
/// Caller owns `*out`; free it with `lance_namespace_list_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns an error code (LANCE_ERR_NOT_FOUND for an
/// unknown namespace); `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_catalog_list_namespaces(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    recursive: bool,
    out: *mut *mut LanceNamespaceList,
) -> i32 {
    guard_code(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let out = out_arg(out, "out")?;
        let paths = cat.catalog.list_namespaces(&ns, recursive)?;
        let items = paths
            .into_iter()
            .map(|p| p.iter().map(|s| owned_cstring(s)).collect())
            .collect();
        *out = into_handle(LanceNamespaceList { items });
        Ok(())
    })
}

/// List the tables of `namespace` (`(NULL, 0)` = the catalog's top), sorted by name.
///
/// Caller owns `*out`; free it with `lance_string_list_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns an error code (LANCE_ERR_NOT_FOUND for an
/// unknown namespace); `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_catalog_list_tables(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    out: *mut *mut LanceStringList,
) -> i32 {
    guard_code(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let out = out_arg(out, "out")?;
        let tables = cat.catalog.list_tables(&ns)?;
        *out = into_handle(LanceStringList {
            items: tables.iter().map(|t| owned_cstring(t)).collect(),
        });
        Ok(())
    })
}

/// Describe table `table` of `namespace`: its location, the storage options to open it with
/// (options the namespace vends override the catalog's own) and its latest version.
/// Since 0.15, vended options that carry `expires_at_millis` are refreshed through this
/// catalog's namespace before they expire, for every open and write of the table in this
/// process that uses exactly the options returned here (e.g. a worker opening a shipped
/// snapshot token with them); a `refresh_offset_millis` is added when the namespace set none
/// (docs/object-storage.md, "Credentials and their lifetime").
///
/// Caller owns `*out`; free it with `lance_table_info_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns an error code (LANCE_ERR_NOT_FOUND naming an
/// unknown namespace or table); `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_catalog_describe_table(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    table: *const c_char,
    out: *mut *mut LanceTableInfo,
) -> i32 {
    guard_code(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let table = str_arg(table, "table")?;
        let out = out_arg(out, "out")?;
        let info = cat.catalog.describe_table(&ns, table)?;
        *out = into_handle(LanceTableInfo::new(info));
        Ok(())
    })
}

/// Open table `table` of `namespace` pinned at `version` (0 = latest at open time, then
/// pinned), through the process-wide session. Since 0.15, storage options the namespace vends
/// with `expires_at_millis` are refreshed through it for the life of the handle and of every
/// stream, write and commit made from it (see `lance_catalog_describe_table`).
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns NULL and sets the last error on failure.
#[no_mangle]
pub extern "C" fn lance_catalog_open_table(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    table: *const c_char,
    version: u64,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let table = str_arg(table, "table")?;
        let snapshot = cat.catalog.open_table(&ns, table, version)?;
        Ok(into_handle(LanceDataset::new(snapshot)))
    })
}

/// Open table `table` of `namespace` on branch `branch` ("main" = the default one) at `version`
/// of that branch (0 = its latest), as `lance_dataset_open_branch` does for the table's location
/// (and through the namespace when it manages the table's versions).
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns NULL and sets the last error on failure
/// (LANCE_ERR_NOT_FOUND for a missing table, branch or version). Since 0.14.
#[no_mangle]
pub extern "C" fn lance_catalog_open_table_branch(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    table: *const c_char,
    branch: *const c_char,
    version: u64,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let table = str_arg(table, "table")?;
        let branch = str_arg(branch, "branch")?;
        Ok(into_handle(LanceDataset::new(cat.catalog.open_table_branch(&ns, table, branch, version)?)))
    })
}

/// Open table `table` of `namespace` at the version (of the branch) tag `tag` names.
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns NULL and sets the last error on failure
/// (LANCE_ERR_NOT_FOUND for a missing table or tag). Since 0.14.
#[no_mangle]
pub extern "C" fn lance_catalog_open_table_tag(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    table: *const c_char,
    tag: *const c_char,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let table = str_arg(table, "table")?;
        let tag = str_arg(tag, "tag")?;
        Ok(into_handle(LanceDataset::new(cat.catalog.open_table_tag(&ns, table, tag)?)))
    })
}

/// Create namespace `namespace` (`namespace_len` parts relative to the catalog's `parent`; its
/// parent must exist), with the NULL-terminated key/value `properties` (may be NULL). An
/// existing namespace is LANCE_ERR_INVALID_ARGUMENT unless `exist_ok`. A directory catalog
/// keeps namespaces in its manifest (pylance's directory namespace reads them); a REST catalog
/// asks its server.
///
/// Borrows its arguments. Thread-safe. Returns an error code. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_catalog_create_namespace(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    exist_ok: bool,
    properties: *const *const c_char,
) -> i32 {
    guard_code(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let properties = kv_arg(properties, "properties")?;
        cat.catalog.create_namespace(&ns, exist_ok, properties)
    })
}

/// Drop namespace `namespace`. Without `cascade` it must be empty (LANCE_ERR_INVALID_ARGUMENT
/// otherwise); with `cascade`, its tables (their data included) and child namespaces are dropped
/// first, one by one — a failure part-way leaves the rest in place and is reported. A namespace
/// that does not exist is LANCE_ERR_NOT_FOUND unless `missing_ok`. The root cannot be dropped.
///
/// Borrows its arguments. Thread-safe. Returns an error code. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_catalog_drop_namespace(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    cascade: bool,
    missing_ok: bool,
) -> i32 {
    guard_code(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        cat.catalog.drop_namespace(&ns, cascade, missing_ok)
    })
}

/// CREATE TABLE `table` in `namespace` AS the batches of `data`: the catalog declares the table
/// and gives its location, and the rows are written there as version 1, as by
/// `lance_table_write` (`params` may be NULL; its `mode` is ignored — always a create; its
/// storage options add to the catalog's). A table that exists is LANCE_ERR_INVALID_ARGUMENT.
/// If the write fails the declaration is withdrawn: the catalog is as it was.
///
/// `*out_dataset` (if not NULL) gets the new table pinned, owned by the caller; `out_result`
/// (may be NULL) what was written. Takes ownership of `data` (released, also on failure);
/// borrows the rest. Thread-safe. Returns an error code; outputs are not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_catalog_create_table(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    table: *const c_char,
    data: *mut FFI_ArrowArrayStream,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let (reader, _) = import_stream(data, "data")?;
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let table = str_arg(table, "table")?;
        let options = params_arg(params)?;
        if !options.preconditions.is_empty() {
            return Err(HostError::invalid(
                "a create has no version to require: params->expected_version and params->required_config apply to commits on an existing table",
            ));
        }
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = cat.catalog.create_table(&ns, table, reader, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// DROP TABLE `table` of `namespace`: it leaves the catalog and its data and versions are
/// deleted (readers pinned to it fail on their next read). A table that does not exist is
/// LANCE_ERR_NOT_FOUND unless `missing_ok`.
///
/// Borrows its arguments. Thread-safe. Returns an error code. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_catalog_drop_table(
    catalog: *const LanceCatalog,
    namespace: *const *const c_char,
    namespace_len: usize,
    table: *const c_char,
    missing_ok: bool,
) -> i32 {
    guard_code(|| {
        let cat = handle_ref(catalog, "catalog")?;
        let ns = namespace_arg(namespace, namespace_len)?;
        let table = str_arg(table, "table")?;
        cat.catalog.drop_table(&ns, table, missing_ok)
    })
}

/// Location (URI) of a described table.
///
/// The info owns the string; valid until `lance_table_info_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `info` is NULL.
#[no_mangle]
pub extern "C" fn lance_table_info_location(info: *const LanceTableInfo) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(handle_ref(info, "info")?.location.as_ptr()))
}

/// Latest version of a described table at describe time.
///
/// Thread-safe. Returns 0 and sets the last error if `info` is NULL.
#[no_mangle]
pub extern "C" fn lance_table_info_latest_version(info: *const LanceTableInfo) -> u64 {
    guard_value(0, || Ok(handle_ref(info, "info")?.latest_version))
}

/// Storage options of a described table as a NULL-terminated key/value array, ready to pass
/// to `lance_dataset_open`.
///
/// The info owns the array and its strings; valid until `lance_table_info_free` is called.
/// Thread-safe. Returns NULL and sets the last error if `info` is NULL.
#[no_mangle]
pub extern "C" fn lance_table_info_storage_options(
    info: *const LanceTableInfo,
) -> *const *const c_char {
    guard_value(std::ptr::null(), || {
        Ok(handle_ref(info, "info")?.option_ptrs.as_ptr())
    })
}

/// Free a table info and the strings it owns. NULL is ignored. Call once, after the last use
/// of the info and of pointers obtained from it; not concurrently with other calls on it.
#[no_mangle]
pub extern "C" fn lance_table_info_free(info: *mut LanceTableInfo) {
    guard_free(|| free_handle(info))
}

/// Number of strings in `list`.
///
/// Borrows `list`. Thread-safe. Returns 0 and sets the last error if `list` is NULL.
#[no_mangle]
pub extern "C" fn lance_string_list_count(list: *const LanceStringList) -> usize {
    guard_value(0, || Ok(handle_ref(list, "list")?.items.len()))
}

/// String `index` of `list`.
///
/// The list owns the string; valid until `lance_string_list_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `list` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_string_list_get(list: *const LanceStringList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || {
        Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.as_ptr())
    })
}

/// Free a string list and its strings. NULL is ignored. Call once, after the last use of the
/// list and of pointers obtained from it; not concurrently with other calls on it.
#[no_mangle]
pub extern "C" fn lance_string_list_free(list: *mut LanceStringList) {
    guard_free(|| free_handle(list))
}

/// Number of namespace paths in `list`.
///
/// Borrows `list`. Thread-safe. Returns 0 and sets the last error if `list` is NULL.
#[no_mangle]
pub extern "C" fn lance_namespace_list_count(list: *const LanceNamespaceList) -> usize {
    guard_value(0, || Ok(handle_ref(list, "list")?.items.len()))
}

/// Number of name parts of path `index` (0 and the last error set if out of range).
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn lance_namespace_list_depth(list: *const LanceNamespaceList, index: usize) -> usize {
    guard_value(0, || {
        Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.len())
    })
}

/// Name part `part` of path `index`.
///
/// The list owns the string; valid until `lance_namespace_list_free` is called. Thread-safe.
/// Returns NULL and sets the last error if an index is out of range.
#[no_mangle]
pub extern "C" fn lance_namespace_list_part(
    list: *const LanceNamespaceList,
    index: usize,
    part: usize,
) -> *const c_char {
    guard_value(std::ptr::null(), || {
        let path = item_at(&handle_ref(list, "list")?.items, index, "index")?;
        Ok(item_at(path, part, "part")?.as_ptr())
    })
}

/// Free a namespace list and its strings. NULL is ignored. Call once, after the last use of
/// the list and of pointers obtained from it; not concurrently with other calls on it.
#[no_mangle]
pub extern "C" fn lance_namespace_list_free(list: *mut LanceNamespaceList) {
    guard_free(|| free_handle(list))
}
