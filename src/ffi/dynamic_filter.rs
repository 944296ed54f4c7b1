//! C ABI of dynamic filters (`crate::dynamic_filter`): create one for a table and columns,
//! replace its predicate while scans run, free it.

use std::os::raw::c_char;

use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};

use super::handles::LanceDataset;
use super::{guard_code, guard_free, handle_ref, opt_str_arg, out_arg, str_arg, str_list_arg};
use crate::dynamic_filter::DynamicFilter;
use crate::error::HostError;

/// A predicate a host tightens while its scans run (a join's growing build side, a top-n's
/// rising threshold). Opaque; create with `lance_dynamic_filter_new`, pass it to scans in
/// `LanceScanOptions.dynamic_filter`, update it with `lance_dynamic_filter_set_sql` or
/// `lance_dynamic_filter_set_keys`, free it with `lance_dynamic_filter_free`.
pub struct LanceDynamicFilter {
    pub(crate) filter: DynamicFilter,
}

/// Create a dynamic filter for the table of `dataset` over its top-level columns
/// `columns[0..num_columns]` (the only columns its predicates may name). It lets every row pass
/// until its first update.
///
/// Caller owns `*out`; free it with `lance_dynamic_filter_free`. Borrows its arguments.
/// Thread-safe. Returns LANCE_OK or LANCE_ERR_INVALID_ARGUMENT (NULL arguments, no columns, an
/// unknown or repeated column); `*out` is untouched on error. Since 0.15.
#[no_mangle]
pub extern "C" fn lance_dynamic_filter_new(
    dataset: *const LanceDataset,
    columns: *const *const c_char,
    num_columns: usize,
    out: *mut *mut LanceDynamicFilter,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let columns = str_list_arg(columns, num_columns, "columns")?;
        let out = out_arg(out, "out")?;
        let filter = DynamicFilter::new(ds.table()?, &columns)?;
        *out = super::into_handle(LanceDynamicFilter { filter });
        Ok(())
    })
}

/// Replace the filter's predicate with the SQL condition `sql` over its columns (Lance's SQL,
/// as `filter_sql`: NaN, signed zeros and NULLs compare as in a static filter; a row whose
/// condition is NULL is dropped). NULL or blank text lets every row pass again. Every batch a
/// running scan returns after this call returned is filtered with it (or a newer update).
/// Meant to tighten: rows dropped from batches already returned are not revisited.
///
/// Borrows `sql`. Thread-safe: may run while other threads read the streams that use the
/// filter. Returns LANCE_OK, or LANCE_ERR_INVALID_ARGUMENT (NULL filter, SQL that does not
/// parse, names another column or is not a condition); a refused update leaves the predicate
/// as it was. Since 0.15.
#[no_mangle]
pub extern "C" fn lance_dynamic_filter_set_sql(filter: *const LanceDynamicFilter, sql: *const c_char) -> i32 {
    guard_code(|| {
        let f = handle_ref(filter, "filter")?;
        f.filter.set_sql(opt_str_arg(sql, "sql")?)
    })
}

/// Replace the filter's predicate with `column IN (values)`: `values` an Arrow C Data array
/// described by `schema` whose values cast exactly to the column's type (numbers, strings,
/// binary, booleans, dates, timestamps, decimals; at most 4,000,000; NULL keys match no row; an
/// empty array matches none). Takes effect as `lance_dynamic_filter_set_sql` does.
///
/// Ownership: the call MOVES the array (its `release` is NULL afterwards, success or failure)
/// unless `filter` or `values` is NULL; `schema` stays the caller's. Thread-safe as
/// `lance_dynamic_filter_set_sql`. Returns LANCE_OK, LANCE_ERR_INVALID_ARGUMENT (NULL
/// arguments, a column the filter was not made for, values that do not fit it, a malformed
/// array, too many keys) or LANCE_ERR_NOT_SUPPORTED (a column of a nested type); a refused
/// update leaves the predicate as it was. Since 0.15.
#[no_mangle]
pub extern "C" fn lance_dynamic_filter_set_keys(
    filter: *const LanceDynamicFilter,
    column: *const c_char,
    values: *mut FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
) -> i32 {
    guard_code(|| {
        let f = handle_ref(filter, "filter")?;
        if values.is_null() {
            return Err(HostError::invalid("values is NULL"));
        }
        // SAFETY: a non-NULL pointer to an FFI_ArrowArray the caller owns (the contract);
        // replacing it with an empty (released) one is Arrow's move.
        let moved = unsafe { std::ptr::replace(values, FFI_ArrowArray::empty()) };
        let column = str_arg(column, "column")?;
        let keys = super::scan::import_keys(column, moved, schema, "keys")?;
        f.filter.set_keys(&keys)
    })
}

/// How many updates the filter accepted so far (`*out`), for hosts that log or test when a
/// tightening happened. Thread-safe. Returns LANCE_OK or LANCE_ERR_INVALID_ARGUMENT (NULL
/// arguments). Since 0.15.
#[no_mangle]
pub extern "C" fn lance_dynamic_filter_generation(filter: *const LanceDynamicFilter, out: *mut u64) -> i32 {
    guard_code(|| {
        let f = handle_ref(filter, "filter")?;
        *out_arg(out, "out")? = f.filter.generation();
        Ok(())
    })
}

/// Free a dynamic filter. NULL is ignored. Scans that use it keep running with the predicate
/// they last saw. Call once; not concurrently with an update of the same handle.
#[no_mangle]
pub extern "C" fn lance_dynamic_filter_free(filter: *mut LanceDynamicFilter) {
    guard_free(|| super::free_handle(filter))
}
