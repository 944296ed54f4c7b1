//! The C ABI. Every exported function is a thin adapter: catch panics, validate pointers and
//! strings, call the safe layer, write out-parameters, return a code. All raw-pointer handling
//! of the library lives in this module tree.

pub mod aggregate;
pub mod blob;
pub mod branch;
pub mod catalog;
pub mod changes;
pub mod changes_by_predicate;
pub mod credentials;
/// cbindgen:ignore
mod compat;
pub mod dataset;
pub mod dynamic_filter;
pub mod error;
pub mod fts;
pub mod handles;
pub mod maintenance;
pub mod index;
pub mod index_build;
pub mod index_segments;
mod import;
pub mod split;
pub mod scan;
pub mod search;
pub mod session;
pub(crate) mod sized;
pub mod take;
pub mod write;

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};

use crate::error::{HostError, LanceErrorCode, Result};
use self::error::set_last_error;

/// Upper bound on key/value pairs read from a NULL-terminated array; protects against a
/// missing terminator.
const MAX_KV_PAIRS: usize = 4096;

/// Run `f` for a function that returns an error code.
pub(crate) fn guard_code(f: impl FnOnce() -> Result<()>) -> i32 {
    match crate::logging::catch_quietly(f) {
        Ok(Ok(())) => LanceErrorCode::LANCE_OK as i32,
        Ok(Err(e)) => {
            let code = e.code as i32;
            set_last_error(e);
            code
        }
        Err(panic) => {
            set_last_error(panic_error(panic));
            LanceErrorCode::LANCE_ERR_PANIC as i32
        }
    }
}

/// Run `f` for a function that returns a pointer (NULL on failure).
pub(crate) fn guard_ptr<T>(f: impl FnOnce() -> Result<*mut T>) -> *mut T {
    match crate::logging::catch_quietly(f) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            set_last_error(e);
            std::ptr::null_mut()
        }
        Err(panic) => {
            set_last_error(panic_error(panic));
            std::ptr::null_mut()
        }
    }
}

/// Run `f` for an infallible-looking accessor that returns a plain value; `fallback` is
/// returned (and the last error set) on failure.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    match crate::logging::catch_quietly(f) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_last_error(e);
            fallback
        }
        Err(panic) => {
            set_last_error(panic_error(panic));
            fallback
        }
    }
}

/// Free-functions: never fail, never unwind.
pub(crate) fn guard_free(f: impl FnOnce()) {
    let _ = crate::logging::catch_quietly(f);
}

fn panic_error(panic: Box<dyn std::any::Any + Send>) -> HostError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_string());
    HostError::new(
        LanceErrorCode::LANCE_ERR_PANIC,
        format!("internal panic caught at the C boundary: {what}"),
    )
}

/// A required NUL-terminated UTF-8 string argument.
pub(crate) fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(HostError::invalid(format!("{name} is NULL")));
    }
    // SAFETY: the caller passes a NUL-terminated string valid for the call.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map_err(|e| HostError::invalid(format!("{name} is not valid UTF-8: {e}")))
}

/// An optional string argument: NULL = absent.
pub(crate) fn opt_str_arg<'a>(p: *const c_char, name: &str) -> Result<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        str_arg(p, name).map(Some)
    }
}

/// A (pointer, length) array argument: `(NULL, 0)` is an empty list, `(NULL, n > 0)` is an error.
pub(crate) fn slice_arg<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(HostError::invalid(format!(
            "{name} is NULL but its length is {len}"
        )));
    }
    // SAFETY: the caller passes `len` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// An array of C strings given as (pointer, count).
pub(crate) fn str_list_arg(p: *const *const c_char, len: usize, name: &str) -> Result<Vec<String>> {
    let ptrs = slice_arg(p, len, name)?;
    ptrs.iter()
        .enumerate()
        .map(|(i, s)| str_arg(*s, &format!("{name}[{i}]")).map(str::to_string))
        .collect()
}

/// A NULL-terminated array of alternating keys and values: `{k0, v0, k1, v1, ..., NULL}`.
/// NULL itself is an empty map.
pub(crate) fn kv_arg(p: *const *const c_char, name: &str) -> Result<HashMap<String, String>> {
    let mut map = HashMap::new();
    if p.is_null() {
        return Ok(map);
    }
    for i in 0..MAX_KV_PAIRS {
        // SAFETY: the array is NULL-terminated at an even position; we stop at the terminator.
        let key_ptr = unsafe { *p.add(2 * i) };
        if key_ptr.is_null() {
            return Ok(map);
        }
        let key = str_arg(key_ptr, &format!("{name} key #{i}"))?;
        let value_ptr = unsafe { *p.add(2 * i + 1) };
        if value_ptr.is_null() {
            return Err(HostError::invalid(format!(
                "{name}: key '{key}' has no value (the array must hold key/value pairs \
                 followed by one NULL)"
            )));
        }
        let value = str_arg(value_ptr, &format!("{name} value of '{key}'"))?;
        if map.insert(key.to_string(), value.to_string()).is_some() {
            return Err(HostError::invalid(format!("{name}: key '{key}' appears twice")));
        }
    }
    Err(HostError::invalid(format!(
        "{name} has more than {MAX_KV_PAIRS} pairs or lacks its NULL terminator"
    )))
}

/// Check an out-parameter before doing any work.
pub(crate) fn out_arg<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T> {
    if p.is_null() {
        return Err(HostError::invalid(format!("{name} is NULL")));
    }
    // SAFETY: non-NULL and, per the contract, valid for writes of T.
    Ok(unsafe { &mut *p })
}

/// Handles are boxed Rust values: created once with `into_raw`, freed once with `free_handle`.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Hand a new pinned version to the caller through an optional `*mut *mut LanceDataset` out
/// parameter (NULL = the caller does not want it; the snapshot is dropped).
pub(crate) fn dataset_out(snapshot: crate::snapshot::Snapshot, out: *mut *mut handles::LanceDataset) -> Result<()> {
    if !out.is_null() {
        *out_arg(out, "out_dataset")? = into_handle(handles::LanceDataset::new(snapshot));
    }
    Ok(())
}

/// Borrow a handle for the duration of a call.
pub(crate) fn handle_ref<'a, T>(p: *const T, name: &str) -> Result<&'a T> {
    if p.is_null() {
        return Err(HostError::invalid(format!("{name} is NULL")));
    }
    // SAFETY: the pointer came from `into_handle` and has not been freed (caller contract).
    Ok(unsafe { &*p })
}

/// Free a handle created by `into_handle`; NULL is ignored.
pub(crate) fn free_handle<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: the pointer came from `into_handle` and is freed exactly once.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Item `index` of a list held by a handle, or INVALID_ARGUMENT naming the index and count.
/// `n` byte strings given as an array of pointers and an array of lengths (`name[i]` in messages).
pub(crate) fn byte_list_arg<'a>(ptrs: *const *const u8, lens: *const usize, n: usize, name: &str) -> Result<Vec<&'a [u8]>> {
    let ptrs = slice_arg(ptrs, n, name)?;
    let lens = slice_arg(lens, n, &format!("{name} lengths"))?;
    ptrs.iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (p, len))| slice_arg(*p, *len, &format!("{name}[{i}]")))
        .collect()
}

pub(crate) fn item_at<'a, T>(items: &'a [T], index: usize, what: &str) -> Result<&'a T> {
    items.get(index).ok_or_else(|| {
        HostError::invalid(format!(
            "{what} {index} is out of range (count {})",
            items.len()
        ))
    })
}

/// Hand a Vec to C as (pointer, length); freed by `free_array` with the same length.
pub(crate) fn into_array<T>(items: Vec<T>) -> (*mut T, usize) {
    let boxed = items.into_boxed_slice();
    let len = boxed.len();
    if len == 0 {
        return (std::ptr::null_mut(), 0);
    }
    (Box::into_raw(boxed) as *mut T, len)
}

/// Free an array created by `into_array`; NULL is ignored.
pub(crate) fn free_array<T>(p: *mut T, len: usize) {
    if !p.is_null() && len > 0 {
        // SAFETY: (p, len) came from `into_array`.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)) });
    }
}

/// A string owned by a handle, handed out as `const char*`.
pub(crate) fn owned_cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).expect("NULs were removed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_panic_codes() {
        let code = guard_code(|| panic!("boom {}", 7));
        assert_eq!(code, LanceErrorCode::LANCE_ERR_PANIC as i32);
        assert_eq!(error::lance_last_error_code(), LanceErrorCode::LANCE_ERR_PANIC);
        let msg = unsafe { CStr::from_ptr(error::lance_last_error_message()) };
        assert!(msg.to_str().unwrap().contains("boom 7"));
        let p: *mut u8 = guard_ptr(|| panic!("ptr"));
        assert!(p.is_null());
        assert_eq!(guard_value(42u64, || panic!("value")), 42);
        guard_free(|| panic!("free"));
    }

    #[test]
    fn empty_and_null_lists() {
        assert!(slice_arg::<u64>(std::ptr::null(), 0, "x").unwrap().is_empty());
        let err = slice_arg::<u64>(std::ptr::null(), 2, "ids").unwrap_err();
        assert_eq!(err.code, LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT);
        assert!(err.message.contains("ids"));
        assert!(kv_arg(std::ptr::null(), "opts").unwrap().is_empty());
    }
}
