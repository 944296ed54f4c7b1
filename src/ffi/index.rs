//! C ABI of index metadata and prewarm.

use std::ffi::{c_char, CString};

use crate::index::{self, IndexInfo};
use crate::prewarm;

use super::handles::LanceDataset;
use super::handles::LanceIoStats;
use super::sized::{out_slot, required_out, Extensible, Layout};
use super::{
    free_handle, guard_code, guard_free, guard_value, handle_ref, into_handle, item_at, out_arg,
    owned_cstring, slice_arg, str_arg,
};
use crate::error::HostError;

/// The logical indexes of a snapshot. Opaque; read with the `lance_index_list_*` functions,
/// free with `lance_index_list_free`.
pub struct LanceIndexList {
    items: Vec<IndexEntry>,
}

struct IndexEntry {
    name: CString,
    column: CString,
    index_type: CString,
    metric: CString,
    segments: Vec<SegmentEntry>,
}

struct SegmentEntry {
    uuid: [u8; 16],
    fragment_ids: Vec<u64>,
    indexed_rows: u64,
    num_partitions: u64,
}

/// One physical segment of an index; pointers inside are owned by the index list. Set
/// `struct_size = sizeof(LanceIndexSegmentInfo)` before `lance_index_list_segment_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceIndexSegmentInfo {
    /// `sizeof(LanceIndexSegmentInfo)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    /// The segment's UUID (16 bytes, RFC 4122 byte order).
    pub uuid: [u8; 16],
    /// Fragment ids the segment covers that are visible in the snapshot, ascending.
    pub fragment_ids: *const u64,
    pub num_fragment_ids: usize,
    /// Physical rows of those fragments.
    pub indexed_rows: u64,
    /// IVF partitions of a vector index segment (since 0.6): what `nprobes` counts, so
    /// `nprobes = num_partitions` probes the whole segment. 0 for other indexes.
    pub num_partitions: u64,
}

impl Default for LanceIndexSegmentInfo {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            uuid: [0; 16],
            fragment_ids: std::ptr::null(),
            num_fragment_ids: 0,
            indexed_rows: 0,
            num_partitions: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, byte array/pointer/integer fields; 0.1
// layout 40 bytes.
unsafe impl Extensible for LanceIndexSegmentInfo {
    const NAME: &'static str = "LanceIndexSegmentInfo";
    const MIN_SIZE: usize = 48;
    const V0_SIZE: usize = 40;
    fn initial() -> Self {
        Self::default()
    }
}

impl From<IndexInfo> for IndexEntry {
    fn from(i: IndexInfo) -> Self {
        IndexEntry {
            name: owned_cstring(&i.name),
            column: owned_cstring(&i.column),
            index_type: owned_cstring(&i.index_type),
            metric: owned_cstring(i.metric.map(|m| m.name()).unwrap_or("")),
            segments: i
                .segments
                .into_iter()
                .map(|s| SegmentEntry {
                    uuid: *s.uuid.as_bytes(),
                    fragment_ids: s.fragment_ids,
                    indexed_rows: s.indexed_rows,
                    num_partitions: s.num_partitions.unwrap_or(0),
                })
                .collect(),
        }
    }
}

fn entry<'a>(list: *const LanceIndexList, index: usize) -> crate::error::Result<&'a IndexEntry> {
    let l: &'a LanceIndexList = handle_ref(list, "list")?;
    item_at(&l.items, index, "index")
}

/// List the logical indexes of the snapshot, sorted by name.
///
/// Each vector index segment is opened to report its IVF partition count (the first listing
/// reads the segment's IVF model; the process-wide index cache serves later listings and
/// searches). No query runs.
///
/// Caller owns `*out`; free it with `lance_index_list_free`. Borrows `dataset`. Thread-safe.
/// Returns an error code; `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_indexes(
    dataset: *const LanceDataset,
    out: *mut *mut LanceIndexList,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let items = index::describe_indexes(ds.table()?)?
            .into_iter()
            .map(Into::into)
            .collect();
        *out = into_handle(LanceIndexList { items });
        Ok(())
    })
}

/// Number of indexes in `list`.
///
/// Borrows `list`. Thread-safe. Returns 0 and sets the last error if `list` is NULL.
#[no_mangle]
pub extern "C" fn lance_index_list_count(list: *const LanceIndexList) -> usize {
    guard_value(0, || Ok(handle_ref(list, "list")?.items.len()))
}

/// Name of index `index`.
///
/// The list owns the string; valid until `lance_index_list_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `list` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_index_list_name(list: *const LanceIndexList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(entry(list, index)?.name.as_ptr()))
}

/// Indexed column of index `index`.
///
/// The list owns the string; valid until `lance_index_list_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `list` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_index_list_column(list: *const LanceIndexList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(entry(list, index)?.column.as_ptr()))
}

/// Type of index `index`, e.g. "IVF_PQ", "IVF_FLAT", "IVF_HNSW_SQ", "BTREE", "BITMAP".
///
/// The list owns the string; valid until `lance_index_list_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `list` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_index_list_type(list: *const LanceIndexList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(entry(list, index)?.index_type.as_ptr()))
}

/// Metric of vector index `index` ("L2", "COSINE", "DOT", "HAMMING"), "" for other indexes.
///
/// The list owns the string; valid until `lance_index_list_free` is called. Thread-safe.
/// Returns NULL and sets the last error if `list` is NULL or `index` is out of range.
#[no_mangle]
pub extern "C" fn lance_index_list_metric(list: *const LanceIndexList, index: usize) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(entry(list, index)?.metric.as_ptr()))
}

/// Number of physical segments of index `index` (0 and the last error set if out of range).
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn lance_index_list_segment_count(list: *const LanceIndexList, index: usize) -> usize {
    guard_value(0, || Ok(entry(list, index)?.segments.len()))
}

/// Describe segment `segment` of index `index` into `out`.
///
/// Pointers in `*out` are owned by the list; valid until `lance_index_list_free` is called.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_index_list_segment_v2(
    list: *const LanceIndexList,
    index: usize,
    segment: usize,
    out: *mut LanceIndexSegmentInfo,
) -> i32 {
    index_list_segment(list, index, segment, out, Layout::Sized)
}

pub(crate) fn index_list_segment(
    list: *const LanceIndexList,
    index: usize,
    segment: usize,
    out: *mut LanceIndexSegmentInfo,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let e = entry(list, index)?;
        let out = required_out(out, layout, "out")?;
        let s = item_at(&e.segments, segment, "segment")?;
        out.write(&LanceIndexSegmentInfo {
            struct_size: std::mem::size_of::<LanceIndexSegmentInfo>(),
            uuid: s.uuid,
            fragment_ids: if s.fragment_ids.is_empty() {
                std::ptr::null()
            } else {
                s.fragment_ids.as_ptr()
            },
            num_fragment_ids: s.fragment_ids.len(),
            indexed_rows: s.indexed_rows,
            num_partitions: s.num_partitions,
        });
        Ok(())
    })
}

/// Free an index list and everything it owns. NULL is ignored. Call once, after the last use
/// of the list and of pointers obtained from it; not concurrently with other calls on it.
#[no_mangle]
pub extern "C" fn lance_index_list_free(list: *mut LanceIndexList) {
    guard_free(|| free_handle(list))
}

/// Load every segment of the named index of the handle's snapshot into the process-wide
/// session's index cache; blocks until done. Warmed entries outlive the handle and serve every
/// later handle of the same table in this process.
///
/// No query runs: each segment is opened through Lance's index API and Lance's own prewarm
/// loads its content in bounded read windows (all IVF partitions); for vector indexes the
/// segment's row-visibility mask at the handle's version (from deletion files, not index files)
/// is built too. Afterwards a search of the index at this version finds everything in the
/// cache and reads no index file — as long as the index cache is large enough to hold it
/// (entries stay evictable). Data files (row fetch, re-rank, unindexed fragments) are not
/// warmed.
///
/// Borrows `dataset` and `index_name`. Thread-safe. Returns LANCE_OK, LANCE_ERR_NOT_FOUND for
/// an unknown index, LANCE_ERR_INVALID_ARGUMENT for NULL or invalid UTF-8, or the I/O error.
#[no_mangle]
pub extern "C" fn lance_dataset_prewarm_index(
    dataset: *const LanceDataset,
    index_name: *const c_char,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(index_name, "index_name")?;
        prewarm::prewarm_index(ds.table()?, name).map(|_| ())
    })
}

/// `lance_dataset_prewarm_index` that also writes the I/O the prewarm caused into `out`:
/// object-store reads (index files apart; 0 for local tables), and per segment one cache hit
/// (nothing had to be loaded) or one miss (the segment was opened from storage or read index
/// files).
///
/// Borrows its arguments. Thread-safe. Returns an error code as `lance_dataset_prewarm_index`;
/// `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_prewarm_index_with_stats_v2(
    dataset: *const LanceDataset,
    index_name: *const c_char,
    out: *mut LanceIoStats,
) -> i32 {
    prewarm_index_with_stats(dataset, index_name, out, Layout::Sized)
}

pub(crate) fn prewarm_index_with_stats(
    dataset: *const LanceDataset,
    index_name: *const c_char,
    out: *mut LanceIoStats,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(index_name, "index_name")?;
        let out = required_out(out, layout, "out")?;
        out.write(&prewarm::prewarm_index(ds.table()?, name)?.into());
        Ok(())
    })
}

/// Warm only some segments of the named index: the ones whose INDEX_SEGMENT splits this worker
/// serves (their UUIDs from `lance_split_segment_uuid`), exactly as
/// `lance_dataset_prewarm_index` warms all of them. `segment_uuids` holds
/// `segment_uuids_len / 16` UUIDs of 16 bytes each, back to back; a UUID given twice is warmed
/// once. If `out` is not NULL it receives the prewarm's I/O as in
/// `lance_dataset_prewarm_index_with_stats_v2`.
///
/// Borrows its arguments. Thread-safe. Returns LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for a NULL
/// dataset or name, invalid UTF-8, an empty list or a length that is not a multiple of 16;
/// LANCE_ERR_NOT_FOUND for an unknown index or a UUID that is not one of its segments at the
/// handle's version (the message names it); or the I/O error. `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_prewarm_index_segments_v2(
    dataset: *const LanceDataset,
    index_name: *const c_char,
    segment_uuids: *const u8,
    segment_uuids_len: usize,
    out: *mut LanceIoStats,
) -> i32 {
    prewarm_index_segments(dataset, index_name, segment_uuids, segment_uuids_len, out, Layout::Sized)
}

pub(crate) fn prewarm_index_segments(
    dataset: *const LanceDataset,
    index_name: *const c_char,
    segment_uuids: *const u8,
    segment_uuids_len: usize,
    out: *mut LanceIoStats,
    layout: Layout,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(index_name, "index_name")?;
        let out = out_slot(out, layout, "out")?;
        let bytes = slice_arg(segment_uuids, segment_uuids_len, "segment_uuids")?;
        if bytes.len() % 16 != 0 {
            return Err(HostError::invalid(format!(
                "segment_uuids_len {} is not a multiple of 16 (one UUID is 16 bytes)",
                bytes.len()
            )));
        }
        let uuids: Vec<uuid::Uuid> = bytes
            .chunks_exact(16)
            .map(|c| uuid::Uuid::from_bytes(c.try_into().expect("16-byte chunk")))
            .collect();
        let stats = prewarm::prewarm_index_segments(ds.table()?, name, &uuids)?;
        if let Some(out) = out {
            out.write(&stats.into());
        }
        Ok(())
    })
}
