//! Thread-local last error and error-code names.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use crate::error::{HostError, LanceErrorCode};

struct LastError {
    code: LanceErrorCode,
    message: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

pub(crate) fn set_last_error(err: HostError) {
    let message = super::owned_cstring(&err.message);
    LAST_ERROR.with(|slot| {
        *slot.borrow_mut() = Some(LastError {
            code: err.code,
            message,
        })
    });
}

/// Code of the last failing call on the calling thread (`LANCE_OK` if none failed yet).
///
/// Reading it has no side effect: it neither clears nor changes the last error.
/// Thread-safe (the value is per thread).
#[no_mangle]
pub extern "C" fn lance_last_error_code() -> LanceErrorCode {
    LAST_ERROR
        .try_with(|slot| {
            slot.borrow()
                .as_ref()
                .map(|e| e.code)
                .unwrap_or(LanceErrorCode::LANCE_OK)
        })
        .unwrap_or(LanceErrorCode::LANCE_OK)
}

/// Message of the last failing call on the calling thread, or "" if none failed yet.
///
/// The library owns the string; do not free it. Valid until the next failing call on the same
/// thread. Reading it has no side effect. Thread-safe (the value is per thread).
#[no_mangle]
pub extern "C" fn lance_last_error_message() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|slot| {
            slot.borrow()
                .as_ref()
                .map(|e| e.message.as_ptr())
                .unwrap_or(EMPTY.as_ptr() as *const c_char)
        })
        .unwrap_or(EMPTY.as_ptr() as *const c_char)
}

/// Constant name of an error code, e.g. "LANCE_ERR_NOT_FOUND"; "LANCE_ERR_UNKNOWN" for a value
/// that is not a code.
///
/// The library owns the string (static storage); do not free it. Thread-safe.
#[no_mangle]
pub extern "C" fn lance_error_code_name(code: i32) -> *const c_char {
    let name: &'static [u8] = match code {
        0 => b"LANCE_OK\0",
        1 => b"LANCE_ERR_INVALID_ARGUMENT\0",
        2 => b"LANCE_ERR_NOT_FOUND\0",
        3 => b"LANCE_ERR_IO\0",
        4 => b"LANCE_ERR_NOT_SUPPORTED\0",
        5 => b"LANCE_ERR_INTERNAL\0",
        6 => b"LANCE_ERR_PANIC\0",
        7 => b"LANCE_ERR_FAILED_PRECONDITION\0",
        8 => b"LANCE_ERR_UNAUTHENTICATED\0",
        9 => b"LANCE_ERR_PERMISSION_DENIED\0",
        10 => b"LANCE_ERR_CORRUPT\0",
        11 => b"LANCE_ERR_TIMEOUT\0",
        12 => b"LANCE_ERR_CANCELLED\0",
        13 => b"LANCE_ERR_CONFLICT\0",
        14 => b"LANCE_ERR_HOST_STREAM\0",
        15 => b"LANCE_ERR_OUT_OF_RANGE\0",
        _ => b"LANCE_ERR_UNKNOWN\0",
    };
    name.as_ptr() as *const c_char
}

/// Version of the loaded library as "major.minor.patch" — compare with `LANCE_HOST_VERSION`, the
/// version of the header a caller was built with. A caller built with header X.Y runs on any
/// library X.Z with Z >= Y (see "ABI compatibility" in the README).
///
/// The library owns the string (static storage); do not free it. Thread-safe.
#[no_mangle]
pub extern "C" fn lance_host_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// How the loaded library was compiled: "release" (optimized) or "debug" (Cargo's dev profile,
/// as the demo and the test command build it: index training and full scans are many times
/// slower). Hosts can log it at start-up or refuse a debug library in production.
///
/// The library owns the string (static storage); do not free it. Thread-safe.
#[no_mangle]
pub extern "C" fn lance_host_build_profile() -> *const c_char {
    if cfg!(debug_assertions) {
        c"debug".as_ptr()
    } else {
        c"release".as_ptr()
    }
}

/// The optional features this build of the library carries, comma-separated: the object stores
/// beyond S3 and local paths (`store-azure`, `store-gcs`, `store-oss`, `store-cos`, `store-tos`,
/// `store-hf`), `commit-dynamodb` (`s3+ddb://`), the full-text tokenizers `tokenizer-jieba` and
/// `tokenizer-lindera`, and `mimalloc` (the allocator). The default build has all but
/// `mimalloc`, which release builds through CMake add; docs/building.md lists them. An empty
/// string is a build with none of them. Names may be added in later versions; none is renamed.
///
/// The library owns the string (static storage); do not free it. Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn lance_host_build_features() -> *const c_char {
    crate::build_info::features().as_ptr()
}

const fn parse_version_part(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0u32;
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}

const VERSION_NUMBER: u32 = parse_version_part(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
    + parse_version_part(env!("CARGO_PKG_VERSION_MINOR")) * 100
    + parse_version_part(env!("CARGO_PKG_VERSION_PATCH"));

/// Version of the loaded library as `major * 10000 + minor * 100 + patch` (0.4.0 is 400), to
/// compare with `LANCE_HOST_VERSION_NUMBER` of the header a caller was built with: the library
/// serves the caller if it has the same major version and a number at least as large
/// (`lance_host_version_number() >= LANCE_HOST_VERSION_NUMBER`).
///
/// Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn lance_host_version_number() -> u32 {
    VERSION_NUMBER
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_number_matches_the_package_version() {
        let parts: Vec<u32> = env!("CARGO_PKG_VERSION").split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(super::lance_host_version_number(), parts[0] * 10000 + parts[1] * 100 + parts[2]);
    }
}
