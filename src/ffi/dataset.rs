//! C ABI of pinned snapshots (dataset handles).

use std::ffi::{c_char, CString};

use arrow::ffi::FFI_ArrowSchema;

use crate::error::HostError;
use crate::snapshot::{self, FragmentInfo, VersionInfo};

pub use super::handles::LanceDataset;
use super::handles::LanceIoStats;
use super::sized::{out_slot, required_out, Extensible, Layout};
use super::{
    free_array, free_handle, guard_code, guard_free, guard_ptr, guard_value, handle_ref,
    into_array, into_handle, item_at, kv_arg, opt_str_arg, out_arg, owned_cstring, str_arg,
};

/// One fragment of a snapshot.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceFragmentInfo {
    pub id: u64,
    /// Visible rows: physical rows minus deleted rows.
    pub logical_rows: u64,
    pub physical_rows: u64,
    pub deleted_rows: u64,
    pub data_file_count: u32,
}

/// One committed version of a table.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceVersionInfo {
    pub version: u64,
    /// Commit time in milliseconds since the Unix epoch (UTC).
    pub timestamp_ms: i64,
}

impl From<FragmentInfo> for LanceFragmentInfo {
    fn from(f: FragmentInfo) -> Self {
        Self {
            id: f.id,
            logical_rows: f.logical_rows,
            physical_rows: f.physical_rows,
            deleted_rows: f.deleted_rows,
            data_file_count: f.data_file_count,
        }
    }
}

impl From<VersionInfo> for LanceVersionInfo {
    fn from(v: VersionInfo) -> Self {
        Self {
            version: v.version,
            timestamp_ms: v.timestamp_ms,
        }
    }
}

/// Open the table at `uri` pinned to `version` (0 = the latest version at open time; the
/// handle never moves afterwards). `storage_options` is NULL or a NULL-terminated array of
/// alternating keys and values (`{"aws_region", "us-east-1", NULL}`).
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows `uri` and
/// `storage_options` for the duration of the call. Thread-safe; the handle may be used by many
/// threads at once. Returns NULL and sets the last error on failure (LANCE_ERR_NOT_FOUND for a
/// missing table or version).
#[no_mangle]
pub extern "C" fn lance_dataset_open(
    uri: *const c_char,
    storage_options: *const *const c_char,
    version: u64,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let uri = str_arg(uri, "uri")?;
        let options = kv_arg(storage_options, "storage_options")?;
        let snapshot = snapshot::open(uri, options, version)?;
        Ok(into_handle(LanceDataset::new(snapshot)))
    })
}

/// Open the table at `uri` pinned to the latest version committed at or before `timestamp_ms`
/// (milliseconds since the Unix epoch, UTC), that is at or before `timestamp_ms`.000: a
/// version committed within that millisecond is after it (since 0.15; before, such a version
/// was chosen).
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns NULL and sets the last error on failure
/// (LANCE_ERR_NOT_FOUND when no version is that old).
#[no_mangle]
pub extern "C" fn lance_dataset_open_at_timestamp(
    uri: *const c_char,
    storage_options: *const *const c_char,
    timestamp_ms: i64,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let uri = str_arg(uri, "uri")?;
        let options = kv_arg(storage_options, "storage_options")?;
        let snapshot = snapshot::open_at_timestamp(uri, options, timestamp_ms)?;
        Ok(into_handle(LanceDataset::new(snapshot)))
    })
}

/// Open the table at `uri` pinned to the latest version committed at or before `timestamp_us`
/// (microseconds since the Unix epoch, UTC): `TIMESTAMP AS OF` of engines whose timestamps
/// carry microseconds (Spark, Trino, Doris' DATETIME(6)). Commit times are compared at the
/// microsecond, so a version committed within the requested millisecond but after the
/// requested microsecond is not chosen.
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments for the
/// duration of the call. Thread-safe. Returns NULL and sets the last error on failure
/// (LANCE_ERR_NOT_FOUND when no version is that old). Since 0.15.
#[no_mangle]
pub extern "C" fn lance_dataset_open_at_timestamp_us(
    uri: *const c_char,
    storage_options: *const *const c_char,
    timestamp_us: i64,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let uri = str_arg(uri, "uri")?;
        let options = kv_arg(storage_options, "storage_options")?;
        let snapshot = snapshot::open_at_timestamp_us(uri, options, timestamp_us)?;
        Ok(into_handle(LanceDataset::new(snapshot)))
    })
}

/// Free a dataset handle. NULL is ignored. Streams created from the handle stay valid.
///
/// Not thread-safe with respect to other calls on the same handle: free it once, after every
/// other call on it has returned.
#[no_mangle]
pub extern "C" fn lance_dataset_free(dataset: *mut LanceDataset) {
    guard_free(|| free_handle(dataset))
}

/// The pinned version of the handle (versions start at 1).
///
/// Borrows `dataset`. Thread-safe. Returns 0 and sets the last error if `dataset` is NULL.
#[no_mangle]
pub extern "C" fn lance_dataset_version(dataset: *const LanceDataset) -> u64 {
    guard_value(0, || Ok(handle_ref(dataset, "dataset")?.pinned().version()))
}

/// The table URI of the handle.
///
/// The handle owns the string; valid until `lance_dataset_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `dataset` is NULL.
#[no_mangle]
pub extern "C" fn lance_dataset_uri(dataset: *const LanceDataset) -> *const c_char {
    guard_value(std::ptr::null(), || {
        Ok(handle_ref(dataset, "dataset")?.uri.as_ptr())
    })
}

/// The storage format version of the snapshot's data files, e.g. "2.1".
///
/// The handle owns the string; valid until `lance_dataset_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `dataset` is NULL.
#[no_mangle]
pub extern "C" fn lance_dataset_storage_format(dataset: *const LanceDataset) -> *const c_char {
    guard_value(std::ptr::null(), || {
        Ok(handle_ref(dataset, "dataset")?.storage_format.as_ptr())
    })
}

/// Write the number of visible rows of the snapshot to `out`.
///
/// Borrows `dataset`. Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_count_rows(dataset: *const LanceDataset, out: *mut u64) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        *out = ds.table()?.count_rows()?;
        Ok(())
    })
}

/// Export the snapshot's Arrow schema into `out` (Arrow C Data Interface).
///
/// Caller owns the result; release it with `out->release(out)`. Borrows `dataset`.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_schema(
    dataset: *const LanceDataset,
    out: *mut FFI_ArrowSchema,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let schema = ds.pinned().arrow_schema();
        let ffi = FFI_ArrowSchema::try_from(&schema)
            .map_err(|e| HostError::internal(format!("cannot export schema: {e}")))?;
        // SAFETY: `out` is valid for writes; the previous content is not a live schema
        // (caller contract), so it must not be dropped.
        unsafe { std::ptr::write(out, ffi) };
        Ok(())
    })
}

/// List the fragments of the snapshot: `*out` receives an array of `*out_len` entries.
///
/// Caller owns the array; free it with `lance_fragment_info_list_free(*out, *out_len)`.
/// Borrows `dataset`. Thread-safe. Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_fragments(
    dataset: *const LanceDataset,
    out: *mut *mut LanceFragmentInfo,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        let items: Vec<LanceFragmentInfo> = ds
            .table()?
            .fragments()?
            .into_iter()
            .map(Into::into)
            .collect();
        (*out, *out_len) = into_array(items);
        Ok(())
    })
}

/// Free an array returned by `lance_dataset_fragments`, passing the length it returned. NULL is
/// ignored. Call once per array, not concurrently with other use of it.
#[no_mangle]
pub extern "C" fn lance_fragment_info_list_free(list: *mut LanceFragmentInfo, len: usize) {
    guard_free(|| free_array(list, len))
}

/// Write the table's latest committed version to `out` (reads storage; the handle stays
/// pinned to its own version).
///
/// Borrows `dataset`. Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_latest_version(dataset: *const LanceDataset, out: *mut u64) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        *out = ds.pinned().latest_version()?;
        Ok(())
    })
}

/// List the table's version history, oldest first: `*out` receives `*out_len` entries.
///
/// Caller owns the array; free it with `lance_version_info_list_free(*out, *out_len)`.
/// Borrows `dataset`. Thread-safe. Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_versions(
    dataset: *const LanceDataset,
    out: *mut *mut LanceVersionInfo,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        let mut items: Vec<LanceVersionInfo> = ds
            .table()?
            .versions()?
            .into_iter()
            .map(Into::into)
            .collect();
        items.sort_by_key(|v| v.version);
        (*out, *out_len) = into_array(items);
        Ok(())
    })
}

/// Free an array returned by `lance_dataset_versions`, passing the length it returned. NULL is
/// ignored. Call once per array, not concurrently with other use of it.
#[no_mangle]
pub extern "C" fn lance_version_info_list_free(list: *mut LanceVersionInfo, len: usize) {
    guard_free(|| free_array(list, len))
}

/// Write the number of rows of the snapshot that match `filter_sql` (a SQL predicate; NULL =
/// every row) to `out`. Exact. Without a filter the count comes from the manifest and reads no
/// data file; with one, only the filter's columns are read, through a scalar index (BTREE,
/// BITMAP) where the predicate allows it. If `io` is not NULL it receives the I/O the count
/// caused (`LanceIoStats`, object stores only).
///
/// Borrows its arguments. Thread-safe. Returns LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for a NULL
/// dataset or `out`, invalid UTF-8, an empty or invalid filter or an unknown column; or the
/// I/O error. Outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_count_rows_where_v2(
    dataset: *const LanceDataset,
    filter_sql: *const c_char,
    out: *mut u64,
    io: *mut LanceIoStats,
) -> i32 {
    dataset_count_rows_where(dataset, filter_sql, out, io, Layout::Sized)
}

pub(crate) fn dataset_count_rows_where(
    dataset: *const LanceDataset,
    filter_sql: *const c_char,
    out: *mut u64,
    io: *mut LanceIoStats,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let filter = opt_str_arg(filter_sql, "filter_sql")?;
        let out = out_arg(out, "out")?;
        let io = out_slot(io, layout, "io")?;
        let (n, stats) = crate::count::count_rows(ds.table()?, None, filter)?;
        *out = n;
        if let Some(io) = io {
            io.write(&stats.into());
        }
        Ok(())
    })
}

/// Planner statistics of a snapshot. Opaque; read with the `lance_table_stats_*` functions,
/// free with `lance_table_stats_free`.
pub struct LanceTableStats {
    fragments: Vec<LanceFragmentStats>,
    columns: Vec<(CString, Option<u64>)>,
}

/// Statistics of one fragment. Every figure is exact; `has_bytes_on_disk` is false when the
/// manifest does not record a data file's size (then `bytes_on_disk` is 0 and means nothing).
/// Set `struct_size = sizeof(LanceFragmentStats)` before `lance_table_stats_fragment_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceFragmentStats {
    /// `sizeof(LanceFragmentStats)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    pub fragment_id: u64,
    /// Rows written to the fragment's data files.
    pub physical_rows: u64,
    /// Of those, rows deleted at the snapshot's version.
    pub deleted_rows: u64,
    /// Sum of the fragment's data file sizes in bytes.
    pub bytes_on_disk: u64,
    pub has_bytes_on_disk: bool,
}

/// Statistics of one top-level column; `name` is owned by the statistics object. Set
/// `struct_size = sizeof(LanceColumnStats)` before `lance_table_stats_column_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceColumnStats {
    /// `sizeof(LanceColumnStats)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    pub name: *const c_char,
    /// Bytes of the column (nested fields included) in the data files, as encoded.
    pub bytes_on_disk: u64,
    /// False for tables in the legacy (v1) file format, which do not record column sizes.
    pub has_bytes_on_disk: bool,
}

impl Default for LanceFragmentStats {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            fragment_id: 0,
            physical_rows: 0,
            deleted_rows: 0,
            bytes_on_disk: 0,
            has_bytes_on_disk: false,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, u64 and bool fields; 0.1 layout 40 bytes.
unsafe impl Extensible for LanceFragmentStats {
    const NAME: &'static str = "LanceFragmentStats";
    const MIN_SIZE: usize = 48;
    const V0_SIZE: usize = 40;
    fn initial() -> Self {
        Self::default()
    }
}

impl Default for LanceColumnStats {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            name: std::ptr::null(),
            bytes_on_disk: 0,
            has_bytes_on_disk: false,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, pointer/u64/bool fields; 0.1 layout 24
// bytes.
unsafe impl Extensible for LanceColumnStats {
    const NAME: &'static str = "LanceColumnStats";
    const MIN_SIZE: usize = 32;
    const V0_SIZE: usize = 24;
    fn initial() -> Self {
        Self::default()
    }
}

/// Collect planner statistics of the snapshot: per fragment its physical and deleted rows and
/// bytes on disk (from the manifest, no data read), per column its bytes on disk (from the
/// data files' metadata: one footer read per data file, no data pages). Lance keeps no null
/// counts or exact minimum/maximum per column, so none are reported. If `io` is not NULL it
/// receives the I/O the call caused.
///
/// Caller owns `*out`; free it with `lance_table_stats_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_statistics_v2(
    dataset: *const LanceDataset,
    out: *mut *mut LanceTableStats,
    io: *mut LanceIoStats,
) -> i32 {
    dataset_statistics(dataset, out, io, Layout::Sized)
}

pub(crate) fn dataset_statistics(
    dataset: *const LanceDataset,
    out: *mut *mut LanceTableStats,
    io: *mut LanceIoStats,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let io = out_slot(io, layout, "io")?;
        let (st, io_stats) = crate::table_statistics::statistics(ds.table()?)?;
        let fragments = st
            .fragments
            .iter()
            .map(|f| LanceFragmentStats {
                struct_size: std::mem::size_of::<LanceFragmentStats>(),
                fragment_id: f.id,
                physical_rows: f.physical_rows,
                deleted_rows: f.deleted_rows,
                bytes_on_disk: f.bytes_on_disk.unwrap_or(0),
                has_bytes_on_disk: f.bytes_on_disk.is_some(),
            })
            .collect();
        let columns = st.columns.iter().map(|c| (owned_cstring(&c.name), c.bytes_on_disk)).collect();
        if let Some(io) = io {
            io.write(&io_stats.into());
        }
        *out = into_handle(LanceTableStats { fragments, columns });
        Ok(())
    })
}

/// Number of fragments in `stats` (0 for NULL). Thread-safe.
#[no_mangle]
pub extern "C" fn lance_table_stats_fragment_count(stats: *const LanceTableStats) -> usize {
    guard_value(0, || Ok(handle_ref(stats, "stats")?.fragments.len()))
}

/// Copy the statistics of fragment `index` (in the snapshot's fragment order) into `out`
/// (`out->struct_size` set by the caller). Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT for
/// NULL arguments, a too-small `struct_size` or an index out of range; `out` is not written on
/// failure.
#[no_mangle]
pub extern "C" fn lance_table_stats_fragment_v2(
    stats: *const LanceTableStats,
    index: usize,
    out: *mut LanceFragmentStats,
) -> i32 {
    table_stats_fragment(stats, index, out, Layout::Sized)
}

pub(crate) fn table_stats_fragment(
    stats: *const LanceTableStats,
    index: usize,
    out: *mut LanceFragmentStats,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let st = handle_ref(stats, "stats")?;
        let out = required_out(out, layout, "out")?;
        out.write(item_at(&st.fragments, index, "fragment")?);
        Ok(())
    })
}

/// Number of top-level columns in `stats` (0 for NULL). Thread-safe.
#[no_mangle]
pub extern "C" fn lance_table_stats_column_count(stats: *const LanceTableStats) -> usize {
    guard_value(0, || Ok(handle_ref(stats, "stats")?.columns.len()))
}

/// Copy the statistics of column `index` (schema order) into `out` (`out->struct_size` set by
/// the caller); `out->name` stays valid until `stats` is freed. Thread-safe. Returns
/// LANCE_ERR_INVALID_ARGUMENT for NULL arguments, a too-small `struct_size` or an index out of
/// range; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_table_stats_column_v2(
    stats: *const LanceTableStats,
    index: usize,
    out: *mut LanceColumnStats,
) -> i32 {
    table_stats_column(stats, index, out, Layout::Sized)
}

pub(crate) fn table_stats_column(
    stats: *const LanceTableStats,
    index: usize,
    out: *mut LanceColumnStats,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let st = handle_ref(stats, "stats")?;
        let out = required_out(out, layout, "out")?;
        let (name, bytes) = item_at(&st.columns, index, "column")?;
        out.write(&LanceColumnStats {
            struct_size: std::mem::size_of::<LanceColumnStats>(),
            name: name.as_ptr(),
            bytes_on_disk: bytes.unwrap_or(0),
            has_bytes_on_disk: bytes.is_some(),
        });
        Ok(())
    })
}

/// Free statistics from `lance_dataset_statistics_v2`. NULL is ignored. Call once, after the last
/// use of the statistics and of the names obtained from them; not concurrently with other
/// calls on them.
#[no_mangle]
pub extern "C" fn lance_table_stats_free(stats: *mut LanceTableStats) {
    guard_free(|| free_handle(stats))
}

/// Free a string this library returned as caller-owned (`char**` outputs such as the explain
/// functions'). NULL is ignored. Call once per string, not concurrently with other use of it.
#[no_mangle]
pub extern "C" fn lance_string_free(s: *mut c_char) {
    guard_free(|| {
        if !s.is_null() {
            // SAFETY: created by CString::into_raw in this library, freed once here.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}

/// Export the handle's pinned snapshot as a token for workers: compact, versioned, checksummed
/// bytes holding the table URI, the pinned version, the pinned manifest, its index metadata and
/// where the manifest lives — never storage options or secrets. A worker opens it with
/// `lance_snapshot_open` instead of reading the manifest from storage: on object stores that
/// saves every request a worker open makes for the manifest, and those of its first vector
/// plan. Token format 3 since 0.9.1 (a 0.9.0 library refuses it: upgrade workers first).
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows `dataset`.
/// Thread-safe. Returns an error code; outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_export_snapshot(
    dataset: *const LanceDataset,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        (*out, *out_len) = into_array(ds.table()?.export_token()?);
        Ok(())
    })
}

/// Open the table of a snapshot token (from `lance_dataset_export_snapshot`) at its pinned
/// version, from the shipped manifest, through the process-wide session. `storage_options`
/// (NULL-terminated key/value array or NULL) are the worker's own credentials. Splits of the
/// coordinator's plan run on the returned handle as on one opened by `lance_split_open_dataset`.
/// A split-scoped token (`lance_dataset_export_split_snapshot`) opens a handle that runs scan
/// splits of the fragments it carries and refuses whole-table calls (LANCE_ERR_INVALID_ARGUMENT).
///
/// Caller owns the result; free it with `lance_dataset_free`. Borrows its arguments.
/// Thread-safe. Returns NULL and sets the last error on failure: LANCE_ERR_CORRUPT for
/// truncated, tampered or foreign bytes, LANCE_ERR_NOT_SUPPORTED for another token format.
#[no_mangle]
pub extern "C" fn lance_snapshot_open(
    bytes: *const u8,
    len: usize,
    storage_options: *const *const c_char,
) -> *mut LanceDataset {
    guard_ptr(|| {
        let b = super::slice_arg(bytes, len, "bytes")?;
        if b.is_empty() {
            return Err(HostError::invalid("bytes is empty"));
        }
        let options = kv_arg(storage_options, "storage_options")?;
        let (snapshot, fragments) = snapshot::open_token(b, options)?;
        Ok(into_handle(LanceDataset::with_scope(snapshot, crate::split::scope::Scope::of_token(fragments))))
    })
}
