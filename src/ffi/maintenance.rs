//! C ABI of table maintenance: compaction, cleanup, tags, restore.

use std::ffi::{c_char, CString};
use std::time::Duration;

use crate::write::compaction::{self, CompactOptions, CompactSummary};
use crate::error::HostError;
use crate::write::{maintenance, schema};
use arrow::ffi::FFI_ArrowSchema;

use super::catalog::LanceStringList;
use super::handles::LanceDataset;
use super::write::{params_arg, write_result, LanceWriteParams, LanceWriteResult};
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{
    byte_list_arg, dataset_out, free_handle, guard_code, guard_free, guard_ptr, guard_value, handle_ref, into_array, into_handle,
    item_at, kv_arg, out_arg, owned_cstring, slice_arg, str_arg, str_list_arg,
};

/// Settings of `lance_dataset_compact`. Initialize with `lance_compact_params_init_v2(&p,
/// sizeof p)`; 0 fields mean Lance's default. Since 0.6.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceCompactParams {
    /// `sizeof(LanceCompactParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// Rows a compacted fragment aims at (0 = Lance's 1,048,576).
    pub target_rows_per_fragment: u64,
    /// Rows per row group of the new files (0 = Lance's 1,024).
    pub max_rows_per_group: u64,
    /// Share of deleted rows above which a fragment is rewritten, in (0, 1] (0 = Lance's 0.1).
    pub deletion_threshold: f32,
    /// Non-zero: keep deleted rows in deletion vectors instead of dropping them on rewrite.
    pub keep_deletions: u8,
}

impl Default for LanceCompactParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            target_rows_per_fragment: 0,
            max_rows_per_group: 0,
            deletion_threshold: 0.0,
            keep_deletions: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer and float fields. No 0.1 layout.
unsafe impl Extensible for LanceCompactParams {
    const NAME: &'static str = "LanceCompactParams";
    const MIN_SIZE: usize = 32;
    const V0_SIZE: usize = 24;
    fn initial() -> Self {
        Self::default()
    }
}

/// What `lance_dataset_compact` did. Set `struct_size = sizeof(LanceCompactResult)` first.
/// Since 0.6.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct LanceCompactResult {
    /// `sizeof(LanceCompactResult)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    /// The version committed; the handle's version when there was nothing to compact.
    pub version: u64,
    pub fragments_removed: u64,
    pub fragments_added: u64,
    pub files_removed: u64,
    pub files_added: u64,
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields. No 0.1 layout.
unsafe impl Extensible for LanceCompactResult {
    const NAME: &'static str = "LanceCompactResult";
    const MIN_SIZE: usize = 48;
    const V0_SIZE: usize = 40;
    fn initial() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            ..Default::default()
        }
    }
}

impl From<CompactSummary> for LanceCompactResult {
    fn from(s: CompactSummary) -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            version: s.version,
            fragments_removed: s.fragments_removed,
            fragments_added: s.fragments_added,
            files_removed: s.files_removed,
            files_added: s.files_added,
        }
    }
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with Lance's
/// compaction defaults and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_compact_params_init_v2(out: *mut LanceCompactParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Compact `dataset`'s table: rewrite small fragments, and fragments with many deleted rows,
/// into larger ones, planned at the handle's version (indexes are remapped; readers of older
/// versions are unaffected). Lance commits two versions, as pylance's `compact_files` does: a
/// reservation of fragment ids, then the rewrite (`out_result->version`). `params` may be NULL
/// for defaults. When there is nothing to compact nothing is committed (`out_result->version` is
/// the handle's).
///
/// `*out_dataset` (if not NULL) gets the resulting version pinned, owned by the caller;
/// `out_result` (may be NULL) what was rewritten. Borrows its arguments. Thread-safe. Returns an
/// error code (LANCE_ERR_CONFLICT if a concurrent commit cannot be combined); outputs are not
/// written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_compact(
    dataset: *const LanceDataset,
    params: *const LanceCompactParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceCompactResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let options = compact_options(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = compaction::compact(ds.table()?, &options)?;
        compact_out(snapshot, summary, out_dataset, out_result)
    })
}

fn compact_options(params: *const LanceCompactParams) -> crate::error::Result<CompactOptions> {
    let p = read_in(params, Layout::Sized, "params")?.unwrap_or_default();
    Ok(CompactOptions {
        target_rows_per_fragment: (p.target_rows_per_fragment > 0).then_some(p.target_rows_per_fragment),
        max_rows_per_group: (p.max_rows_per_group > 0).then_some(p.max_rows_per_group),
        keep_deletions: p.keep_deletions != 0,
        deletion_threshold: (p.deletion_threshold != 0.0).then_some(p.deletion_threshold),
    })
}

fn compact_out(
    snapshot: crate::snapshot::Snapshot,
    summary: CompactSummary,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceCompactResult,
) -> crate::error::Result<()> {
    if let Some(slot) = out_slot(out_result, Layout::Sized, "out_result")? {
        slot.write(&summary.into());
    }
    dataset_out(snapshot, out_dataset)
}

/// A list of byte strings (compaction tasks, index build tasks). Opaque; free with
/// `lance_bytes_list_free`.
pub struct LanceBytesList {
    pub(crate) items: Vec<Vec<u8>>,
}

/// Number of byte strings in `list`. Borrows `list`. Thread-safe. Returns 0 and sets the last
/// error if `list` is NULL.
#[no_mangle]
pub extern "C" fn lance_bytes_list_count(list: *const LanceBytesList) -> usize {
    guard_value(0, || Ok(handle_ref(list, "list")?.items.len()))
}

/// Byte string `index` of `list`: its length goes to `*out_len`. The pointer is borrowed from
/// `list` (valid until it is freed); copy the bytes to ship them. Thread-safe. Returns NULL and
/// sets the last error for a NULL list, a NULL `out_len` or an index out of range.
#[no_mangle]
pub extern "C" fn lance_bytes_list_get(list: *const LanceBytesList, index: usize, out_len: *mut usize) -> *const u8 {
    guard_value(std::ptr::null(), || {
        let item = item_at(&handle_ref(list, "list")?.items, index, "item")?;
        *out_arg(out_len, "out_len")? = item.len();
        Ok(item.as_ptr())
    })
}

/// Free a list from `lance_dataset_plan_compaction` or a `lance_dataset_plan_*_index_build`
/// function (the caller owns it; byte strings obtained
/// from it become invalid). NULL is a no-op. Not thread-safe with other uses of the same list
/// (no call may use it concurrently or afterwards). Returns nothing; never fails.
#[no_mangle]
pub extern "C" fn lance_bytes_list_free(list: *mut LanceBytesList) {
    guard_free(|| free_handle(list))
}

/// Plan a distributed compaction of `dataset`'s table at the handle's version: `*out` gets one
/// task per group of fragments to rewrite (an empty list when there is nothing to do), each as
/// bytes (versioned, checksummed, fragment metadata only) to ship to a worker, which executes it
/// with `lance_compaction_task_execute`; the coordinator then commits the results with
/// `lance_dataset_commit_compaction`. `params` (may be NULL) as for `lance_dataset_compact`.
///
/// Caller owns `*out`; free it with `lance_bytes_list_free`. Borrows its arguments.
/// Thread-safe. Returns an error code; `*out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_compaction(
    dataset: *const LanceDataset,
    params: *const LanceCompactParams,
    out: *mut *mut LanceBytesList,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let options = compact_options(params)?;
        out_arg(out, "out")?;
        let items = compaction::plan(ds.table()?, &options)?;
        *out_arg(out, "out")? = into_handle(LanceBytesList { items });
        Ok(())
    })
}

/// Execute one compaction task (bytes from `lance_dataset_plan_compaction`) on a worker: rewrite
/// its fragments into new files of `dataset`'s table WITHOUT committing, and return the result
/// as bytes (`*out`, `*out_len`) to ship back to the coordinator. `dataset` is the table opened on
/// the worker (the task reads the version it was planned at). Damaged or foreign bytes are
/// LANCE_ERR_CORRUPT (another format version: LANCE_ERR_NOT_SUPPORTED); a task of another table
/// is LANCE_ERR_INVALID_ARGUMENT. The new files of a result that is never committed are removed
/// by `lance_dataset_cleanup` with `delete_unverified`.
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its arguments.
/// Thread-safe. Returns an error code; outputs are not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_compaction_task_execute(
    dataset: *const LanceDataset,
    task: *const u8,
    task_len: usize,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let task = slice_arg(task, task_len, "task")?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        let result = compaction::execute_task(ds.table()?, task)?;
        let (p, n) = into_array(result);
        *out_arg(out, "out")? = p;
        *out_arg(out_len, "out_len")? = n;
        Ok(())
    })
}

/// Commit `num_results` compaction results (`results[i]` of `result_lens[i]` bytes, from
/// `lance_compaction_task_execute` on any process) of one plan as ONE new version of `dataset`'s
/// table (indexes are remapped). Results of failed tasks may be left out: their fragments stay
/// as they were. A commit since the plan that changed the same fragments is LANCE_ERR_CONFLICT;
/// results of two plans or another table are LANCE_ERR_INVALID_ARGUMENT; damaged bytes
/// LANCE_ERR_CORRUPT, naming the index. `params` (may be NULL) as given to the plan. Since 0.11
/// the results' files are checked before the commit (present in this table, agreeing with their
/// footers, named once, part of no version) and each result must keep the rows of the fragments
/// it replaces: LANCE_ERR_INVALID_ARGUMENT naming the result otherwise.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller; `out_result`
/// (may be NULL) what was rewritten. Borrows its arguments. Thread-safe. Returns an error code;
/// outputs are not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_commit_compaction(
    dataset: *const LanceDataset,
    results: *const *const u8,
    result_lens: *const usize,
    num_results: usize,
    params: *const LanceCompactParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceCompactResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let results = byte_list_arg(results, result_lens, num_results, "results")?;
        let options = compact_options(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = compaction::commit(ds.table()?, &results, &options)?;
        compact_out(snapshot, summary, out_dataset, out_result)
    })
}

/// Remove the versions of `dataset`'s table committed more than `older_than_ms` milliseconds
/// ago, and the files only they use. Never removed: the latest version, tagged versions, and
/// (unless `delete_unverified`) files younger than 7 days that no version references — they
/// may belong to a write in progress. A reader pinned to a removed version fails on its next
/// read: choose `older_than_ms` longer than the longest query or pipeline. Since 0.14 also
/// removes staging manifests no version needs (left by commits that never landed, e.g. a
/// refused or killed multi-table commit), by the same age rule. `out_versions_removed` and
/// `out_bytes_removed` may be NULL.
///
/// Borrows its arguments. Thread-safe. Returns an error code; outputs are not written on
/// failure.
#[no_mangle]
pub extern "C" fn lance_dataset_cleanup(
    dataset: *const LanceDataset,
    older_than_ms: u64,
    delete_unverified: bool,
    out_versions_removed: *mut u64,
    out_bytes_removed: *mut u64,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let s = maintenance::cleanup(ds.table()?, Duration::from_millis(older_than_ms), delete_unverified)?;
        if !out_versions_removed.is_null() {
            *out_arg(out_versions_removed, "out_versions_removed")? = s.versions_removed;
        }
        if !out_bytes_removed.is_null() {
            *out_arg(out_bytes_removed, "out_bytes_removed")? = s.bytes_removed;
        }
        Ok(())
    })
}

/// Tag `version` of `dataset`'s table as `name` (0 = the handle's version). A tag keeps its
/// version from cleanup and opens it by name (`lance_dataset_open_tag`); pylance sees it too.
/// Names: letters, digits, '-', '_', '.'. An existing tag is LANCE_ERR_INVALID_ARGUMENT or
/// LANCE_ERR_FAILED_PRECONDITION (a name Lance finds taken; LANCE_ERR_INTERNAL before 0.15);
/// a missing version LANCE_ERR_NOT_FOUND.
///
/// Borrows its arguments. Thread-safe. Returns an error code.
#[no_mangle]
pub extern "C" fn lance_dataset_create_tag(dataset: *const LanceDataset, name: *const c_char, version: u64) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(name, "name")?;
        maintenance::create_tag(ds.table()?, name, version)?;
        Ok(())
    })
}

/// Delete tag `name` of `dataset`'s table (LANCE_ERR_NOT_FOUND if there is none).
///
/// Borrows its arguments. Thread-safe. Returns an error code.
#[no_mangle]
pub extern "C" fn lance_dataset_delete_tag(dataset: *const LanceDataset, name: *const c_char) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(name, "name")?;
        maintenance::delete_tag(ds.table()?, name)
    })
}

/// The tags of a table. Opaque; read with `lance_tag_list_*`, free with `lance_tag_list_free`.
pub struct LanceTagList {
    items: Vec<(CString, u64)>,
}

/// List the tags of `dataset`'s table, sorted by name.
///
/// Caller owns `*out`; free it with `lance_tag_list_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_tags(dataset: *const LanceDataset, out: *mut *mut LanceTagList) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let items = maintenance::list_tags(ds.table()?)?
            .into_iter()
            .map(|(n, v)| (owned_cstring(&n), v))
            .collect();
        *out = into_handle(LanceTagList { items });
        Ok(())
    })
}

/// Number of tags in `list`. Borrows `list`. Thread-safe. Returns 0 and sets the last error if
/// `list` is NULL.
#[no_mangle]
pub extern "C" fn lance_tag_list_count(list: *const LanceTagList) -> usize {
    guard_value(0, || Ok(handle_ref(list, "list")?.items.len()))
}

/// Name of tag `index`. The list owns the string; valid until `lance_tag_list_free`.
/// Thread-safe. Returns NULL and sets the last error if `list` is NULL or `index` is out of
/// range.
#[no_mangle]
pub extern "C" fn lance_tag_list_name(list: *const LanceTagList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.0.as_ptr()))
}

/// Version tag `index` names. Borrows `list`. Thread-safe. Returns 0 and sets the last error if
/// `list` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_tag_list_version(list: *const LanceTagList, index: usize) -> u64 {
    guard_value(0, || Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.1))
}

/// Free a tag list (the caller owns it). NULL is ignored. Call once, after the last use of the
/// list and of names obtained from it; not concurrently with other calls on it. Returns
/// nothing; never fails.
#[no_mangle]
pub extern "C" fn lance_tag_list_free(list: *mut LanceTagList) {
    guard_free(|| free_handle(list))
}

/// Open the table at `uri` pinned to the version tag `tag` names (with the NULL-terminated
/// key/value `storage_options`, may be NULL). The handle is like any other: its snapshot token
/// and splits ship as usual.
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments.
/// Thread-safe. Returns NULL and sets the last error on failure (LANCE_ERR_NOT_FOUND for a
/// missing tag).
#[no_mangle]
pub extern "C" fn lance_dataset_open_tag(
    uri: *const c_char,
    storage_options: *const *const c_char,
    tag: *const c_char,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let uri = str_arg(uri, "uri")?;
        let options = kv_arg(storage_options, "storage_options")?;
        let tag = str_arg(tag, "tag")?;
        Ok(into_handle(LanceDataset::new(maintenance::open_tag(uri, options, tag)?)))
    })
}

/// Make `dataset`'s pinned version the table's latest again, as a new version (rows, schema
/// and indexes as they were at that version). `*out_dataset` (if not NULL) gets the new version
/// pinned, owned by the caller.
///
/// Borrows `dataset`. Thread-safe. Returns an error code; `*out_dataset` is not written on
/// failure.
#[no_mangle]
pub extern "C" fn lance_dataset_restore(dataset: *const LanceDataset, out_dataset: *mut *mut LanceDataset) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let snapshot = maintenance::restore(ds.table()?)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Add `num_columns` columns to `dataset`'s table, as one new version planned at the handle's
/// version: column `names[i]` gets the value of the Lance SQL expression `expressions[i]` over
/// each existing row (e.g. "price * qty", "lower(name)"), written in new files beside the
/// existing ones. A name that exists, an expression that does not parse or names an unknown
/// column is LANCE_ERR_INVALID_ARGUMENT; nothing is committed on any failure. Readers of older
/// versions are unaffected.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_add_columns(
    dataset: *const LanceDataset,
    names: *const *const c_char,
    expressions: *const *const c_char,
    num_columns: usize,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let names = str_list_arg(names, num_columns, "names")?;
        let expressions = str_list_arg(expressions, num_columns, "expressions")?;
        let columns: Vec<(String, String)> = names.into_iter().zip(expressions).collect();
        let snapshot = schema::add_columns(ds.table()?, &columns)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Add the fields of the Arrow C Data schema `columns` (a struct schema, e.g. exported from a
/// host's column definitions) as columns that are null in every existing row: metadata only, no
/// data is written. The fields must be nullable and new. One new version planned at the
/// handle's version; nothing is committed on failure.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments (`columns` is not released). Thread-safe. Returns an error code; `*out_dataset` is
/// not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_add_null_columns(
    dataset: *const LanceDataset,
    columns: *const FFI_ArrowSchema,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let ffi: &FFI_ArrowSchema = handle_ref(columns, "columns")?;
        if ffi.release.is_none() {
            return Err(HostError::invalid("columns is a released ArrowSchema"));
        }
        let columns = arrow_schema::Schema::try_from(ffi)
            .map_err(|e| HostError::invalid(format!("columns is not a struct schema: {e}")))?;
        let snapshot = schema::add_null_columns(ds.table()?, columns)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Drop `num_columns` columns (`names`) of `dataset`'s table, as one new version planned at the
/// handle's version: metadata only (`lance_dataset_compact` and `lance_dataset_cleanup` reclaim
/// the space). An unknown column, or dropping every column, is LANCE_ERR_INVALID_ARGUMENT.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_drop_columns(
    dataset: *const LanceDataset,
    names: *const *const c_char,
    num_columns: usize,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let names = str_list_arg(names, num_columns, "names")?;
        let snapshot = schema::drop_columns(ds.table()?, &names)?;
        dataset_out(snapshot, out_dataset)
    })
}


/// Set and remove keys of the table's config (Lance's table config, pylance's `config()` and
/// `update_config`) as one new version planned at `dataset`'s version: `set` is a
/// NULL-terminated array of key/value pairs (NULL = none), `remove` an array of `num_remove`
/// keys. A key both set and removed, an empty key or nothing to do is
/// LANCE_ERR_INVALID_ARGUMENT. `params` (may be NULL): `commit_message`,
/// `transaction_properties`, `commit_retries`, `retry_timeout_ms`, `storage_options`, and the
/// preconditions `expected_version` and `required_config` (a fencing token moved atomically:
/// require the old value, set the new one); a `statement_id` is refused. Nothing is committed
/// on any failure.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller; `out_result`
/// (may be NULL) gets its version. Borrows its arguments. Thread-safe. Returns an error code;
/// outputs are not written on failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_update_config(
    dataset: *const LanceDataset,
    set: *const *const c_char,
    remove: *const *const c_char,
    num_remove: usize,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let set = kv_arg(set, "set")?;
        let remove = str_list_arg(remove, num_remove, "remove")?;
        let options = params_arg(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let updates = maintenance::ConfigUpdates::new(set, remove)?;
        let (snapshot, summary) = maintenance::update_config(ds.table()?, &updates, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// The table's config at `dataset`'s version (what `lance_dataset_update_config` and pylance's
/// `update_config` set) as a list of alternating keys and values, sorted by key: entry `2i` is
/// a key, `2i + 1` its value.
///
/// Caller owns `*out`; free it with `lance_string_list_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; `*out` is not written on failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_config(dataset: *const LanceDataset, out: *mut *mut LanceStringList) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let pairs = maintenance::config(ds.table()?);
        *out = into_handle(LanceStringList::of(pairs.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()])));
        Ok(())
    })
}
