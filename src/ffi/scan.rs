//! C ABI of scans.

use std::ffi::c_char;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::error::{HostError, Result};
use crate::scan::{self, BatchReader, ScanOptions};

use super::dataset::LanceDataset;
use super::{guard_code, handle_ref, opt_str_arg, out_arg, slice_arg, str_list_arg};

/// What a scan reads. Initialise with `lance_scan_options_init`, then set what you need.
/// Every pointer inside is borrowed for the duration of the call that receives the options.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceScanOptions {
    /// Columns to return, in order (`_rowid` and `_rowaddr` allowed); `num_columns == 0` means
    /// every column of the schema. An unknown column is LANCE_ERR_INVALID_ARGUMENT.
    pub columns: *const *const c_char,
    pub num_columns: usize,
    /// SQL boolean filter such as `"id > 10 AND name LIKE 'a%'"`; NULL = no filter.
    pub filter_sql: *const c_char,
    /// A serialized Substrait `ExtendedExpression` with one boolean expression; NULL/0 = none.
    /// Mutually exclusive with `filter_sql`.
    pub filter_substrait: *const u8,
    pub filter_substrait_len: usize,
    /// Maximum rows to return; negative = no limit.
    pub limit: i64,
    /// Rows to skip before returning any; must not be negative.
    pub offset: i64,
    /// Maximum rows per batch; 0 = the library's default.
    pub batch_size: u64,
    /// Append the `_rowid` column.
    pub with_row_id: bool,
    /// Append the `_rowaddr` column.
    pub with_row_addr: bool,
    /// Restrict the scan to these fragment ids, read in this order; `num_fragment_ids == 0`
    /// means every fragment. An id not in the snapshot is LANCE_ERR_NOT_FOUND.
    pub fragment_ids: *const u64,
    pub num_fragment_ids: usize,
    /// Return rows in fragment/row order (true, the default) or as soon as they are read.
    pub scan_in_order: bool,
    /// Batches to read ahead; 0 = default.
    pub batch_readahead: u32,
    /// Fragments to read ahead; 0 = default.
    pub fragment_readahead: u32,
}

impl Default for LanceScanOptions {
    fn default() -> Self {
        Self {
            columns: std::ptr::null(),
            num_columns: 0,
            filter_sql: std::ptr::null(),
            filter_substrait: std::ptr::null(),
            filter_substrait_len: 0,
            limit: -1,
            offset: 0,
            batch_size: 0,
            with_row_id: false,
            with_row_addr: false,
            fragment_ids: std::ptr::null(),
            num_fragment_ids: 0,
            scan_in_order: true,
            batch_readahead: 0,
            fragment_readahead: 0,
        }
    }
}

/// Convert C scan options (NULL = defaults) into the safe form.
pub(crate) fn scan_options_arg(p: *const LanceScanOptions) -> Result<ScanOptions> {
    let defaults = LanceScanOptions::default();
    let o = if p.is_null() {
        &defaults
    } else {
        // SAFETY: non-NULL options are valid for reads for the duration of the call.
        unsafe { &*p }
    };
    if o.offset < 0 {
        return Err(HostError::invalid(format!(
            "offset must not be negative (got {})",
            o.offset
        )));
    }
    let substrait = slice_arg(o.filter_substrait, o.filter_substrait_len, "filter_substrait")?;
    let fragment_ids = slice_arg(o.fragment_ids, o.num_fragment_ids, "fragment_ids")?;
    Ok(ScanOptions {
        columns: str_list_arg(o.columns, o.num_columns, "columns")?,
        filter_sql: opt_str_arg(o.filter_sql, "filter_sql")?.map(str::to_string),
        filter_substrait: (!substrait.is_empty()).then(|| substrait.to_vec()),
        limit: (o.limit >= 0).then_some(o.limit as u64),
        offset: (o.offset > 0).then_some(o.offset as u64),
        batch_size: (o.batch_size > 0).then_some(o.batch_size),
        with_row_id: o.with_row_id,
        with_row_addr: o.with_row_addr,
        fragment_ids: (!fragment_ids.is_empty()).then(|| fragment_ids.to_vec()),
        scan_in_order: o.scan_in_order,
        batch_readahead: (o.batch_readahead > 0).then_some(o.batch_readahead),
        fragment_readahead: (o.fragment_readahead > 0).then_some(o.fragment_readahead),
    })
}

/// Hand a reader to C as an `ArrowArrayStream` written into `out`.
pub(crate) fn export_stream(reader: BatchReader, out: &mut FFI_ArrowArrayStream) {
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    // SAFETY: `out` is valid for writes and holds no live stream (caller contract).
    unsafe { std::ptr::write(out, stream) };
}

/// Fill `out` with the default scan options: all columns, no filter, no limit, default batch
/// size, all fragments, in order.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL.
#[no_mangle]
pub extern "C" fn lance_scan_options_init(out: *mut LanceScanOptions) -> i32 {
    guard_code(|| {
        *out_arg(out, "out")? = LanceScanOptions::default();
        Ok(())
    })
}

/// Scan the pinned snapshot of `dataset` into `out` (Arrow C Stream Interface, zero-copy
/// batches). `options` may be NULL for defaults. Errors found while reading surface through
/// `out->get_next` returning non-zero and `out->get_last_error(out)`.
///
/// Caller owns the stream; release it with `out->release(out)` — releasing before the end
/// stops the remaining work. The stream may be consumed on any thread (one thread at a time)
/// and may outlive `dataset`. Borrows `dataset` and `options` for the duration of the call.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_scan(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let opts = scan_options_arg(options)?;
        let reader = scan::scan(&ds.snapshot, &opts)?;
        export_stream(reader, out);
        Ok(())
    })
}

/// Execute a scan split (from `lance_dataset_plan_scan`, possibly rebuilt with
/// `lance_split_deserialize`) on `dataset`, which must be the split's table at the split's
/// version. `options` apply as for `lance_dataset_scan`, except that `fragment_ids` must be
/// empty (the split chooses the fragments).
///
/// Caller owns the stream; release it with `out->release(out)`. Borrows its arguments.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_scan(
    dataset: *const LanceDataset,
    split: *const super::plan::LanceSplit,
    options: *const LanceScanOptions,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let opts = scan_options_arg(options)?;
        let reader = crate::search::scan_split(&ds.snapshot, &split.split, &opts)?;
        export_stream(reader, out);
        Ok(())
    })
}
