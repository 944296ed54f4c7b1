//! The part of `lance_host.h` the driver calls, loaded at run time from `liblance_host.so`.
//!
//! The driver is glue over the C ABI, like every binding of lance-host: it links no Lance code of
//! its own. The library is found, in this order, at `LANCE_HOST_LIB` (a path), beside the driver's
//! own shared object (an install prefix's `lib/` holds both), or by the dynamic loader's search
//! for `liblance_host.so.0`. A process that also uses lance-host through another binding (the
//! Python package, the JVM) shares the same library and its process-wide session.

use std::ffi::{c_char, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use adbc_core::error::{Error, Result, Status};
use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;

pub type Handle = *mut c_void;

/// `LanceScanOptions` of `lance_host.h` (sized struct; fields in header order).
#[repr(C)]
pub struct ScanOptions {
    pub struct_size: usize,
    pub columns: *const *const c_char,
    pub num_columns: usize,
    pub filter_sql: *const c_char,
    pub filter_substrait: *const u8,
    pub filter_substrait_len: usize,
    pub limit: i64,
    pub offset: i64,
    pub batch_size: u64,
    pub with_row_id: bool,
    pub with_row_addr: bool,
    pub fragment_ids: *const u64,
    pub num_fragment_ids: usize,
    pub scan_in_order: bool,
    pub batch_readahead: u32,
    pub fragment_readahead: u32,
    pub io_buffer_bytes: u64,
    pub order_by: *const c_char,
    pub key_filter_column: *const c_char,
    pub key_filter_values: *mut c_void,
    pub key_filter_schema: *const c_void,
    pub key_filter_texts: *const *const c_char,
    pub num_key_filter_texts: usize,
    pub dynamic_filter: *const c_void,
}

/// `LanceWriteParams` of `lance_host.h`.
#[repr(C)]
pub struct WriteParams {
    pub struct_size: usize,
    pub mode: i32,
    pub commit_retries: i32,
    pub max_rows_per_file: u64,
    pub max_rows_per_group: u64,
    pub max_bytes_per_file: u64,
    pub storage_version: *const c_char,
    pub storage_options: *const *const c_char,
    pub commit_message: *const c_char,
    pub transaction_properties: *const *const c_char,
    pub statement_id: *const c_char,
    pub retry_timeout_ms: u64,
    pub expected_version: u64,
    pub required_config: *const *const c_char,
    pub stable_row_ids: u32,
}

/// `LanceWriteResult` of `lance_host.h`.
#[repr(C)]
#[derive(Default)]
pub struct WriteResult {
    pub struct_size: usize,
    pub version: u64,
    pub rows_written: u64,
    pub fragments_written: u64,
    pub files_written: u64,
    pub bytes_written: u64,
    pub rows_deleted: u64,
    pub rows_updated: u64,
    pub rows_inserted: u64,
    pub committed: u8,
}

/// `LanceAggregateSpec` of `lance_host.h`.
#[repr(C)]
pub struct AggregateSpec {
    pub struct_size: usize,
    pub group_by: *const *const c_char,
    pub num_group_by: usize,
    pub functions: *const i32,
    pub columns: *const *const c_char,
    pub aliases: *const *const c_char,
    pub num_aggregates: usize,
    pub filter_sql: *const c_char,
    pub expressions: *const *const c_char,
    pub group_by_expressions: *const *const c_char,
}

/// `LanceVectorQuery` of `lance_host.h`.
#[repr(C)]
pub struct VectorQuery {
    pub struct_size: usize,
    pub column: *const c_char,
    pub vector: *const c_void,
    pub dimension: usize,
    pub element_type: i32,
    pub k: u64,
    pub metric: i32,
    pub nprobes: u32,
    pub refine_factor: u32,
    pub ef: u32,
    pub prefilter_sql: *const c_char,
    pub columns: *const *const c_char,
    pub num_columns: usize,
    pub with_row_id: bool,
    pub defer_refine: bool,
    pub num_queries: u64,
    pub distance_lower: f32,
    pub distance_upper: f32,
    pub distance_bounds: u32,
}

pub const ELEMENT_F32: i32 = 2;

/// `LanceTextQuery` of `lance_host.h`.
#[repr(C)]
pub struct TextQuery {
    pub struct_size: usize,
    pub column: *const c_char,
    pub text: *const c_char,
    pub match_kind: i32,
    pub slop: u32,
    pub k: u64,
    pub prefilter_sql: *const c_char,
    pub columns: *const *const c_char,
    pub num_columns: usize,
    pub with_row_id: bool,
}

/// `LanceFragmentStats` of `lance_host.h`.
#[repr(C)]
#[derive(Default)]
pub struct FragmentStats {
    pub struct_size: usize,
    pub fragment_id: u64,
    pub physical_rows: u64,
    pub deleted_rows: u64,
    pub bytes_on_disk: u64,
    pub has_bytes_on_disk: bool,
}

/// `LanceColumnStats` of `lance_host.h`.
#[repr(C)]
pub struct ColumnStats {
    pub struct_size: usize,
    pub name: *const c_char,
    pub bytes_on_disk: u64,
    pub has_bytes_on_disk: bool,
}

pub const WRITE_CREATE: i32 = 0;
pub const WRITE_APPEND: i32 = 1;
pub const WRITE_OVERWRITE: i32 = 2;

type Strs = *const *const c_char;
type Stream = *mut FFI_ArrowArrayStream;

macro_rules! library_api {
    ($( fn $name:ident ( $($arg:ty),* ) -> $ret:ty; )*) => {
        /// Entry points of the loaded library.
        #[allow(non_snake_case)]
        pub struct Api {
            $( pub $name: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        impl Api {
            fn load(lib: *mut c_void) -> std::result::Result<Api, String> {
                Ok(Api {
                    $( $name: {
                        let name = concat!(stringify!($name), "\0");
                        // SAFETY: `lib` is a live handle from dlopen; the name is NUL-terminated.
                        let sym = unsafe { libc::dlsym(lib, name.as_ptr() as *const c_char) };
                        if sym.is_null() {
                            return Err(format!(
                                "the loaded liblance_host has no `{}` (a library older than this driver?)",
                                stringify!($name)
                            ));
                        }
                        // SAFETY: the symbol is the function `lance_host.h` declares with this
                        // signature.
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(sym) }
                    }, )*
                })
            }
        }
    };
}

library_api! {
    fn lance_last_error_code() -> i32;
    fn lance_last_error_message() -> *const c_char;
    fn lance_error_code_name(i32) -> *const c_char;
    fn lance_host_version() -> *const c_char;
    fn lance_catalog_open(Strs) -> Handle;
    fn lance_catalog_free(Handle) -> ();
    fn lance_catalog_list_namespaces(Handle, Strs, usize, bool, *mut Handle) -> i32;
    fn lance_namespace_list_count(Handle) -> usize;
    fn lance_namespace_list_depth(Handle, usize) -> usize;
    fn lance_namespace_list_part(Handle, usize, usize) -> *const c_char;
    fn lance_namespace_list_free(Handle) -> ();
    fn lance_catalog_list_tables(Handle, Strs, usize, *mut Handle) -> i32;
    fn lance_string_list_count(Handle) -> usize;
    fn lance_string_list_get(Handle, usize) -> *const c_char;
    fn lance_string_list_free(Handle) -> ();
    fn lance_catalog_describe_table(Handle, Strs, usize, *const c_char, *mut Handle) -> i32;
    fn lance_table_info_location(Handle) -> *const c_char;
    fn lance_table_info_latest_version(Handle) -> u64;
    fn lance_table_info_storage_options(Handle) -> Strs;
    fn lance_table_info_free(Handle) -> ();
    fn lance_catalog_open_table(Handle, Strs, usize, *const c_char, u64) -> Handle;
    fn lance_catalog_open_table_branch(Handle, Strs, usize, *const c_char, *const c_char, u64) -> Handle;
    fn lance_catalog_create_table(Handle, Strs, usize, *const c_char, Stream, *const WriteParams, *mut Handle, *mut WriteResult) -> i32;
    fn lance_catalog_drop_table(Handle, Strs, usize, *const c_char, bool) -> i32;
    fn lance_dataset_free(Handle) -> ();
    fn lance_dataset_version(Handle) -> u64;
    fn lance_dataset_count_rows(Handle, *mut u64) -> i32;
    fn lance_dataset_schema(Handle, *mut FFI_ArrowSchema) -> i32;
    fn lance_scan_options_init_v2(*mut ScanOptions, usize) -> i32;
    fn lance_dataset_scan_v2(Handle, *const ScanOptions, Stream) -> i32;
    fn lance_dataset_plan_scan(Handle, u64, *mut Handle) -> i32;
    fn lance_split_plan_count(Handle) -> usize;
    fn lance_split_plan_get(Handle, usize) -> Handle;
    fn lance_split_plan_free(Handle) -> ();
    fn lance_split_serialize(Handle, *mut *mut u8, *mut usize) -> i32;
    fn lance_split_deserialize(*const u8, usize) -> Handle;
    fn lance_split_uri(Handle) -> *const c_char;
    fn lance_split_open_dataset(Handle, Strs) -> Handle;
    fn lance_dataset_export_split_snapshot(Handle, Handle, *mut *mut u8, *mut usize) -> i32;
    fn lance_snapshot_open(*const u8, usize, Strs) -> Handle;
    fn lance_split_scan_v2(Handle, Handle, *const ScanOptions, Stream) -> i32;
    fn lance_split_free(Handle) -> ();
    fn lance_bytes_free(*mut u8, usize) -> ();
    fn lance_dataset_statistics_v2(Handle, *mut Handle, *mut c_void) -> i32;
    fn lance_table_stats_fragment_count(Handle) -> usize;
    fn lance_table_stats_fragment_v2(Handle, usize, *mut FragmentStats) -> i32;
    fn lance_table_stats_column_count(Handle) -> usize;
    fn lance_table_stats_column_v2(Handle, usize, *mut ColumnStats) -> i32;
    fn lance_table_stats_free(Handle) -> ();
    fn lance_dataset_plan_vector_search(Handle, *const c_char, i32, bool, u64, *mut Handle) -> i32;
    fn lance_vector_query_init_v2(*mut VectorQuery, usize) -> i32;
    fn lance_split_search_v2(Handle, Handle, *const VectorQuery, Stream) -> i32;
    fn lance_topk_merge(Stream, usize, u64, u64, Stream) -> i32;
    fn lance_text_query_init(*mut TextQuery, usize) -> i32;
    fn lance_dataset_plan_fts(Handle, *const c_char, u64, *mut Handle) -> i32;
    fn lance_dataset_fts_stats(Handle, *const TextQuery, *mut *mut u8, *mut usize, *mut c_void) -> i32;
    fn lance_split_fts_search(Handle, Handle, *const TextQuery, *const u8, usize, Stream) -> i32;
    fn lance_fts_merge(Stream, usize, u64, u64, Stream) -> i32;
    fn lance_aggregate_init_v2(*mut AggregateSpec, usize) -> i32;
    fn lance_dataset_aggregate(Handle, *const AggregateSpec, Stream, *mut c_void) -> i32;
    fn lance_write_params_init_v2(*mut WriteParams, usize) -> i32;
    fn lance_table_write(*const c_char, Handle, Stream, *const WriteParams, *mut Handle, *mut WriteResult) -> i32;
    fn lance_table_stage_write(*const c_char, Handle, Stream, *const WriteParams, *mut *mut u8, *mut usize, *mut WriteResult) -> i32;
    fn lance_table_commit(*const c_char, *const *const u8, *const usize, usize, *const WriteParams, *mut Handle, *mut WriteResult) -> i32;
    fn lance_commit_tables(usize, Strs, *const *const *const u8, *const *const usize, *const usize, *const *const WriteParams, *mut Handle, *const *mut WriteResult) -> i32;
    fn lance_staged_write_abort(*const *const u8, *const usize, usize, Strs, *mut u64) -> i32;
}

static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

fn library_candidates() -> Vec<CString> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os("LANCE_HOST_LIB") {
        if let Ok(c) = CString::new(path.as_encoded_bytes()) {
            out.push(c);
        }
        return out;
    }
    // Beside this driver's own shared object.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let here = library_candidates as *const c_void;
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(here, &mut info) } != 0 && !info.dli_fname.is_null() {
        // SAFETY: dladdr returned a NUL-terminated path owned by the loader.
        let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
        if let Some(dir) = path.parent() {
            let beside = dir.join("liblance_host.so");
            if beside.exists() {
                if let Ok(c) = CString::new(beside.as_os_str().as_encoded_bytes()) {
                    out.push(c);
                }
            }
        }
    }
    out.push(CString::new("liblance_host.so.0").unwrap());
    out.push(CString::new("liblance_host.so").unwrap());
    out
}

fn load() -> std::result::Result<Api, String> {
    let mut tried = Vec::new();
    for candidate in library_candidates() {
        // SAFETY: a NUL-terminated path; the handle is kept for the life of the process.
        let lib = unsafe { libc::dlopen(candidate.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if lib.is_null() {
            // SAFETY: dlerror returns a loader-owned message or NULL.
            let why = unsafe { libc::dlerror() };
            let why = if why.is_null() {
                String::new()
            } else {
                unsafe { CStr::from_ptr(why) }
                    .to_string_lossy()
                    .into_owned()
            };
            tried.push(format!("{} ({why})", candidate.to_string_lossy()));
            continue;
        }
        return Api::load(lib);
    }
    Err(format!(
        "lance-host ADBC driver: cannot load liblance_host (set LANCE_HOST_LIB to its path); tried: {}",
        tried.join("; ")
    ))
}

/// The loaded library, or an ADBC error saying why it could not be loaded.
pub fn api() -> Result<&'static Api> {
    match API.get_or_init(load) {
        Ok(api) => Ok(api),
        Err(message) => Err(Error::with_message_and_status(
            message.clone(),
            Status::Internal,
        )),
    }
}

/// ADBC status of a lance-host error code.
pub fn status_of(code: i32) -> Status {
    match code {
        1 => Status::InvalidArguments,
        2 => Status::NotFound,
        3 => Status::IO,
        4 => Status::NotImplemented,
        7 => Status::InvalidState,
        8 => Status::Unauthenticated,
        9 => Status::Unauthorized,
        10 => Status::InvalidData,
        11 => Status::Timeout,
        12 => Status::Cancelled,
        13 => Status::Integrity,
        15 => Status::InvalidArguments,
        _ => Status::Internal,
    }
}

/// The error of the last failing library call on this thread, as an ADBC error: the library's
/// message and code (see `error_of`).
pub fn last_error(api: &Api, context: &str) -> Error {
    // SAFETY: both functions only read thread-local state; the message is library-owned.
    let code = unsafe { (api.lance_last_error_code)() };
    let message = unsafe { cstr((api.lance_last_error_message)()) };
    error_of(api, code, context, &message)
}

pub fn error_of(api: &Api, code: i32, context: &str, message: &str) -> Error {
    // SAFETY: static string owned by the library.
    let name = unsafe { cstr((api.lance_error_code_name)(code)) };
    let mut err =
        Error::with_message_and_status(format!("{context}: {message} [{name}]"), status_of(code));
    // ADBC exposes error details only under this vendor code (ADBC_ERROR_VENDOR_CODE_PRIVATE_DATA);
    // the library's code travels as the details `lance_host.error_code` (its name) and
    // `lance_host.error_number` (the number as decimal text).
    err.vendor_code = i32::MIN;
    err.details = Some(vec![
        ("lance_host.error_code".to_string(), name.into_bytes()),
        (
            "lance_host.error_number".to_string(),
            code.to_string().into_bytes(),
        ),
        (
            "lance_host.message".to_string(),
            message.as_bytes().to_vec(),
        ),
    ]);
    err
}

/// The library's error code an error of `error_of` carries (None: the driver's own error).
pub fn library_code(err: &Error) -> Option<i32> {
    err.details
        .as_ref()?
        .iter()
        .find(|(k, _)| k == "lance_host.error_number")
        .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
}

/// Check a status-returning call.
pub fn check(api: &Api, code: i32, context: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        // The message belongs to this call (the library sets it with the code).
        // SAFETY: library-owned, read at once.
        let message = unsafe { cstr((api.lance_last_error_message)()) };
        Err(error_of(api, code, context, &message))
    }
}

/// Copy a library-owned C string (NULL = "").
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string.
pub unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

pub fn invalid(message: impl Into<String>) -> Error {
    Error::with_message_and_status(message, Status::InvalidArguments)
}

pub fn not_implemented(message: impl Into<String>) -> Error {
    Error::with_message_and_status(message, Status::NotImplemented)
}

pub fn invalid_state(message: impl Into<String>) -> Error {
    Error::with_message_and_status(message, Status::InvalidState)
}

/// A C string for an argument; a NUL byte inside is refused.
pub fn c_string(value: &str, what: &str) -> Result<CString> {
    CString::new(value).map_err(|_| invalid(format!("{what} contains a NUL byte")))
}

/// A NULL-terminated array of C strings (key/value pairs or a list), kept alive with its
/// strings.
pub struct CStrArray {
    _strings: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

// SAFETY: the pointers point into `_strings`, owned by the same value and never mutated.
unsafe impl Send for CStrArray {}
unsafe impl Sync for CStrArray {}

impl CStrArray {
    pub fn new<I, S>(items: I, what: &str) -> Result<CStrArray>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let strings = items
            .into_iter()
            .map(|s| c_string(s.as_ref(), what))
            .collect::<Result<Vec<_>>>()?;
        let mut ptrs: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Ok(CStrArray {
            _strings: strings,
            ptrs,
        })
    }

    pub fn len(&self) -> usize {
        self.ptrs.len() - 1
    }

    pub fn as_ptr(&self) -> *const *const c_char {
        self.ptrs.as_ptr()
    }
}

/// Copy a NULL-terminated key/value array the library owns.
///
/// # Safety
/// `p` is NULL or a NULL-terminated array of valid C strings.
pub unsafe fn copy_pairs(mut p: *const *const c_char) -> Vec<String> {
    let mut out = Vec::new();
    if p.is_null() {
        return out;
    }
    while !(*p).is_null() {
        out.push(cstr(*p));
        p = p.add(1);
    }
    out
}
