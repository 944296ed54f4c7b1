//! The C boundary of `write/changes_by_predicate.rs`: DELETE, UPDATE and MERGE INSERT by a
//! predicate or key, in one call or staged as one worker's share.

use std::ffi::c_char;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::error::{HostError, Result};
use crate::write::changes_by_predicate::{self, MergeInsert, OnMatch, OnNoMatch, OnNoSourceMatch};
use crate::write::WriteOptions;

use super::handles::{LanceDataset, LanceSplit};
use super::scan::import_stream;
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{
    dataset_out, guard_code, handle_ref, opt_str_arg, out_arg,
    str_arg, str_list_arg,
};
use super::write::{params_arg, staged_out, write_result, LanceWriteParams, LanceWriteResult};

/// Stage one worker's share of a delete: mark the rows of `split`'s fragments that match the
/// Lance SQL `predicate` deleted in new deletion files WITHOUT committing, and return staged-write
/// bytes (`*out`, `*out_len`, as from `lance_table_stage_write`). `split` is a scan split
/// planned on `dataset` (`lance_dataset_plan_scan`, shipped as bytes); NULL = every fragment.
/// Give every worker its own split, with one predicate: the coordinator commits all shares as
/// one delete in one version with `lance_table_commit` (or discards them with
/// `lance_staged_write_abort`). A predicate that does not parse, a split of another table or
/// version, or a split that is not a scan split is LANCE_ERR_INVALID_ARGUMENT. `out_result` (may
/// be NULL) gets `rows_deleted` (version 0, committed 0).
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its arguments.
/// Thread-safe. Returns an error code; outputs are not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_stage_delete(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    predicate: *const c_char,
    out: *mut *mut u8,
    out_len: *mut usize,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = if split.is_null() { None } else { Some(&handle_ref(split, "split")?.split) };
        let predicate = str_arg(predicate, "predicate")?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let staged = changes_by_predicate::stage_delete_split(ds.table()?, split, predicate)?;
        staged_out(&staged, out, out_len, out_result)
    })
}

/// Stage a merge-insert (as `lance_dataset_merge_insert`) WITHOUT committing: the rows it
/// inserts and rewrites go to new files, and the staged-write bytes (`*out`, `*out_len`) name
/// them. Lance computes a merge-insert over the whole table, so it is one share: the
/// coordinator commits it alone with `lance_table_commit` (its exactly-once statement id,
/// retries and commit message apply there), or discards it with `lance_staged_write_abort`.
/// `out_result` (may be NULL) gets the rows inserted, updated and deleted (version 0,
/// committed 0).
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Takes ownership of
/// `data` (released, also on failure); borrows the rest. Thread-safe. Returns an error code;
/// outputs are not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_stage_merge_insert(
    dataset: *const LanceDataset,
    data: *mut FFI_ArrowArrayStream,
    spec: *const LanceMergeInsert,
    out: *mut *mut u8,
    out_len: *mut usize,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let (reader, _) = import_stream(data, "data")?;
        let ds = handle_ref(dataset, "dataset")?;
        let spec = merge_arg(spec)?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let staged = changes_by_predicate::stage_merge_insert(ds.table()?, reader, &spec, &WriteOptions::default())?;
        staged_out(&staged, out, out_len, out_result)
    })
}

/// Delete the rows of `dataset`'s table that match the Lance SQL `predicate`, as one new
/// version planned at the handle's pinned version (concurrent commits Lance can rebase over
/// are fine, others LANCE_ERR_CONFLICT). A predicate that does not parse completely (text after
/// the expression, a `$1` placeholder; since 0.11) or names an unknown
/// column is LANCE_ERR_INVALID_ARGUMENT. `params` (may be NULL): `commit_retries`, `retry_timeout_ms`, `statement_id` (a retry of a
/// statement already committed answers with its version, `committed` 0, nothing written again),
/// `commit_message`, `transaction_properties` and the preconditions `expected_version` and
/// `required_config`; the file-layout fields are not used.
/// As in Lance and pylance, a predicate that matches nothing still
/// commits a version (with `rows_deleted` 0).
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller (the handle
/// passed in keeps its version); `out_result` (may be NULL) gets `rows_deleted`. Borrows its
/// arguments. Thread-safe. Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_delete(
    dataset: *const LanceDataset,
    predicate: *const c_char,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let predicate = str_arg(predicate, "predicate")?;
        let options = params_arg(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = changes_by_predicate::delete(ds.table()?, predicate, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// What a merge-insert does with a target row that matches a source row.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceWhenMatched {
    /// Keep the target row (find-or-create; the default).
    LANCE_WHEN_MATCHED_DO_NOTHING = 0,
    /// Replace it with the source row (upsert).
    LANCE_WHEN_MATCHED_UPDATE_ALL = 1,
    /// Replace it where `when_matched_condition` holds (columns as `target.x`, `source.x`).
    LANCE_WHEN_MATCHED_UPDATE_IF = 2,
    /// Delete it.
    LANCE_WHEN_MATCHED_DELETE = 3,
    /// Fail the statement (nothing is committed).
    LANCE_WHEN_MATCHED_FAIL = 4,
}

/// What a merge-insert does with a source row that matches no target row.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceWhenNotMatched {
    /// Insert it (the default).
    LANCE_WHEN_NOT_MATCHED_INSERT = 0,
    /// Ignore it.
    LANCE_WHEN_NOT_MATCHED_DO_NOTHING = 1,
}

/// What a merge-insert does with a target row that matches no source row.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceWhenNotMatchedBySource {
    /// Keep it (the default).
    LANCE_WHEN_NOT_MATCHED_BY_SOURCE_KEEP = 0,
    /// Delete it (replace the table's rows by the source's).
    LANCE_WHEN_NOT_MATCHED_BY_SOURCE_DELETE = 1,
    /// Delete it where `by_source_condition` holds (replace a region).
    LANCE_WHEN_NOT_MATCHED_BY_SOURCE_DELETE_IF = 2,
}

/// A merge-insert statement (`lance_dataset_merge_insert`). Initialize with
/// `lance_merge_insert_init_v2(&m, sizeof m)`: no key columns, matched rows kept, unmatched
/// source rows inserted, unmatched target rows kept. Since 0.6.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceMergeInsert {
    /// `sizeof(LanceMergeInsert)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// The key columns rows are matched on (at least one).
    pub on: *const *const c_char,
    pub num_on: usize,
    /// A `LanceWhenMatched`.
    pub when_matched: i32,
    /// A `LanceWhenNotMatched`.
    pub when_not_matched: i32,
    /// The condition of LANCE_WHEN_MATCHED_UPDATE_IF (Lance SQL); NULL otherwise.
    pub when_matched_condition: *const c_char,
    /// A `LanceWhenNotMatchedBySource`.
    pub when_not_matched_by_source: i32,
    /// The condition of LANCE_WHEN_NOT_MATCHED_BY_SOURCE_DELETE_IF (Lance SQL on the target's
    /// columns); NULL otherwise.
    pub by_source_condition: *const c_char,
}

impl Default for LanceMergeInsert {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            on: std::ptr::null(),
            num_on: 0,
            when_matched: LanceWhenMatched::LANCE_WHEN_MATCHED_DO_NOTHING as i32,
            when_not_matched: LanceWhenNotMatched::LANCE_WHEN_NOT_MATCHED_INSERT as i32,
            when_matched_condition: std::ptr::null(),
            when_not_matched_by_source: LanceWhenNotMatchedBySource::LANCE_WHEN_NOT_MATCHED_BY_SOURCE_KEEP as i32,
            by_source_condition: std::ptr::null(),
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer and pointer fields. It has no 0.1
// layout (V0_SIZE is never used).
unsafe impl Extensible for LanceMergeInsert {
    const NAME: &'static str = "LanceMergeInsert";
    const MIN_SIZE: usize = 56;
    const V0_SIZE: usize = 48;
    fn initial() -> Self {
        Self::default()
    }
}

fn merge_arg(p: *const LanceMergeInsert) -> Result<MergeInsert> {
    let m = read_in(p, Layout::Sized, "spec")?
        .ok_or_else(|| HostError::invalid("spec is NULL (a merge-insert needs its key columns)"))?;
    let condition = |p: *const c_char, name: &str, what: &str| -> Result<String> {
        opt_str_arg(p, name)?
            .map(str::to_string)
            .ok_or_else(|| HostError::invalid(format!("{what} needs {name}")))
    };
    Ok(MergeInsert {
        on: str_list_arg(m.on, m.num_on, "spec->on")?,
        when_matched: match m.when_matched {
            0 => OnMatch::DoNothing,
            1 => OnMatch::UpdateAll,
            2 => OnMatch::UpdateIf(condition(
                m.when_matched_condition,
                "spec->when_matched_condition",
                "LANCE_WHEN_MATCHED_UPDATE_IF",
            )?),
            3 => OnMatch::Delete,
            4 => OnMatch::Fail,
            v => return Err(HostError::invalid(format!("spec->when_matched {v} is not a LanceWhenMatched (0..4)"))),
        },
        when_not_matched: match m.when_not_matched {
            0 => OnNoMatch::Insert,
            1 => OnNoMatch::DoNothing,
            v => {
                return Err(HostError::invalid(format!(
                    "spec->when_not_matched {v} is not a LanceWhenNotMatched (0 insert, 1 do nothing)"
                )))
            }
        },
        when_not_matched_by_source: match m.when_not_matched_by_source {
            0 => OnNoSourceMatch::Keep,
            1 => OnNoSourceMatch::Delete,
            2 => OnNoSourceMatch::DeleteIf(condition(
                m.by_source_condition,
                "spec->by_source_condition",
                "LANCE_WHEN_NOT_MATCHED_BY_SOURCE_DELETE_IF",
            )?),
            v => {
                return Err(HostError::invalid(format!(
                    "spec->when_not_matched_by_source {v} is not a LanceWhenNotMatchedBySource (0..2)"
                )))
            }
        },
    })
}

/// Set columns of `dataset`'s table with Lance SQL expressions over the row
/// (`UPDATE t SET columns[i] = expressions[i] WHERE predicate`; `predicate` NULL = every row),
/// as one new version planned at the handle's version. An unknown column, an expression or
/// predicate or expression that does not parse completely (text after the expression, a `$1`
/// placeholder; since 0.11) or has the wrong type is LANCE_ERR_INVALID_ARGUMENT, nothing
/// written. `params` (may be NULL): `commit_retries`, `retry_timeout_ms`, `statement_id` (a retry of a
/// statement already committed answers with its version, `committed` 0, nothing written again),
/// `commit_message`, `transaction_properties` and the preconditions `expected_version` and
/// `required_config`; the file-layout fields are not used.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller; `out_result`
/// (may be NULL) gets `rows_updated`. Borrows its arguments. Thread-safe. Returns an error
/// code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_update(
    dataset: *const LanceDataset,
    columns: *const *const c_char,
    expressions: *const *const c_char,
    num_columns: usize,
    predicate: *const c_char,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let columns = str_list_arg(columns, num_columns, "columns")?;
        let expressions = str_list_arg(expressions, num_columns, "expressions")?;
        let predicate = opt_str_arg(predicate, "predicate")?;
        let options = params_arg(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let assignments: Vec<(String, String)> = columns.into_iter().zip(expressions).collect();
        let (snapshot, summary) = changes_by_predicate::update(ds.table()?, &assignments, predicate, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with the default
/// merge-insert (no key columns; keep matched rows, insert unmatched source rows, keep
/// unmatched target rows) and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_merge_insert_init_v2(out: *mut LanceMergeInsert, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Merge the source rows of `data` into `dataset`'s table by the key columns `spec->on`, as one
/// new version planned at the handle's version (MERGE INTO / upsert): `spec->when_matched`,
/// `when_not_matched` and `when_not_matched_by_source` say what happens to each row. The source
/// has the table's columns; an unknown key column, a condition that does not parse, a source with another
/// schema is LANCE_ERR_INVALID_ARGUMENT; LANCE_WHEN_MATCHED_FAIL with a match is LANCE_ERR_CONFLICT
/// (since 0.11); a failing `data` stream is LANCE_ERR_HOST_STREAM; conditions with text after
/// the expression or a placeholder are LANCE_ERR_INVALID_ARGUMENT; nothing is
/// committed on any failure. `params` (may be NULL): `commit_retries`, `retry_timeout_ms`, `statement_id` (a retry of a
/// statement already committed answers with its version, `committed` 0, nothing written again),
/// `commit_message`, `transaction_properties` and the preconditions `expected_version` and
/// `required_config`; the file-layout fields are not used.
/// `data` is read on a thread of its own (it may be a lance-host stream).
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller; `out_result`
/// (may be NULL) gets `rows_inserted`, `rows_updated`, `rows_deleted`, files and bytes written.
/// Takes ownership of `data` (released, also on failure); borrows the rest. Thread-safe.
/// Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_merge_insert(
    dataset: *const LanceDataset,
    data: *mut FFI_ArrowArrayStream,
    spec: *const LanceMergeInsert,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let (reader, _) = import_stream(data, "data")?;
        let ds = handle_ref(dataset, "dataset")?;
        let spec = merge_arg(spec)?;
        let options = params_arg(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = changes_by_predicate::merge_insert(ds.table()?, reader, &spec, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}
