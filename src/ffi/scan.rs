//! C ABI of scans.

use std::ffi::c_char;

use std::ffi::c_int;

use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::error::{HostError, Result};
use crate::scan::{self, BatchReader, ScanOptions};
use crate::io_stats::OpStats;

pub use super::handles::LanceIoStats;
use super::handles::LanceDataset;
use super::sized::{init_out, read_in, required_out, Extensible, Layout};
use super::{guard_code, handle_ref, opt_str_arg, out_arg, slice_arg, str_list_arg};

/// What a scan reads. Initialise with `lance_scan_options_init_v2(&o, sizeof o)`, then set
/// what you need. Every pointer inside is borrowed for the duration of the call that receives
/// the options.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceScanOptions {
    /// `sizeof(LanceScanOptions)` as the caller compiled it; set by `lance_scan_options_init_v2`
    /// (see "ABI compatibility" in the README).
    pub struct_size: usize,
    /// Columns to return, in order (`_rowid` and `_rowaddr` allowed); `num_columns == 0` means
    /// every column of the schema. An unknown column is LANCE_ERR_INVALID_ARGUMENT.
    pub columns: *const *const c_char,
    pub num_columns: usize,
    /// SQL boolean filter such as `"id > 10 AND name LIKE 'a%'"`; NULL = no filter.
    pub filter_sql: *const c_char,
    /// A serialized Substrait `ExtendedExpression` with one boolean expression; NULL/0 = none.
    /// Given with `filter_sql`, the two are ANDed (since 0.15; before, refused as mutually
    /// exclusive).
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
    /// Batches to decode ahead; 0 = the session's default (`scan_batch_readahead`).
    pub batch_readahead: u32,
    /// Fragments to read ahead; 0 = the session's default (`scan_fragment_readahead`).
    pub fragment_readahead: u32,
    /// Bytes of reads the scan may queue ahead of decoding (bounds its I/O memory together
    /// with the two read-ahead settings); 0 = the session's default (`scan_io_buffer_bytes`).
    pub io_buffer_bytes: u64,
    /// Return the rows sorted: comma-separated sort keys `column [ASC | DESC] [NULLS FIRST |
    /// NULLS LAST]` over top-level columns of primitive types (numbers, strings, binary, booleans,
    /// dates, timestamps, decimals); default ASC, NULLS FIRST for ASC and NULLS LAST for DESC (as
    /// in Spark); a name may be quoted with double quotes or backticks. The sort is over the rows
    /// of the call (for a split scan, of its split), before `offset` and `limit`: with a limit it
    /// is a top-n. NULL or empty = storage order. A malformed list, an unknown column, a column
    /// of a nested type or one the scan does not return (when `columns` names any) is
    /// LANCE_ERR_INVALID_ARGUMENT. Since 0.13.
    pub order_by: *const c_char,
    /// A runtime key-set filter (a join's build-side keys, known only when the scan runs):
    /// keep only the rows whose top-level column `key_filter_column` holds one of the values
    /// of `key_filter_values`, an Arrow C Data array described by `key_filter_schema` (any
    /// type whose values cast exactly to the column's: numbers, strings, binary, booleans,
    /// dates, timestamps, decimals; NULL keys match no row; an empty array matches none). It
    /// is ANDed with `filter_sql` and `filter_substrait` (which may also be given together:
    /// ANDed), applies to every scan and split scan these options reach, and uses the column's
    /// scalar index where one exists. Ownership: a call that reads these options MOVES the
    /// array out (its `release` is NULL afterwards, success or failure, as Arrow's C data
    /// interface moves); a call that fails before reading them (a NULL handle) leaves it to
    /// the caller, who releases it when `release` is still set. The schema stays the caller's.
    /// All three NULL = no key filter; a column without values (or values without a column
    /// or schema), an unknown column, values that do not fit the column, or more than
    /// 4,000,000 keys are LANCE_ERR_INVALID_ARGUMENT. Since 0.15.
    pub key_filter_column: *const c_char,
    pub key_filter_values: *mut FFI_ArrowArray,
    pub key_filter_schema: *const FFI_ArrowSchema,
    /// The key set as text, for hosts without Arrow arrays: `num_key_filter_texts` keys with
    /// `key_filter_column`, each cast exactly to the column's type as
    /// `key_filter_values` would be (`"42"` for an integer column, `"2026-01-31"` for a date); a
    /// NULL entry is a NULL key. Borrowed for the call. Give either the array or the texts, not
    /// both (LANCE_ERR_INVALID_ARGUMENT). Since 0.15.
    pub key_filter_texts: *const *const c_char,
    pub num_key_filter_texts: usize,
    /// A dynamic filter (`lance_dynamic_filter_new`) the host may tighten while the scan runs:
    /// every batch `get_next` returns after an update returned is filtered with that update's
    /// predicate (or a newer one), on top of every other filter; batches it empties are
    /// skipped. The scan also reads the filter's columns, and drops those not in `columns`.
    /// Borrowed for the call: the streams it starts keep their own reference, so the handle
    /// may be freed at any time (updates then stop). A scan with a dynamic filter takes no
    /// `limit` or `offset` (LANCE_ERR_INVALID_ARGUMENT); a filter made for another table is
    /// LANCE_ERR_INVALID_ARGUMENT. NULL = none. Since 0.15.
    pub dynamic_filter: *const super::dynamic_filter::LanceDynamicFilter,
}

impl Default for LanceScanOptions {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
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
            io_buffer_bytes: 0,
            order_by: std::ptr::null(),
            key_filter_column: std::ptr::null(),
            key_filter_values: std::ptr::null_mut(),
            key_filter_schema: std::ptr::null(),
            key_filter_texts: std::ptr::null(),
            num_key_filter_texts: 0,
            dynamic_filter: std::ptr::null(),
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, fields valid for any C value; the 0.1
// layout (the same fields without struct_size) is 112 bytes.
unsafe impl Extensible for LanceScanOptions {
    const NAME: &'static str = "LanceScanOptions";
    const MIN_SIZE: usize = 120;
    const V0_SIZE: usize = 112;
    fn initial() -> Self {
        Self::default()
    }
}

/// Convert C scan options (NULL = defaults) in `layout` into the safe form.
pub(crate) fn scan_options_arg(p: *const LanceScanOptions, layout: Layout) -> Result<ScanOptions> {
    let o = &read_in(p, layout, "options")?.unwrap_or_default();
    // moved out first, so that every call reading the options takes the array whatever fails
    let key_filter = key_filter_arg(o)?;
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
        io_buffer_bytes: (o.io_buffer_bytes > 0).then_some(o.io_buffer_bytes),
        row_slice: None,
        order_by: match opt_str_arg(o.order_by, "order_by")? {
            Some(text) => scan::parse_order_by(text)?,
            None => Vec::new(),
        },
        key_filter,
        dynamic_filter: if o.dynamic_filter.is_null() {
            None
        } else {
            Some(super::handle_ref(o.dynamic_filter, "dynamic_filter")?.filter.clone())
        },
    })
}

/// The key-set filter of `o`: the array moved out of the caller's struct (Arrow's move), the
/// schema read in place.
fn key_filter_arg(o: &LanceScanOptions) -> Result<Option<crate::key_filter::KeyFilter>> {
    let values = if o.key_filter_values.is_null() {
        None
    } else {
        // SAFETY: a non-NULL pointer to an FFI_ArrowArray the caller owns (the header's
        // contract); replacing it with an empty (released) one is Arrow's move.
        Some(unsafe { std::ptr::replace(o.key_filter_values, FFI_ArrowArray::empty()) })
    };
    let column = opt_str_arg(o.key_filter_column, "key_filter_column")?;
    if !o.key_filter_texts.is_null() || o.num_key_filter_texts > 0 {
        if values.is_some() || !o.key_filter_schema.is_null() {
            return Err(HostError::invalid("give the key set as key_filter_values or as key_filter_texts, not both"));
        }
        let column = column.ok_or_else(|| HostError::invalid("key_filter_texts needs key_filter_column"))?;
        let texts = slice_arg(o.key_filter_texts, o.num_key_filter_texts, "key_filter_texts")?;
        let keys = texts
            .iter()
            .enumerate()
            .map(|(i, &p)| opt_str_arg(p, &format!("key_filter_texts[{i}]")))
            .collect::<Result<Vec<Option<&str>>>>()?;
        let values: arrow::array::ArrayRef = std::sync::Arc::new(arrow::array::StringArray::from(keys));
        return Ok(Some(crate::key_filter::KeyFilter { column: column.to_string(), values }));
    }
    match (column, values) {
        (None, None) if o.key_filter_schema.is_null() => Ok(None),
        (Some(column), Some(values)) if !o.key_filter_schema.is_null() => {
            Ok(Some(import_keys(column, values, o.key_filter_schema, "key_filter")?))
        }
        _ => Err(HostError::invalid(
            "a key filter needs key_filter_column, key_filter_values and key_filter_schema together",
        )),
    }
}

/// A key set from a moved-out host array and the caller's schema of it (`what` names the
/// arguments in messages: `what`_values, `what`_schema).
pub(crate) fn import_keys(
    column: &str,
    values: FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
    what: &str,
) -> Result<crate::key_filter::KeyFilter> {
    if values.is_released() {
        return Err(HostError::invalid(format!("{what}_values is a released array (export the keys again)")));
    }
    if schema.is_null() {
        return Err(HostError::invalid(format!("{what}_schema is NULL")));
    }
    // SAFETY: a non-NULL pointer to the caller's live FFI_ArrowSchema, read only.
    let schema = unsafe { &*schema };
    let data_type = arrow_schema::DataType::try_from(schema)
        .map_err(|e| HostError::invalid(format!("{what}_schema is not a valid Arrow schema: {e}")))?;
    // SAFETY: the array was moved out of the caller's memory; `schema` describes it.
    let data = unsafe { super::import::host_array(values, data_type, true) }
        .map_err(|e| HostError::invalid(format!("{what}_values is not a valid Arrow array: {e}")))?;
    Ok(crate::key_filter::KeyFilter { column: column.to_string(), values: arrow::array::make_array(data) })
}

/// What a lance-host stream keeps behind `private_data`: arrow's exported stream plus the
/// operation's counters and cancellation, so hosts can reach them without any change to the C
/// struct. Callbacks only ever take shared references to it (the exported stream sits in an
/// `UnsafeCell`), so `lance_stream_cancel` may run on another thread during `get_next`.
struct HostStream {
    inner: std::cell::UnsafeCell<FFI_ArrowArrayStream>,
    /// The reader behind `inner`, reached directly by `lance_stream_poll_next`.
    reader: std::sync::Arc<std::sync::Mutex<BatchReader>>,
    /// Whom `lance_stream_poll_next` wakes; emptied at release.
    wake: std::sync::Arc<crate::wake::WakeSlot>,
    stats: OpStats,
    token: crate::cancel::Token,
    failure: std::sync::Arc<std::sync::OnceLock<crate::error::LanceErrorCode>>,
    /// The message `get_last_error` returns after a failure: the code's name, then the error
    /// (without arrow's "External error: " wrapper).
    message: std::sync::Mutex<Option<std::ffi::CString>>,
    /// Set when the library consumes the stream (merge, refine): see `BatchReader`.
    consumed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The message of a failed `get_next`/`get_schema`: `LANCE_ERR_<NAME>: <what happened>`.
fn stream_message(host: &HostStream, inner: *mut FFI_ArrowArrayStream) {
    // SAFETY: arrow's exported stream is live while `host` is; its message is valid until the
    // next call on it, and is copied here at once.
    let raw = match unsafe { (*inner).get_last_error } {
        Some(f) => unsafe { f(inner) },
        None => std::ptr::null(),
    };
    let text = if raw.is_null() {
        "the stream failed".to_string()
    } else {
        unsafe { std::ffi::CStr::from_ptr(raw) }.to_string_lossy().into_owned()
    };
    let text = text.strip_prefix("External error: ").unwrap_or(&text);
    let code = host.failure.get().copied().unwrap_or(crate::error::LanceErrorCode::LANCE_ERR_IO);
    set_message(host, code, text);
}

/// Keep `LANCE_ERR_<NAME>: <text>` as the message the stream's `get_last_error` returns.
fn set_message(host: &HostStream, code: crate::error::LanceErrorCode, text: &str) {
    // SAFETY: lance_error_code_name returns a static NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(super::error::lance_error_code_name(code as i32)) };
    let msg = format!("{}: {text}", name.to_string_lossy());
    if let Ok(mut slot) = host.message.lock() {
        *slot = std::ffi::CString::new(msg.replace('\0', " ")).ok();
    }
}

/// The errno `get_next` returns for a stream that failed with `code` (see the header of
/// `lance_stream_cancel` and the README's conventions).
fn errno_of(code: crate::error::LanceErrorCode) -> c_int {
    use crate::error::LanceErrorCode::*;
    match code {
        LANCE_ERR_INVALID_ARGUMENT => 22, // EINVAL
        LANCE_ERR_NOT_FOUND => 2,         // ENOENT
        LANCE_ERR_NOT_SUPPORTED => 95,    // ENOTSUP
        LANCE_ERR_UNAUTHENTICATED | LANCE_ERR_PERMISSION_DENIED => 13, // EACCES
        LANCE_ERR_CORRUPT => 74,          // EBADMSG
        LANCE_ERR_TIMEOUT => 110,         // ETIMEDOUT
        LANCE_ERR_CANCELLED => 125,       // ECANCELED
        _ => 5,                           // EIO: I/O, internal errors, caught panics
    }
}

/// The live lance-host stream behind `s`, or None.
unsafe fn host_of<'a>(s: *const FFI_ArrowArrayStream) -> Option<&'a HostStream> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the caller passes a stream pointer it owns; only our release function marks it.
    let stream = unsafe { &*s };
    let ours = stream
        .release
        .is_some_and(|f| std::ptr::fn_addr_eq(f, host_release as unsafe extern "C" fn(*mut FFI_ArrowArrayStream)));
    if !ours || stream.private_data.is_null() {
        return None;
    }
    // SAFETY: created by `export_stream`; freed only by `host_release`.
    Some(unsafe { &*(stream.private_data as *const HostStream) })
}

unsafe extern "C" fn host_get_schema(s: *mut FFI_ArrowArrayStream, out: *mut FFI_ArrowSchema) -> c_int {
    // SAFETY: called by the consumer on a live stream created by `export_stream`.
    let Some(host) = (unsafe { host_of(s) }) else { return libc_einval() };
    let inner = host.inner.get();
    let rc = match unsafe { (*inner).get_schema } {
        Some(f) => unsafe { f(inner, out) },
        None => libc_einval(),
    };
    if rc != 0 {
        stream_message(host, inner);
    }
    rc
}

unsafe extern "C" fn host_get_next(s: *mut FFI_ArrowArrayStream, out: *mut FFI_ArrowArray) -> c_int {
    // SAFETY: as above.
    let Some(host) = (unsafe { host_of(s) }) else { return libc_einval() };
    let inner = host.inner.get();
    let rc = match unsafe { (*inner).get_next } {
        Some(f) => unsafe { f(inner, out) },
        None => libc_einval(),
    };
    if rc != 0 {
        stream_message(host, inner);
    }
    match (rc, host.failure.get()) {
        (0, _) | (_, None) => rc,
        (_, Some(code)) => errno_of(*code),
    }
}

unsafe extern "C" fn host_get_last_error(s: *mut FFI_ArrowArrayStream) -> *const c_char {
    // SAFETY: as above.
    let Some(host) = (unsafe { host_of(s) }) else { return std::ptr::null() };
    if let Ok(slot) = host.message.lock() {
        if let Some(m) = slot.as_ref() {
            // Valid until the next call on this stream or its release (Arrow's contract): the
            // slot is only replaced by the next failing call.
            return m.as_ptr();
        }
    }
    let inner = host.inner.get();
    match unsafe { (*inner).get_last_error } {
        Some(f) => unsafe { f(inner) },
        None => std::ptr::null(),
    }
}

unsafe extern "C" fn host_release(s: *mut FFI_ArrowArrayStream) {
    if s.is_null() {
        return;
    }
    // SAFETY: the stream is live and ours; after this it is marked released.
    let private = unsafe { (*s).private_data } as *mut HostStream;
    unsafe {
        (*s).release = None;
        (*s).private_data = std::ptr::null_mut();
    }
    if !private.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: created by Box::into_raw in `export_stream`, freed once here.
            let host = unsafe { Box::from_raw(private) };
            // No wake-up reaches the host after its release returns (a wake in flight on a
            // runtime thread finishes first: the slot's lock is held while calling it).
            host.wake.disarm();
            drop(host);
        }));
    }
}

fn libc_einval() -> c_int {
    22
}

/// Take ownership of a stream a caller hands to a function that consumes it (a merge, refine):
/// a reader over it and, for a stream of this library, the counters of the operation behind
/// it (whose rows then no longer count as returned to the host). A NULL or released stream is
/// INVALID_ARGUMENT naming `what`.
pub(crate) fn import_stream(
    p: *mut FFI_ArrowArrayStream,
    what: &str,
) -> Result<(Box<dyn arrow::array::RecordBatchReader + Send>, Option<OpStats>)> {
    if p.is_null() {
        return Err(HostError::invalid(format!("{what} is NULL")));
    }
    // SAFETY: a non-NULL pointer is a stream the caller hands over (contract of the callers).
    let stats = unsafe { host_of(p) }.map(|h| {
        h.consumed.store(true, std::sync::atomic::Ordering::Relaxed);
        h.stats.clone()
    });
    // SAFETY: as above; from_raw moves the stream out and marks the caller's struct released.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(p) };
    if stream.release.is_none() {
        return Err(HostError::invalid(format!("{what} stream is already released")));
    }
    let reader = super::import::HostStreamReader::try_new(stream).map_err(|e| HostError::invalid(format!("{what}: {e}")))?;
    Ok((Box::new(reader), stats))
}

/// The reader as arrow's stream exporter sees it: shared with `lance_stream_poll_next`. Hosts
/// must not call `get_next` and `lance_stream_poll_next` concurrently on one stream (Arrow's
/// rule for `get_next`); the lock only keeps a violation memory-safe.
struct SharedReader {
    schema: arrow_schema::SchemaRef,
    reader: std::sync::Arc<std::sync::Mutex<BatchReader>>,
}

impl Iterator for SharedReader {
    type Item = std::result::Result<arrow::record_batch::RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.lock() {
            Ok(mut r) => r.next(),
            Err(_) => Some(Err(arrow_schema::ArrowError::ExternalError(Box::new(HostError::internal(
                "the stream's reader was poisoned by a panic",
            ))))),
        }
    }
}

impl arrow::record_batch::RecordBatchReader for SharedReader {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
}

/// Hand a reader to C as an `ArrowArrayStream` written into `out`.
pub(crate) fn export_stream(reader: BatchReader, out: &mut FFI_ArrowArrayStream) {
    let stats = reader.stats();
    let token = reader.cancel_token();
    let failure = reader.failure();
    let consumed = reader.consumed_flag();
    let schema = arrow::record_batch::RecordBatchReader::schema(&reader);
    let reader = std::sync::Arc::new(std::sync::Mutex::new(reader));
    let shared = SharedReader { schema, reader: reader.clone() };
    let host = Box::new(HostStream {
        inner: std::cell::UnsafeCell::new(FFI_ArrowArrayStream::new(Box::new(shared))),
        reader,
        wake: std::sync::Arc::new(crate::wake::WakeSlot::default()),
        stats,
        token,
        failure,
        message: std::sync::Mutex::new(None),
        consumed,
    });
    let stream = FFI_ArrowArrayStream {
        get_schema: Some(host_get_schema),
        get_next: Some(host_get_next),
        get_last_error: Some(host_get_last_error),
        release: Some(host_release),
        private_data: Box::into_raw(host) as *mut std::ffi::c_void,
    };
    // SAFETY: `out` is valid for writes and holds no live stream (caller contract).
    unsafe { std::ptr::write(out, stream) };
}

/// Read the I/O statistics of the operation behind a stream returned by this library (scan,
/// split scan, split search, take, merge): object-store read requests and bytes so far, and
/// the plan's index-cache hits and misses (final once the stream has reached its end). Counts
/// belong to this stream alone, even while other operations run on other threads. Requests
/// are counted for object stores (s3:// and the like); Lance reads local files without going
/// through the object-store layer, so local tables report 0 requests.
///
/// Borrows `stream`; valid until the stream is released. Thread-safe with respect to other
/// streams; do not call it concurrently with `get_next` on the same stream. Returns
/// LANCE_ERR_INVALID_ARGUMENT if `stream` is NULL, released, or not from this library;
/// `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_stream_io_stats_v2(stream: *const FFI_ArrowArrayStream, out: *mut LanceIoStats) -> i32 {
    stream_io_stats(stream, out, Layout::Sized)
}

pub(crate) fn stream_io_stats(stream: *const FFI_ArrowArrayStream, out: *mut LanceIoStats, layout: Layout) -> i32 {
    guard_code(|| {
        handle_ref(stream, "stream")?;
        let out = required_out(out, layout, "out")?;
        // SAFETY: `host_of` checks that the stream is a live lance-host stream.
        let host = unsafe { host_of(stream) }.ok_or_else(|| {
            HostError::invalid("stream is released or was not created by lance-host")
        })?;
        out.write(&host.stats.snapshot().into());
        Ok(())
    })
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with the default
/// scan options — all columns, no filter, no limit, default batch size, all fragments, in order
/// — and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is
/// smaller than the first sized `LanceScanOptions`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_scan_options_init_v2(out: *mut LanceScanOptions, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Scan the pinned snapshot of `dataset` into `out` (Arrow C Stream Interface, zero-copy
/// batches). `options` may be NULL for defaults. Errors found while reading surface through
/// `out->get_next` returning an errno and `out->get_last_error(out)`; the errno says the class
/// (for every stream of this library): EIO (5) storage or internal failure, ENOENT (2) a file or
/// row that no longer exists, EINVAL (22) invalid input, EACCES (13) credentials, EBADMSG (74)
/// corrupt data, ENOTSUP (95) unsupported, ETIMEDOUT (110) a call context's deadline, ECANCELED
/// (125) cancelled. After a failure every later `get_next` fails the same way.
///
/// Caller owns the stream; release it with `out->release(out)` — releasing before the end
/// stops the remaining work. The stream may be consumed on any thread (one thread at a time)
/// and may outlive `dataset`. Borrows `dataset` and `options` for the duration of the call.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_scan_v2(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    dataset_scan(dataset, options, Layout::Sized, out)
}

pub(crate) fn dataset_scan(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    layout: Layout,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let opts = scan_options_arg(options, layout)?;
        let reader = scan::scan(ds.table()?, &opts)?;
        export_stream(reader, out);
        Ok(())
    })
}

/// Describe the plan Lance would run for `lance_dataset_scan_v2` with the same options — which
/// scalar index answers the filter, what is pushed into the read, the projection — as Lance's
/// own plan text, with the reading the scan would choose for its columns. Nothing is read but,
/// for a filtered scan of a local table, the filter's columns of the first 8,192 rows (the
/// estimate `lance_dataset_scan_v2` makes too; `docs/operations.md`). `options` may be NULL.
///
/// Caller owns `*out`; free it with `lance_string_free`. Borrows its arguments. Thread-safe.
/// Returns an error code as `lance_dataset_scan_v2`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_explain_scan_v2(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    out: *mut *mut c_char,
) -> i32 {
    dataset_explain_scan(dataset, options, Layout::Sized, out)
}

pub(crate) fn dataset_explain_scan(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    layout: Layout,
    out: *mut *mut c_char,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let out = out_arg(out, "out")?;
        let opts = scan_options_arg(options, layout)?;
        let text = scan::explain_scan(ds.table()?, &opts)?;
        *out = super::owned_cstring(&text).into_raw();
        Ok(())
    })
}

/// Execute a scan split (from `lance_dataset_plan_scan`, possibly rebuilt with
/// `lance_split_deserialize`) on `dataset`, which must be the split's table at the split's
/// version. `options` apply as for `lance_dataset_scan_v2`, except that `fragment_ids` must be
/// empty (the split chooses the fragments).
///
/// Caller owns the stream; release it with `out->release(out)`. Borrows its arguments.
/// Thread-safe. Returns an error code; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_scan_v2(
    dataset: *const LanceDataset,
    split: *const super::handles::LanceSplit,
    options: *const LanceScanOptions,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    split_scan(dataset, split, options, Layout::Sized, out)
}

pub(crate) fn split_scan(
    dataset: *const LanceDataset,
    split: *const super::handles::LanceSplit,
    options: *const LanceScanOptions,
    layout: Layout,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let opts = scan_options_arg(options, layout)?;
        let reader = crate::read_split::scan_split(ds.split_table(&split.split)?, &split.split, &opts)?;
        export_stream(reader, out);
        Ok(())
    })
}

/// Cancel a stream this library returned, from any thread — also while another thread is
/// blocked in its `get_next`. That `get_next` (and every later one) returns ECANCELED (125) with
/// a message from `get_last_error`; the work behind the stream stops (its I/O counters stop
/// growing). The stream must still be released with `release`. Cancelling twice is harmless.
///
/// Borrows `stream`; it must be live (not released, not being released). Thread-safe.
/// Returns LANCE_OK, or LANCE_ERR_INVALID_ARGUMENT for NULL, a released stream or a stream
/// not created by lance-host.
#[no_mangle]
pub extern "C" fn lance_stream_cancel(stream: *const FFI_ArrowArrayStream) -> i32 {
    guard_code(|| {
        handle_ref(stream, "stream")?;
        // SAFETY: `host_of` checks that the stream is a live lance-host stream.
        let host = unsafe { host_of(stream) }.ok_or_else(|| {
            HostError::invalid("stream is released or was not created by lance-host")
        })?;
        host.token.cancel();
        Ok(())
    })
}

/// What `lance_stream_poll_next` reports in `*status`.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LancePollStatus {
    /// `*out` holds the next batch (release it with its `release`).
    LANCE_POLL_READY = 0,
    /// No batch yet; the wake callback of this poll will be called (see `lance_stream_poll_next`).
    LANCE_POLL_PENDING = 1,
    /// The stream ended normally; `*out` is not written. Release the stream.
    LANCE_POLL_END = 2,
}

/// Called by the library, once, when a stream that answered LANCE_POLL_PENDING may make
/// progress. It runs on a library thread: it must be quick and must not call into the stream
/// (typically it writes to an eventfd or a pipe, or posts to the host's scheduler).
pub type LanceWakeCallback = Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)>;

/// The host's wake-up and its user data, sent to the library thread that calls it.
struct HostWake {
    callback: unsafe extern "C" fn(*mut std::ffi::c_void),
    user_data: *mut std::ffi::c_void,
}

// SAFETY: the host promises (header of `lance_stream_poll_next`) that its callback may run on
// any thread with this user data; the library never dereferences the pointer.
unsafe impl Send for HostWake {}

impl HostWake {
    fn call(self) {
        // SAFETY: the host registered this callback and user data for this wake-up.
        unsafe { (self.callback)(self.user_data) }
    }
}

/// Read the next batch of a stream this library returned without blocking: for hosts that run
/// their own scheduler instead of parking a thread in `get_next`.
///
/// On LANCE_OK, `*status` says what happened: LANCE_POLL_READY (`*out` holds the next batch,
/// owned by the caller, released with its `release`), LANCE_POLL_PENDING (nothing yet; `*out`
/// is not written) or LANCE_POLL_END (the stream ended; `*out` is not written). After
/// PENDING, `wake(user_data)` is called once, from a library thread, when polling again may
/// make progress — a batch, the end or an error is ready, or the stream was cancelled or ran
/// past its deadline. It is never called for a poll that answered READY, END or an error.
/// Only the latest poll's callback is kept: each poll replaces the previous one. `wake` may be NULL (the host then polls on its own schedule). `user_data` must stay
/// valid until the callback ran or the stream is released; after the stream's `release`
/// returns the callback is never called. The callback must not call into this stream.
///
/// Errors: a failed stream returns its error code (the same on every later poll) with the
/// message in `lance_last_error_message` and in the stream's `get_last_error`; cancellation is
/// LANCE_ERR_CANCELLED, a deadline LANCE_ERR_TIMEOUT. Polling again after LANCE_POLL_END is
/// LANCE_ERR_FAILED_PRECONDITION. NULL `stream`, `out` or `status`, or a released stream or one
/// not created by lance-host, is LANCE_ERR_INVALID_ARGUMENT. `*status` is written on LANCE_OK
/// only. The blocking `get_next` stays available; do not call `get_next` and this function
/// concurrently on one stream. Thread-safe with respect to other streams; never blocks on I/O.
#[no_mangle]
pub extern "C" fn lance_stream_poll_next(
    stream: *mut FFI_ArrowArrayStream,
    out: *mut FFI_ArrowArray,
    wake: LanceWakeCallback,
    user_data: *mut std::ffi::c_void,
    status: *mut i32,
) -> i32 {
    guard_code(|| {
        handle_ref(stream, "stream")?;
        let out = out_arg(out, "out")?;
        let status = out_arg(status, "status")?;
        // SAFETY: `host_of` checks that the stream is a live lance-host stream.
        let host = unsafe { host_of(stream) }.ok_or_else(|| {
            HostError::invalid("stream is released or was not created by lance-host")
        })?;
        let target = wake.map(|callback| {
            let host_wake = HostWake { callback, user_data };
            Box::new(move || host_wake.call()) as crate::wake::WakeTarget
        });
        let polled = host.wake.poll(target, |waker| {
            let mut reader =
                host.reader.lock().map_err(|_| HostError::internal("the stream's reader was poisoned by a panic"))?;
            reader.poll_batch(waker)
        });
        let polled = match polled {
            Ok(p) => p,
            Err(e) => {
                set_message(host, e.code, &e.message);
                return Err(e);
            }
        };
        *status = match polled {
            scan::Polled::Ready(batch) => {
                let array = arrow::array::StructArray::from(batch);
                let data = arrow::array::Array::into_data(array);
                // SAFETY: `out` is valid for writes and holds no live array (caller contract).
                unsafe { std::ptr::write(out, FFI_ArrowArray::new(&data)) };
                LancePollStatus::LANCE_POLL_READY as i32
            }
            scan::Polled::Pending => LancePollStatus::LANCE_POLL_PENDING as i32,
            scan::Polled::End => LancePollStatus::LANCE_POLL_END as i32,
        };
        Ok(())
    })
}
