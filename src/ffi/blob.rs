//! C ABI of blob columns: descriptors and range reads.

use std::ffi::{c_char, CString};

use crate::blob::{self, Blobs, Kind};
use crate::error::HostError;

use super::handles::{LanceDataset, LanceIoStats};
use super::sized::{required_out, Extensible, Layout};
use super::{guard_code, guard_free, guard_value, handle_ref, into_array, into_handle, out_arg, owned_cstring, slice_arg, str_arg};

/// Where a blob's bytes live (`LanceBlobInfo::kind`).
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceBlobKind {
    /// The value is null: no bytes.
    LANCE_BLOB_NULL = 0,
    /// In the data file, next to the row.
    LANCE_BLOB_INLINE = 1,
    /// A slice of a blob file shared by several rows.
    LANCE_BLOB_PACKED = 2,
    /// A blob file of its own.
    LANCE_BLOB_DEDICATED = 3,
    /// An object outside the table (`LanceBlobInfo::uri`).
    LANCE_BLOB_EXTERNAL = 4,
    /// An immutable object the table owns outside its data files.
    LANCE_BLOB_MANAGED = 5,
}

/// One row's blob (`lance_blobs_info`). Set `struct_size = sizeof(LanceBlobInfo)` first.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceBlobInfo {
    /// `sizeof(LanceBlobInfo)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    /// The row id the blob was taken for.
    pub row_id: u64,
    /// The blob's length in bytes (0 for a null value and for an empty blob).
    pub size: u64,
    /// A `LanceBlobKind` value; LANCE_BLOB_NULL for a null value.
    pub kind: i32,
    /// Whether the value is null (then `kind` is LANCE_BLOB_NULL and nothing can be read).
    pub is_null: bool,
    /// The object of an external blob, else NULL. Owned by the set; valid until
    /// `lance_blobs_free`.
    pub uri: *const c_char,
}

impl Default for LanceBlobInfo {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            row_id: 0,
            size: 0,
            kind: LanceBlobKind::LANCE_BLOB_NULL as i32,
            is_null: false,
            uri: std::ptr::null(),
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, fields valid for any C value (bool
// written only by the library). It has no 0.1 layout (V0_SIZE is never used).
unsafe impl Extensible for LanceBlobInfo {
    const NAME: &'static str = "LanceBlobInfo";
    const MIN_SIZE: usize = 40;
    const V0_SIZE: usize = 32;
    fn initial() -> Self {
        Self::default()
    }
}

/// The blobs of some rows of one blob column (`lance_dataset_take_blobs`). Opaque; free with
/// `lance_blobs_free`.
pub struct LanceBlobs {
    blobs: Blobs,
    uris: Vec<Option<CString>>,
}

/// Resolve the blobs of the blob column `column` (Blob v2, or a binary column with blob
/// encoding) for `num_row_ids` row ids (`_rowid` values of the handle's snapshot; request
/// order, duplicates kept) into a set for `lance_blobs_info` and range reads. Reads the
/// column's descriptors only — no blob bytes. (NULL, 0) is an empty set.
///
/// Caller owns `*out`; free it with `lance_blobs_free`. The set outlives `dataset`. Borrows
/// its arguments. Thread-safe. Errors: NULL or invalid UTF-8 arguments, an unknown column or
/// one that is not a blob column are LANCE_ERR_INVALID_ARGUMENT (naming the column and its
/// type); a missing or deleted row is LANCE_ERR_NOT_FOUND naming it; storage failures are
/// LANCE_ERR_IO. `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_take_blobs(
    dataset: *const LanceDataset,
    column: *const c_char,
    row_ids: *const u64,
    num_row_ids: usize,
    out: *mut *mut LanceBlobs,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let column = str_arg(column, "column")?;
        let ids = slice_arg(row_ids, num_row_ids, "row_ids")?;
        let out = out_arg(out, "out")?;
        let blobs = blob::take_blobs(ds.table()?, column, ids)?;
        let uris = (0..blobs.len())
            .map(|i| Ok(blobs.info(i)?.and_then(|b| b.uri).map(|u| owned_cstring(&u))))
            .collect::<crate::Result<Vec<_>>>()?;
        *out = into_handle(LanceBlobs { blobs, uris });
        Ok(())
    })
}

/// Number of blobs in the set (the number of row ids asked for); 0 and the last error set if
/// `blobs` is NULL. Borrows `blobs`. Thread-safe.
#[no_mangle]
pub extern "C" fn lance_blobs_count(blobs: *const LanceBlobs) -> usize {
    guard_value(0, || Ok(handle_ref(blobs, "blobs")?.blobs.len()))
}

/// Describe blob `index` of the set into `*out` (`struct_size` set by the caller): row id,
/// size, kind, null-ness and, for an external blob, its URI (owned by the set: valid until
/// `lance_blobs_free`, never freed by the caller).
///
/// Borrows `blobs`. Thread-safe. Errors: NULL pointers, a `struct_size` below 40 or an index
/// out of range are LANCE_ERR_INVALID_ARGUMENT; `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_blobs_info(blobs: *const LanceBlobs, index: usize, out: *mut LanceBlobInfo) -> i32 {
    guard_code(|| {
        let set = handle_ref(blobs, "blobs")?;
        let out = required_out(out, Layout::Sized, "out")?;
        let mut info = LanceBlobInfo { is_null: true, ..Default::default() };
        match set.blobs.info(index)? {
            None => info.row_id = set.blobs.row_id(index)?,
            Some(b) => {
                info.row_id = b.row_id;
                info.size = b.size;
                info.is_null = false;
                info.kind = match b.kind {
                    Kind::Inline => LanceBlobKind::LANCE_BLOB_INLINE,
                    Kind::Packed => LanceBlobKind::LANCE_BLOB_PACKED,
                    Kind::Dedicated => LanceBlobKind::LANCE_BLOB_DEDICATED,
                    Kind::External => LanceBlobKind::LANCE_BLOB_EXTERNAL,
                    Kind::Managed => LanceBlobKind::LANCE_BLOB_MANAGED,
                } as i32;
                info.uri = set.uris[index].as_ref().map_or(std::ptr::null(), |u| u.as_ptr());
            }
        }
        out.write(&info);
        Ok(())
    })
}

/// Read bytes `offset .. offset + length` of blob `index` into `buf` (`buf_len` ≥ `length`
/// bytes of caller memory), fetching only that range (on object stores: ranged requests of
/// about `length` bytes; blob reads bypass the data cache). A length of 0 reads nothing.
///
/// Borrows everything; writes exactly `length` bytes of `buf` on success and none on failure.
/// Thread-safe: several threads may read from one set at once. Errors (all
/// LANCE_ERR_INVALID_ARGUMENT unless noted): NULL `blobs`, NULL `buf` with `length` > 0,
/// `buf_len` < `length`, an index out of range, a null blob, a range past the blob's end
/// (the message names the blob's size); storage failures are LANCE_ERR_IO.
#[no_mangle]
pub extern "C" fn lance_blobs_read(
    blobs: *const LanceBlobs,
    index: usize,
    offset: u64,
    length: u64,
    buf: *mut u8,
    buf_len: usize,
) -> i32 {
    guard_code(|| {
        let set = handle_ref(blobs, "blobs")?;
        if length > buf_len as u64 {
            return Err(HostError::invalid(format!(
                "buf_len {buf_len} is smaller than the {length} bytes asked for"
            )));
        }
        if length > 0 && buf.is_null() {
            return Err(HostError::invalid("buf is NULL"));
        }
        let data = set.blobs.read(index, offset, length)?;
        if !data.is_empty() {
            // SAFETY: `buf` is non-NULL and valid for `buf_len` ≥ `length` = data.len() bytes
            // (caller contract, checked above).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, data.len()) };
        }
        Ok(())
    })
}

/// `lance_blobs_read` into a buffer the library allocates: `*out` holds `length` bytes
/// (`*out_len` = `length`; NULL and 0 for a length of 0). Free it with `lance_bytes_free(*out,
/// *out_len)`.
///
/// Thread-safe. Errors as `lance_blobs_read`, plus NULL `out` or `out_len`; nothing is written
/// on failure.
#[no_mangle]
pub extern "C" fn lance_blobs_read_alloc(
    blobs: *const LanceBlobs,
    index: usize,
    offset: u64,
    length: u64,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    guard_code(|| {
        let set = handle_ref(blobs, "blobs")?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        let data = set.blobs.read(index, offset, length)?;
        // Takes over the read's buffer when it is the only owner of a whole allocation (no copy);
        // copies otherwise.
        (*out, *out_len) = into_array(Vec::from(data));
        Ok(())
    })
}

/// The I/O of the set so far — its descriptor take and every read — into `*out`
/// (`struct_size` set by the caller). Requests are counted for object stores; local tables
/// report 0 requests.
///
/// Borrows `blobs` and `out`; allocates nothing. Thread-safe. Errors: NULL pointers or a bad
/// `struct_size` are LANCE_ERR_INVALID_ARGUMENT; `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_blobs_io_stats(blobs: *const LanceBlobs, out: *mut LanceIoStats) -> i32 {
    guard_code(|| {
        let set = handle_ref(blobs, "blobs")?;
        let out = required_out(out, Layout::Sized, "out")?;
        out.write(&set.blobs.stats().snapshot().into());
        Ok(())
    })
}

/// Free a blob set and the strings it owns. NULL is ignored. Call once, after the last use of
/// the set and of `uri` pointers obtained from it; not concurrently with other calls on it.
#[no_mangle]
pub extern "C" fn lance_blobs_free(blobs: *mut LanceBlobs) {
    guard_free(|| super::free_handle(blobs))
}
