//! C ABI of change data: plan the rows a table's versions changed as splits (read with
//! `lance_split_scan_v2`).

use crate::changes::{self, ChangesRequest};

use super::handles::LanceDataset;
use super::split::{export_plan, LanceSplitPlan};
use super::sized::{init_out, read_in, Extensible, Layout};
use super::{guard_code, handle_ref, out_arg};

/// Kinds of change (bits of `LanceChangesParams.change_types`). Since 0.14.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceChangeType {
    /// Rows created after the begin version (`_change_type` "insert").
    LANCE_CHANGE_INSERTED = 1,
    /// Rows created at or before the begin version and updated after it ("update").
    LANCE_CHANGE_UPDATED = 2,
    /// Rows live at the begin version and not at the pinned one ("delete").
    LANCE_CHANGE_DELETED = 4,
}

/// What `lance_dataset_plan_changes` plans. Initialize with
/// `lance_changes_params_init_v2(&p, sizeof p)`. Since 0.14.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceChangesParams {
    /// `sizeof(LanceChangesParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// The changes after this version (0 = since the table was created).
    pub since_version: u64,
    /// Instead of `since_version` (which must then be 0): the changes after the last version
    /// committed before this time, in milliseconds since the Unix epoch (UTC). 0 = unset.
    pub since_timestamp_ms: i64,
    /// `LanceChangeType` bits; 0 = all three.
    pub change_types: u32,
    /// Visible rows per split of inserted and updated rows (0 = one fragment per split).
    pub target_rows: u64,
}

impl Default for LanceChangesParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            since_version: 0,
            since_timestamp_ms: 0,
            change_types: 0,
            target_rows: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields. No 0.1 layout.
unsafe impl Extensible for LanceChangesParams {
    const NAME: &'static str = "LanceChangesParams";
    const MIN_SIZE: usize = 40;
    const V0_SIZE: usize = 32;
    fn initial() -> Self {
        Self::default()
    }
}

/// Fill `out` (a caller's struct of `struct_size` bytes; pass `sizeof *out`) with the default
/// settings (every change since the table was created, one fragment per split) and set
/// `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_changes_params_init_v2(out: *mut LanceChangesParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Plan the changes between a version and `dataset`'s pinned version as splits of kind
/// LANCE_SPLIT_CHANGES, read on any process with `lance_split_scan_v2` (on the pinned version,
/// e.g. opened from its snapshot token) like scan splits. Inserted and updated rows: one split
/// per group of fragments, returning the requested columns (else all), then `_rowid` (stable
/// across versions), `_row_created_at_version`, `_row_last_updated_at_version` and
/// `_change_type` ("insert" or "update"); the scan's SQL filter, limit, offset and order apply
/// within the split. Deleted rows: one split without fragments, returning the same columns
/// with the values the rows had at the begin version and `_change_type` "delete"; it takes no
/// filter, limit, offset or order. The rows equal pylance's `delta` between the two versions
/// (also after compaction, which keeps row versions).
///
/// A table without stable row ids keeps no row versions: LANCE_ERR_NOT_SUPPORTED (pylance
/// answers it with no rows). A begin version after the pinned one, or both a version and a
/// time, is LANCE_ERR_INVALID_ARGUMENT; deleted rows since a cleaned-up version are
/// LANCE_ERR_NOT_FOUND. The same version plans no split. Splits of one plan combine with
/// `lance_splits_combine` (not the deleted rows' split); `lance_split_count_rows_v2` refuses
/// them (count by reading). Libraries before 0.14 refuse the split bytes (LANCE_ERR_CORRUPT).
///
/// Caller owns `*out`; free it with `lance_split_plan_free`. Borrows its arguments; `params`
/// may be NULL (the defaults). Thread-safe. Returns an error code; `*out` is not written on
/// failure. Since 0.14.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_changes(
    dataset: *const LanceDataset,
    params: *const LanceChangesParams,
    out: *mut *mut LanceSplitPlan,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let p = read_in(params, Layout::Sized, "params")?.unwrap_or_default();
        let out = out_arg(out, "out")?;
        let req = ChangesRequest {
            since_version: p.since_version,
            since_timestamp_ms: (p.since_timestamp_ms != 0).then_some(p.since_timestamp_ms),
            // bits past the known ones (also past 8) are refused by the planner, naming them
            types: u8::try_from(p.change_types).unwrap_or(u8::MAX),
            target_rows: p.target_rows,
        };
        *out = export_plan(changes::plan_changes(ds.table()?, &req)?);
        Ok(())
    })
}
