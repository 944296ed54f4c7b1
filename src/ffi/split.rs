//! C ABI of split planning and split transport.

use std::ffi::c_char;

use crate::error::{HostError, Result};
use crate::index::Metric;
use crate::split::{self, Split, SplitKind, SplitPlan};
use crate::snapshot;

pub use super::handles::{LanceSplit, LanceSplitPlan};
use super::handles::LanceDataset;
use super::{
    free_array, free_handle, guard_code, guard_free, guard_ptr, guard_value, handle_ref,
    into_array, into_handle, item_at, kv_arg, out_arg, owned_cstring, slice_arg, str_arg,
};

/// Distance metrics for vector planning and search.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceMetric {
    /// The chosen index's metric (or L2 when no index is used).
    LANCE_METRIC_DEFAULT = 0,
    LANCE_METRIC_L2 = 1,
    LANCE_METRIC_COSINE = 2,
    LANCE_METRIC_DOT = 3,
    LANCE_METRIC_HAMMING = 4,
}

/// Kinds of splits.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceSplitKind {
    /// Scan the split's fragments (`lance_split_scan_v2`).
    LANCE_SPLIT_SCAN = 1,
    /// Search one physical index segment over the fragments it covers (`lance_split_search_v2`).
    LANCE_SPLIT_INDEX_SEGMENT = 2,
    /// Brute-force search one fragment no segment covers (`lance_split_search_v2`).
    LANCE_SPLIT_FLAT = 3,
    /// Full-text search one physical segment of an INVERTED index over the fragments it covers
    /// (`lance_split_fts_search`).
    LANCE_SPLIT_FTS_SEGMENT = 4,
    /// Full-text search fragments no INVERTED segment covers by tokenizing them
    /// (`lance_split_fts_search`).
    LANCE_SPLIT_FTS_FLAT = 5,
    /// Read the rows changed since a version (`lance_dataset_plan_changes`,
    /// `lance_split_scan_v2`). Since 0.14.
    LANCE_SPLIT_CHANGES = 6,
}

/// Convert a C metric value (one of `LanceMetric`).
pub(crate) fn metric_arg(v: i32) -> Result<Option<Metric>> {
    Ok(match v {
        0 => None,
        1 => Some(Metric::L2),
        2 => Some(Metric::Cosine),
        3 => Some(Metric::Dot),
        4 => Some(Metric::Hamming),
        other => return Err(HostError::invalid(format!("metric {other} is not a LanceMetric value"))),
    })
}

pub(crate) fn export_plan(plan: SplitPlan) -> *mut LanceSplitPlan {
    let index_name = plan.index_name.as_deref().map(owned_cstring);
    let reason = owned_cstring(&plan.reason);
    into_handle(LanceSplitPlan {
        plan,
        index_name,
        reason,
    })
}

/// Plan scan splits: the snapshot's fragments grouped in order until a split holds at least
/// `target_rows` visible rows (0 = one fragment per split). Splits hold whole fragments; see
/// `lance_dataset_plan_scan_slices` for splits below a fragment.
///
/// Caller owns `*out`; free it with `lance_split_plan_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_scan(
    dataset: *const LanceDataset,
    target_rows: u64,
    out: *mut *mut LanceSplitPlan,
) -> i32 {
    plan_scan_ffi(dataset, target_rows, false, out)
}

/// `lance_dataset_plan_scan`, and a fragment of more than `target_rows` visible rows is cut
/// into **row slices** of about `target_rows` visible rows each, so a host gets as many splits as
/// it asks for even from a one-fragment table (0.11). A slice is physical rows of its one
/// fragment (`lance_split_row_slice`); `lance_split_row_count` is its exact visible count (the
/// planner reads the fragment's deletion vector, one read per cut fragment with deletions).
/// Scans and counts of a slice read only its rows. Slices cannot be combined, and a staged
/// delete takes whole-fragment splits (`lance_dataset_plan_scan`). A library before 0.11 refuses
/// the bytes of a slice (LANCE_ERR_CORRUPT) rather than scan its whole fragment.
/// `target_rows` 0 plans one split per fragment, as `lance_dataset_plan_scan` does.
///
/// Caller owns `*out`; free it with `lance_split_plan_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_scan_slices(
    dataset: *const LanceDataset,
    target_rows: u64,
    out: *mut *mut LanceSplitPlan,
) -> i32 {
    plan_scan_ffi(dataset, target_rows, true, out)
}

fn plan_scan_ffi(dataset: *const LanceDataset, target_rows: u64, slices: bool, out: *mut *mut LanceSplitPlan) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        *out = export_plan(split::plan_scan(ds.table()?, target_rows, slices)?);
        Ok(())
    })
}

/// Plan vector-search splits for `column`: one LANCE_SPLIT_INDEX_SEGMENT split per physical
/// segment of the chosen index (with the visible fragments it covers) plus LANCE_SPLIT_FLAT
/// splits over the visible fragments no segment covers — one per fragment when
/// `flat_target_rows` is 0, else consecutive uncovered fragments grouped until a split holds
/// at least `flat_target_rows` rows (fewer, larger brute-force pieces); every visible fragment
/// lies in exactly one split. `metric` is a `LanceMetric`: with a specific metric only an index of
/// that metric is chosen, otherwise the plan is all-flat and `lance_split_plan_reason` says
/// why. `use_index = false` plans all-flat.
///
/// Caller owns `*out`; free it with `lance_split_plan_free`. Borrows its arguments. Thread-safe.
/// Returns an error code (LANCE_ERR_INVALID_ARGUMENT for an unknown or non-vector column);
/// `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_vector_search(
    dataset: *const LanceDataset,
    column: *const c_char,
    metric: i32,
    use_index: bool,
    flat_target_rows: u64,
    out: *mut *mut LanceSplitPlan,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let column = str_arg(column, "column")?;
        let metric = metric_arg(metric)?;
        let out = out_arg(out, "out")?;
        *out = export_plan(split::plan_vector(
            ds.table()?,
            column,
            metric,
            use_index,
            flat_target_rows,
        )?);
        Ok(())
    })
}

/// Number of splits in `plan`.
///
/// Borrows `plan`. Thread-safe. Returns 0 and sets the last error if `plan` is NULL.
#[no_mangle]
pub extern "C" fn lance_split_plan_count(plan: *const LanceSplitPlan) -> usize {
    guard_value(0, || Ok(handle_ref(plan, "plan")?.plan.splits.len()))
}

/// A copy of split `index` of `plan`.
///
/// Caller owns the result; free it with `lance_split_free`. Thread-safe. Returns NULL and sets
/// the last error if `plan` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_split_plan_get(plan: *const LanceSplitPlan, index: usize) -> *mut LanceSplit {
    guard_ptr(|| {
        let split = item_at(&handle_ref(plan, "plan")?.plan.splits, index, "index")?;
        Ok(into_handle(LanceSplit::new(split.clone())))
    })
}

/// Name of the index a vector plan uses, or NULL when it uses none (see
/// `lance_split_plan_reason`).
///
/// The plan owns the string; valid until `lance_split_plan_free` is called. Thread-safe.
/// Also returns NULL, and sets the last error, if `plan` is NULL.
#[no_mangle]
pub extern "C" fn lance_split_plan_index_name(plan: *const LanceSplitPlan) -> *const c_char {
    guard_value(std::ptr::null(), || {
        Ok(handle_ref(plan, "plan")?
            .index_name
            .as_ref()
            .map(|s| s.as_ptr())
            .unwrap_or(std::ptr::null()))
    })
}

/// Why the plan uses (or does not use) an index, e.g. "no index on column 'v' uses metric
/// COSINE (available: idx=L2): every fragment is searched flat".
///
/// The plan owns the string; valid until `lance_split_plan_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `plan` is NULL.
#[no_mangle]
pub extern "C" fn lance_split_plan_reason(plan: *const LanceSplitPlan) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(handle_ref(plan, "plan")?.reason.as_ptr()))
}

/// Free a plan. NULL is ignored. Splits copied out of it stay valid. Call once, after the last
/// use of the plan and of strings obtained from it; not concurrently with other calls on it.
#[no_mangle]
pub extern "C" fn lance_split_plan_free(plan: *mut LanceSplitPlan) {
    guard_free(|| free_handle(plan))
}

/// Kind of a split (a `LanceSplitKind` value); 0 and the last error set if `split` is NULL.
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn lance_split_kind(split: *const LanceSplit) -> i32 {
    guard_value(0, || {
        Ok(match handle_ref(split, "split")?.split.kind {
            SplitKind::Scan => LanceSplitKind::LANCE_SPLIT_SCAN as i32,
            SplitKind::IndexSegment => LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32,
            SplitKind::Flat => LanceSplitKind::LANCE_SPLIT_FLAT as i32,
            SplitKind::TextSegment => LanceSplitKind::LANCE_SPLIT_FTS_SEGMENT as i32,
            SplitKind::TextFlat => LanceSplitKind::LANCE_SPLIT_FTS_FLAT as i32,
            SplitKind::Changes => LanceSplitKind::LANCE_SPLIT_CHANGES as i32,
        })
    })
}

/// Pinned table version of a split; 0 and the last error set if `split` is NULL.
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn lance_split_version(split: *const LanceSplit) -> u64 {
    guard_value(0, || Ok(handle_ref(split, "split")?.split.version))
}

/// Table URI of a split.
///
/// The split owns the string; valid until `lance_split_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `split` is NULL.
#[no_mangle]
pub extern "C" fn lance_split_uri(split: *const LanceSplit) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(handle_ref(split, "split")?.uri.as_ptr()))
}

/// Visible rows the split covers (exact for a scan split, its row slice's included; a
/// scheduling weight for search splits); 0 and the last error set if `split` is NULL.
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn lance_split_row_count(split: *const LanceSplit) -> u64 {
    guard_value(0, || Ok(handle_ref(split, "split")?.split.row_count))
}

/// The row slice of a scan split that covers part of one fragment (planned by
/// `lance_dataset_plan_scan_slices` with a `target_rows` below the fragment's rows): physical rows
/// `*out_offset .. *out_offset + *out_count` of its single fragment (deleted rows inside keep
/// their slots; `lance_split_row_count` is the visible rows). Returns 1 and fills both for such a
/// split, 0 (both set to 0) for a split of whole fragments, -1 with the last error set when an
/// argument is NULL.
///
/// Thread-safe; writes only through the given pointers.
#[no_mangle]
pub extern "C" fn lance_split_row_slice(split: *const LanceSplit, out_offset: *mut u64, out_count: *mut u64) -> i32 {
    guard_value(-1, || {
        let s = handle_ref(split, "split")?;
        let offset = out_arg(out_offset, "out_offset")?;
        let count = out_arg(out_count, "out_count")?;
        let r = s.split.rows.unwrap_or(crate::split::RowSlice { offset: 0, count: 0 });
        (*offset, *count) = (r.offset, r.count);
        Ok(i32::from(s.split.rows.is_some()))
    })
}

/// Fragment ids of a split: returns a pointer to `*out_len` ids (NULL when there are none).
///
/// The split owns the array; valid until `lance_split_free` is called. Thread-safe.
/// Returns NULL and sets the last error if an argument is NULL.
#[no_mangle]
pub extern "C" fn lance_split_fragment_ids(split: *const LanceSplit, out_len: *mut usize) -> *const u64 {
    guard_value(std::ptr::null(), || {
        let s = handle_ref(split, "split")?;
        let out_len = out_arg(out_len, "out_len")?;
        *out_len = s.split.fragment_ids.len();
        Ok(if s.split.fragment_ids.is_empty() {
            std::ptr::null()
        } else {
            s.split.fragment_ids.as_ptr()
        })
    })
}

/// Copy the 16-byte UUID of an index segment split into `out` (16 writable bytes).
///
/// Thread-safe. Returns LANCE_ERR_NOT_FOUND for splits of other kinds and
/// LANCE_ERR_INVALID_ARGUMENT for a split of several segments (from `lance_splits_combine`;
/// use `lance_split_segment_uuids`); `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_segment_uuid(split: *const LanceSplit, out: *mut u8) -> i32 {
    guard_code(|| {
        let s = handle_ref(split, "split")?;
        let out = out_arg(out as *mut [u8; 16], "out")?;
        let uuid = match s.split.segments.as_slice() {
            [] => return Err(HostError::not_found("the split is not an index segment split")),
            [one] => one,
            several => {
                return Err(HostError::invalid(format!(
                    "the split searches {} index segments; read them with lance_split_segment_uuids",
                    several.len()
                )))
            }
        };
        *out = *uuid.as_bytes();
        Ok(())
    })
}

/// UUIDs of the index segments a split searches: returns a pointer to `*out_count` UUIDs of
/// 16 bytes each, back to back (`16 * *out_count` bytes), or NULL with `*out_count` 0 for a
/// split that searches no segment (scan and flat splits). A planned segment split has one; a
/// split from `lance_splits_combine` may have several. The bytes suit
/// `lance_dataset_prewarm_index_segments`.
///
/// The split owns the bytes; valid until `lance_split_free` is called. Thread-safe.
/// Returns NULL and sets the last error if an argument is NULL (then `*out_count` is not
/// written).
#[no_mangle]
pub extern "C" fn lance_split_segment_uuids(split: *const LanceSplit, out_count: *mut usize) -> *const u8 {
    guard_value(std::ptr::null(), || {
        let s = handle_ref(split, "split")?;
        let out_count = out_arg(out_count, "out_count")?;
        *out_count = s.split.segments.len();
        Ok(if s.segment_bytes.is_empty() { std::ptr::null() } else { s.segment_bytes.as_ptr() })
    })
}

/// Combine `count` splits of one plan into one split that does their work in a single call,
/// for a worker that runs several splits of the same snapshot: the search or scan of the
/// combined split plans, opens and reads once instead of once per split. The splits must
/// have been planned on the same table and version, be of one kind, and (search splits) of
/// one column, index and metric; fragments and segments must not repeat (each split is
/// combined at most once). Kinds: scan splits (their fragments, in the given order), index
/// segment splits and full-text segment splits (their segments searched in one plan), flat
/// and full-text flat splits. An index segment split is never combined with a flat one (their
/// distances differ: search both and merge them).
///
/// What a combined split returns: scans, flat searches and full-text searches return what the
/// splits return between them after a merge (a search's k applies to the combined split). A
/// vector search of several segments merges the segments' candidates before the re-rank and
/// re-ranks `k × refine_factor × segments` of them (as many as the separate splits would);
/// with `defer_refine` it returns the best `k × refine_factor` candidates, the same rows that
/// merging the separate splits' candidates keeps. A combined split serializes like any other
/// (split format 2 when it holds several segments, which libraries before 0.9 do not read).
///
/// Caller owns `*out`; free it with `lance_split_free`. Borrows `splits` (an array of `count`
/// split pointers). Thread-safe. Returns LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for NULL
/// arguments, `count` 0 or splits that cannot be combined (the message names the first
/// offending split and what differs). `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_splits_combine(
    splits: *const *const LanceSplit,
    count: usize,
    out: *mut *mut LanceSplit,
) -> i32 {
    guard_code(|| {
        let ptrs = slice_arg(splits, count, "splits")?;
        let out = out_arg(out, "out")?;
        let parts = ptrs
            .iter()
            .enumerate()
            .map(|(i, p)| Ok(handle_ref(*p, &format!("split {i}"))?.split.clone()))
            .collect::<Result<Vec<Split>>>()?;
        *out = into_handle(LanceSplit::new(split::combine(&parts)?));
        Ok(())
    })
}

/// Serialize a split into compact, versioned, checksummed bytes (table URI, pinned version,
/// kind, fragments, segment UUID; never storage options or secrets) for shipping to a worker.
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Thread-safe.
/// Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_serialize(
    split: *const LanceSplit,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let s = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        (*out, *out_len) = into_array(s.split.to_bytes());
        Ok(())
    })
}

/// Export a split-scoped snapshot token for scan split `split` of `dataset`: the token of
/// `lance_dataset_export_snapshot` with the pinned manifest cut down to the split's fragments,
/// so its size and a worker's open time follow the split, not the table (a full token grows
/// with every fragment of the table). Open it with `lance_snapshot_open`, as a full token. The
/// handle it opens runs scan splits of those fragments — scans, counts and aggregates of a
/// split (`lance_split_scan_v2`, `lance_split_count_rows_v2`, `lance_dataset_aggregate_split`) — and
/// refuses every other call that reads the table (LANCE_ERR_INVALID_ARGUMENT naming its
/// fragments), since it sees only part of the table; its version, URI and schema are the
/// table's. Token format 4 since 0.15: a worker of an earlier library refuses it
/// (LANCE_ERR_NOT_SUPPORTED). Never carries storage options or secrets.
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its arguments.
/// Thread-safe. Returns LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for NULL arguments or a split of
/// another table or version (or outside the reach of a split-scoped `dataset`);
/// LANCE_ERR_NOT_SUPPORTED for a split that is not a scan split (search, full-text and change
/// splits need the full token). Outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_export_split_snapshot(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let s = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        let token = split::scope::export_split_token(ds.pinned(), ds.scope(), &s.split)?;
        (*out, *out_len) = into_array(token);
        Ok(())
    })
}

/// Free bytes returned by `lance_split_serialize`, `lance_dataset_export_snapshot`,
/// `lance_dataset_export_split_snapshot`,
/// `lance_dataset_fts_stats` or `lance_blobs_read_alloc`, passing
/// the length it returned. NULL is ignored. Call once per buffer, not concurrently with other
/// use of it.
#[no_mangle]
pub extern "C" fn lance_bytes_free(bytes: *mut u8, len: usize) {
    guard_free(|| free_array(bytes, len))
}

/// Rebuild a split from bytes made by `lance_split_serialize`.
///
/// Caller owns the result; free it with `lance_split_free`. Borrows `bytes`. Thread-safe.
/// Returns NULL and sets the last error on failure: LANCE_ERR_CORRUPT for truncated or
/// corrupted bytes, LANCE_ERR_NOT_SUPPORTED for another format version.
#[no_mangle]
pub extern "C" fn lance_split_deserialize(bytes: *const u8, len: usize) -> *mut LanceSplit {
    guard_ptr(|| {
        let b = slice_arg(bytes, len, "bytes")?;
        Ok(into_handle(LanceSplit::new(Split::from_bytes(b)?)))
    })
}

/// Open the split's table at exactly the split's pinned version, through the process-wide
/// session. `storage_options` (NULL-terminated key/value array or NULL) are the worker's own
/// credentials; splits never carry them.
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments.
/// Thread-safe. Returns NULL and sets the last error on failure.
#[no_mangle]
pub extern "C" fn lance_split_open_dataset(
    split: *const LanceSplit,
    storage_options: *const *const c_char,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let s = handle_ref(split, "split")?;
        let options = kv_arg(storage_options, "storage_options")?;
        let snap = snapshot::open(&s.split.uri, options, s.split.version)?;
        Ok(into_handle(LanceDataset::new(snap)))
    })
}

/// Free a split. NULL is ignored. Call once, after the last use of the split and of pointers
/// obtained from it; not concurrently with other calls on it. Datasets opened from it and
/// streams of its searches stay valid.
#[no_mangle]
pub extern "C" fn lance_split_free(split: *mut LanceSplit) {
    guard_free(|| free_handle(split))
}

/// Write the number of rows of the split's fragments that match `filter_sql` (NULL = every
/// row) to `out`, on `dataset`, which must be the split's table at the split's version. Exact,
/// deletions accounted; as `lance_dataset_count_rows_where_v2` (no data read without a filter).
/// The counts of all scan splits of a plan add up to the dataset's count. If `io` is not NULL
/// it receives the I/O the count caused.
///
/// Borrows its arguments. Thread-safe. Returns LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for NULL
/// arguments, a split of another table or version, invalid UTF-8 or an invalid filter; or the
/// I/O error. Outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_count_rows_v2(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    filter_sql: *const c_char,
    out: *mut u64,
    io: *mut super::handles::LanceIoStats,
) -> i32 {
    split_count_rows(dataset, split, filter_sql, out, io, super::sized::Layout::Sized)
}

pub(crate) fn split_count_rows(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    filter_sql: *const c_char,
    out: *mut u64,
    io: *mut super::handles::LanceIoStats,
    layout: super::sized::Layout,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let s = handle_ref(split, "split")?;
        let filter = super::opt_str_arg(filter_sql, "filter_sql")?;
        let out = out_arg(out, "out")?;
        let io = super::sized::out_slot(io, layout, "io")?;
        let (n, stats) = crate::count::count_split(ds.split_table(&s.split)?, &s.split, filter)?;
        *out = n;
        if let Some(io) = io {
            io.write(&stats.into());
        }
        Ok(())
    })
}
