//! C ABI of table maintenance: compaction, cleanup, tags, restore.

use std::ffi::{c_char, CString};
use std::time::Duration;

use crate::write::maintenance::{self, CompactOptions, CompactSummary};

use super::handles::LanceDataset;
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{
    free_handle, guard_code, guard_free, guard_ptr, guard_value, handle_ref, into_handle, item_at, kv_arg,
    out_arg, owned_cstring, str_arg,
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
/// into larger ones, as one new version planned at the handle's version (indexes are remapped;
/// readers of older versions are unaffected). `params` may be NULL for defaults. When there is
/// nothing to compact nothing is committed (`out_result->version` is the handle's).
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
        let p = read_in(params, Layout::Sized, "params")?.unwrap_or_default();
        out_slot(out_result, Layout::Sized, "out_result")?;
        let options = CompactOptions {
            target_rows_per_fragment: (p.target_rows_per_fragment > 0).then_some(p.target_rows_per_fragment),
            max_rows_per_group: (p.max_rows_per_group > 0).then_some(p.max_rows_per_group),
            keep_deletions: p.keep_deletions != 0,
            deletion_threshold: (p.deletion_threshold != 0.0).then_some(p.deletion_threshold),
        };
        let (snapshot, summary) = maintenance::compact(&ds.snapshot, &options)?;
        if let Some(slot) = out_slot(out_result, Layout::Sized, "out_result")? {
            slot.write(&summary.into());
        }
        if !out_dataset.is_null() {
            *out_arg(out_dataset, "out_dataset")? = into_handle(LanceDataset::new(snapshot));
        }
        Ok(())
    })
}

/// Remove the versions of `dataset`'s table committed more than `older_than_ms` milliseconds
/// ago, and the files only they use. Never removed: the latest version, tagged versions, and
/// (unless `delete_unverified`) files younger than 7 days that no version references — they
/// may belong to a write in progress. A reader pinned to a removed version fails on its next
/// read: choose `older_than_ms` longer than the longest query or pipeline. `out_versions_removed`
/// and `out_bytes_removed` may be NULL.
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
        let s = maintenance::cleanup(&ds.snapshot, Duration::from_millis(older_than_ms), delete_unverified)?;
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
/// another code from Lance naming it; a missing version LANCE_ERR_NOT_FOUND.
///
/// Borrows its arguments. Thread-safe. Returns an error code.
#[no_mangle]
pub extern "C" fn lance_dataset_create_tag(dataset: *const LanceDataset, name: *const c_char, version: u64) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(name, "name")?;
        maintenance::create_tag(&ds.snapshot, name, version)?;
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
        maintenance::delete_tag(&ds.snapshot, name)
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
        let items = maintenance::list_tags(&ds.snapshot)?
            .into_iter()
            .map(|(n, v)| (owned_cstring(&n), v))
            .collect();
        *out = into_handle(LanceTagList { items });
        Ok(())
    })
}

/// Number of tags in `list` (0 and the last error set if `list` is NULL). Thread-safe.
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

/// Version tag `index` names (0 and the last error set if `list` is NULL or `index` is out of
/// range). Thread-safe.
#[no_mangle]
pub extern "C" fn lance_tag_list_version(list: *const LanceTagList, index: usize) -> u64 {
    guard_value(0, || Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.1))
}

/// Free a tag list. NULL is ignored. Call once, after the last use of the list and of names
/// obtained from it; not concurrently with other calls on it.
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
        let snapshot = maintenance::restore(&ds.snapshot)?;
        if !out_dataset.is_null() {
            *out_arg(out_dataset, "out_dataset")? = into_handle(LanceDataset::new(snapshot));
        }
        Ok(())
    })
}
