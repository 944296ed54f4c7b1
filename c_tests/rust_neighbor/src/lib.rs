//! A second Rust static library, as a host might already link one (its own Rust component):
//! it has its own copy of the Rust standard library, allocates, runs a thread, formats and
//! catches a panic, so that a program linking it next to liblance_host.a exercises both
//! runtimes side by side.

use std::ffi::c_char;

/// Sum of `values` computed on a spawned thread; -1 for NULL with a non-zero length.
///
/// # Safety
/// `values` points to `len` readable `i64`s (or is NULL with `len == 0`).
#[no_mangle]
pub unsafe extern "C" fn neighbor_sum(values: *const i64, len: usize) -> i64 {
    if values.is_null() && len > 0 {
        return -1;
    }
    let v: Vec<i64> = if len == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(values, len) }.to_vec() };
    std::thread::spawn(move || v.iter().sum()).join().unwrap_or(-1)
}

/// Writes "neighbor:<n>" into `buf` (NUL-terminated, truncated to `cap`); returns whether a
/// deliberate panic inside was caught (always true: unwinding works in this library too).
///
/// # Safety
/// `buf` points to `cap` writable bytes, `cap >= 1`.
#[no_mangle]
pub unsafe extern "C" fn neighbor_describe(n: u64, buf: *mut c_char, cap: usize) -> bool {
    let caught = std::panic::catch_unwind(|| {
        if n != u64::MAX {
            std::panic::resume_unwind(Box::new("deliberate"));
        }
    })
    .is_err();
    let text = format!("neighbor:{n}");
    let bytes = text.as_bytes();
    let k = bytes.len().min(cap - 1);
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, k);
        *buf.add(k) = 0;
    }
    caught
}
