//! C ABI of credential refresh through a host callback (`snapshot::credentials`).

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::{guard_code, kv_arg, str_arg};
use crate::error::{HostError, LanceErrorCode};

/// Where a credential callback writes the new storage options (`lance_storage_options_sink_set`).
/// Valid only during the callback.
pub struct LanceStorageOptionsSink {
    options: HashMap<String, String>,
}

/// Asked for new storage options of the table at `table_uri` (valid during the call): set each
/// option with `lance_storage_options_sink_set(sink, key, value)` — all of them, the credential
/// and `expires_at_millis` included (the set replaces the current options) — and return LANCE_OK.
/// Any other return is the refresh's failure: LANCE_ERR_PERMISSION_DENIED or
/// LANCE_ERR_UNAUTHENTICATED fail the operation that needed the options with that code, other
/// codes with LANCE_ERR_IO.
pub type LanceCredentialsCallback =
    Option<unsafe extern "C" fn(table_uri: *const c_char, sink: *mut LanceStorageOptionsSink, user_data: *mut c_void) -> i32>;

/// Called once with `user_data` when the library no longer needs a registration's callback.
pub type LanceFreeUserData = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The host's pointer and its release, carried across threads.
struct HostData {
    data: *mut c_void,
    free: LanceFreeUserData,
}
// SAFETY: the host promises (header) that its callback and user data may be used from any
// thread; the library only passes the pointer back, and releases it once.
unsafe impl Send for HostData {}
unsafe impl Sync for HostData {}

impl Drop for HostData {
    fn drop(&mut self) {
        if let Some(free) = self.free {
            // SAFETY: the release the host registered for exactly this pointer, called once.
            unsafe { free(self.data) }
        }
    }
}

/// Set one option of the answer of a credential callback. Borrows `key` and `value` (copied).
/// Call only from inside the callback, with the `sink` it was given; thread-safe (each running
/// callback has a sink of its own). Returns LANCE_OK;
/// LANCE_ERR_INVALID_ARGUMENT for NULL arguments or strings that are not UTF-8.
#[no_mangle]
pub extern "C" fn lance_storage_options_sink_set(
    sink: *mut LanceStorageOptionsSink,
    key: *const c_char,
    value: *const c_char,
) -> i32 {
    guard_code(|| {
        if sink.is_null() {
            return Err(HostError::invalid("sink is NULL"));
        }
        let key = str_arg(key, "key")?.to_string();
        let value = str_arg(value, "value")?.to_string();
        // SAFETY: a sink the library handed to the callback that is running now.
        unsafe { (*sink).options.insert(key, value) };
        Ok(())
    })
}

/// Register `callback` (since 0.15) as the source of new storage options for the table at
/// `uri`, for a host that keeps credentials in its own secret store: every open and write of
/// that table in this process with exactly `storage_options` (NULL-terminated key/value array;
/// they must carry `expires_at_millis`, epoch milliseconds) refreshes them through the
/// callback shortly before they expire (`refresh_offset_millis`, default one minute or half the
/// remaining lifetime), as options a catalog vends are refreshed through its namespace. A later
/// registration of the same table and options replaces this one; other options never use it.
///
/// The callback runs on the library's threads, at most one refresh per opened table at a time,
/// possibly concurrently for different tables: it and `user_data` must be usable from any
/// thread until `free_user_data` (may be NULL) is called with `user_data`, once, when no opened
/// table needs them any more. It must not block for long: the operations that wait for the
/// new options wait for it. Borrows `uri` and `storage_options` (copied). Thread-safe. Returns
/// LANCE_OK; LANCE_ERR_INVALID_ARGUMENT for NULL or empty `uri`, a NULL callback, or options
/// without `expires_at_millis` (then `free_user_data` is not called).
#[no_mangle]
pub extern "C" fn lance_credentials_register(
    uri: *const c_char,
    storage_options: *const *const c_char,
    callback: LanceCredentialsCallback,
    user_data: *mut c_void,
    free_user_data: LanceFreeUserData,
) -> i32 {
    guard_code(|| {
        let uri = str_arg(uri, "uri")?.to_string();
        let options = kv_arg(storage_options, "storage_options")?;
        let Some(cb) = callback else {
            return Err(HostError::invalid("callback is NULL"));
        };
        if crate::snapshot::credentials::expires_at(&options).is_none() {
            return Err(HostError::invalid(format!(
                "storage options registered for refresh must say when they expire ('{}', epoch milliseconds)",
                crate::snapshot::credentials::EXPIRES_AT_MILLIS
            )));
        }
        let data = Arc::new(HostData { data: user_data, free: free_user_data });
        let fetch = move |table: &str| -> std::result::Result<HashMap<String, String>, String> {
            let table = super::owned_cstring(table);
            let mut sink = LanceStorageOptionsSink { options: HashMap::new() };
            // SAFETY: the host's callback for exactly this call shape, with its own user data.
            let rc = unsafe { cb(table.as_ptr(), &mut sink, data.data) };
            match rc {
                0 => Ok(sink.options),
                code => Err(callback_failure(code)),
            }
        };
        crate::snapshot::credentials::register_host(&uri, options, Arc::new(fetch))
    })
}

/// The message of a callback's failure code: words the error mapping recognises for the two
/// credential codes.
fn callback_failure(code: i32) -> String {
    // SAFETY: lance_error_code_name returns a static NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(super::error::lance_error_code_name(code)) }.to_string_lossy();
    if code == LanceErrorCode::LANCE_ERR_PERMISSION_DENIED as i32 {
        format!("the callback answered {name} (permission denied)")
    } else if code == LanceErrorCode::LANCE_ERR_UNAUTHENTICATED as i32 {
        format!("the callback answered {name} (unauthenticated)")
    } else {
        format!("the callback answered {name}")
    }
}
