//! C ABI of take-by-row-id.

use std::ffi::c_char;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::take;

use super::handles::LanceDataset;
use super::scan::export_stream;
use super::{guard_code, handle_ref, out_arg, slice_arg, str_list_arg};

/// Take rows by `_rowid` from the handle's snapshot into `out`: rows come in request order,
/// duplicates kept. `columns` (`num_columns` names, `_rowid` allowed; 0 = every column) is the
/// projection. An id that is missing or deleted in the snapshot is LANCE_ERR_NOT_FOUND naming
/// the id, with no partial result.
///
/// Caller owns the stream; release it with `out->release(out)`. Borrows its arguments.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_take_rows(
    dataset: *const LanceDataset,
    row_ids: *const u64,
    num_row_ids: usize,
    columns: *const *const c_char,
    num_columns: usize,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let ids = slice_arg(row_ids, num_row_ids, "row_ids")?;
        let cols = str_list_arg(columns, num_columns, "columns")?;
        let out = out_arg(out, "out")?;
        let reader = take::take_rows(ds.table()?, ids, &cols)?;
        export_stream(reader, out);
        Ok(())
    })
}
