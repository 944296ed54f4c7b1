//! C ABI of branches and clones: open a table on a branch, create, list and delete branches,
//! shallow-clone a version into a new table.

use std::ffi::{c_char, CString};

use crate::branch;

use super::handles::LanceDataset;
use super::{
    dataset_out, free_handle, guard_code, guard_free, guard_ptr, guard_value, handle_ref, into_handle, item_at, kv_arg,
    out_arg, owned_cstring, str_arg,
};

/// Open the table at `uri` on branch `branch` ("main" = the default branch) at `version` of
/// that branch (0 = its latest), with the NULL-terminated key/value `storage_options` (may be
/// NULL). The handle is the branch's own location (`<uri>/tree/<branch>`, its
/// `lance_dataset_uri`) pinned at one of the branch's versions: its snapshot token and splits
/// carry that location, so workers open exactly that version of the branch, and writes and
/// commits planned on it (`lance_table_write` / `lance_table_commit` with the handle's URI,
/// staged shares, deletes, updates, merges) land on the branch, never on main.
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments.
/// Thread-safe. Returns NULL and sets the last error on failure (LANCE_ERR_NOT_FOUND for a
/// missing branch or version, LANCE_ERR_INVALID_ARGUMENT for a name that is not a path of
/// names below the table: empty, `..`, a control character). Existing branches open under any
/// such name, non-ASCII ones another writer created included (since 0.15). Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_open_branch(
    uri: *const c_char,
    storage_options: *const *const c_char,
    branch: *const c_char,
    version: u64,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let uri = str_arg(uri, "uri")?;
        let options = kv_arg(storage_options, "storage_options")?;
        let branch = str_arg(branch, "branch")?;
        Ok(into_handle(LanceDataset::new(branch::open_branch(uri, options, branch, version)?)))
    })
}

/// The branch `dataset` is on: "main" for the default branch.
///
/// The handle owns the string; valid until `lance_dataset_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `dataset` is NULL. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_branch(dataset: *const LanceDataset) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(handle_ref(dataset, "dataset")?.branch.as_ptr()))
}

/// Create branch `name` of `dataset`'s table from `version` of the handle's branch (0 = the
/// handle's version). The branch shares that version's files and has its own versions from
/// then on; pylance sees it (`branches`, `checkout_version((name, v))`). Names: letters,
/// digits, '-', '_', '.', '/' between names; "main" is LANCE_ERR_INVALID_ARGUMENT, a name
/// taken LANCE_ERR_FAILED_PRECONDITION (since 0.15; LANCE_ERR_INTERNAL before). `*out_dataset` (if not NULL) gets the
/// new branch at its first version (numbered as the version it was created from), owned by the
/// caller.
///
/// Borrows its arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on
/// failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_create_branch(
    dataset: *const LanceDataset,
    name: *const c_char,
    version: u64,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(name, "name")?;
        dataset_out(branch::create_branch(ds.table()?, name, version)?, out_dataset)
    })
}

/// Delete branch `name` of `dataset`'s table (not the handle's own branch, not "main").
/// Readers pinned to it in other processes fail on their next read.
///
/// Borrows its arguments. Thread-safe. Returns an error code (LANCE_ERR_NOT_FOUND for a
/// missing branch, LANCE_ERR_FAILED_PRECONDITION for a branch other branches were created
/// from — since 0.15, LANCE_ERR_INTERNAL before). Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_delete_branch(dataset: *const LanceDataset, name: *const c_char) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(name, "name")?;
        branch::delete_branch(ds.table()?, name)
    })
}

/// The branches of a table. Opaque; read with `lance_branch_list_*`, free with
/// `lance_branch_list_free`. Since 0.14.
pub struct LanceBranchList {
    items: Vec<(CString, CString, u64)>,
}

/// List the branches of `dataset`'s table (not "main"), sorted by name.
///
/// Caller owns `*out`; free it with `lance_branch_list_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; `*out` is not written on failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_branches(dataset: *const LanceDataset, out: *mut *mut LanceBranchList) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let items = branch::list_branches(ds.table()?)?
            .into_iter()
            .map(|b| {
                let parent = b.parent.as_deref().unwrap_or(branch::MAIN);
                (owned_cstring(&b.name), owned_cstring(parent), b.parent_version)
            })
            .collect();
        *out = into_handle(LanceBranchList { items });
        Ok(())
    })
}

/// Number of branches in `list`. Borrows `list`. Thread-safe. Returns 0 and sets the last
/// error if `list` is NULL. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_branch_list_count(list: *const LanceBranchList) -> usize {
    guard_value(0, || Ok(handle_ref(list, "list")?.items.len()))
}

/// Name of branch `index`. The list owns the string; valid until `lance_branch_list_free`.
/// Thread-safe. Returns NULL and sets the last error if `list` is NULL or `index` is out of
/// range. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_branch_list_name(list: *const LanceBranchList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.0.as_ptr()))
}

/// The branch branch `index` was created from ("main" for the default branch). The list owns
/// the string; valid until `lance_branch_list_free`. Thread-safe. Returns NULL and sets the
/// last error if `list` is NULL or `index` is out of range. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_branch_list_parent(list: *const LanceBranchList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.1.as_ptr()))
}

/// The version of its parent branch `index` was created from. Borrows `list`. Thread-safe.
/// Returns 0 and sets the last error if `list` is NULL or `index` is out of range. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_branch_list_parent_version(list: *const LanceBranchList, index: usize) -> u64 {
    guard_value(0, || Ok(item_at(&handle_ref(list, "list")?.items, index, "index")?.2))
}

/// Free a branch list (the caller owns it). NULL is ignored. Call once, after the last use of
/// the list and of strings obtained from it; not concurrently with other calls on it. Returns
/// nothing; never fails. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_branch_list_free(list: *mut LanceBranchList) {
    guard_free(|| free_handle(list))
}

/// Clone `dataset`'s pinned version into a new table at `target_uri` (with the NULL-terminated
/// key/value `storage_options`, may be NULL) that references the source's files instead of
/// copying them: the source's files must outlive the clone (keep the version tagged or exempt
/// from cleanup). The clone has its own versions from then on; pylance opens it like any table.
/// An existing table at `target_uri` is refused. `*out_dataset` (if not NULL) gets the clone at
/// its first version (numbered as the source version), owned by the caller.
///
/// Borrows its arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on
/// failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_shallow_clone(
    dataset: *const LanceDataset,
    target_uri: *const c_char,
    storage_options: *const *const c_char,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = str_arg(target_uri, "target_uri")?;
        let options = kv_arg(storage_options, "storage_options")?;
        dataset_out(branch::shallow_clone(ds.table()?, target, options)?, out_dataset)
    })
}
