//! Structs the caller allocates and passes by pointer, made able to grow.
//!
//! The scheme (the README's "ABI compatibility"): every such struct starts with
//! `size_t struct_size`, the `sizeof` of the struct as the caller compiled it. Inputs get it
//! from their `*_init_v2(out, sizeof *out)`; for outputs the caller sets it before the call.
//! The library reads and writes only the caller's `struct_size` bytes:
//! - an input from an older caller (smaller size) gets the defaults for the fields it lacks;
//!   one from a newer caller (larger size) is accepted when every byte the library does not know
//!   is zero (a field left at its "unset" value), and is LANCE_ERR_NOT_SUPPORTED otherwise;
//! - an output is written up to the smaller of the two sizes; bytes the library does not know
//!   are zeroed, so a newer caller reads its new fields as 0 ("not reported");
//! - a size below the struct's first sized revision (0 included: the caller forgot it) is
//!   LANCE_ERR_INVALID_ARGUMENT.
//!
//! Rule for adding a field: append it at or after the struct's current `sizeof` (never into
//! trailing padding), and keep its zero value meaning "unset", so that old callers' sizes cover
//! whole fields only and zeroed new fields behave as before.
//!
//! The 0.1 layouts (the same fields without `struct_size`) are still served, under the 0.1
//! function names, by `compat.rs`: since every struct's alignment is at most 8, the 0.1 layout
//! is byte for byte the current one after its leading `size_t`.

use std::mem::size_of;

use crate::error::{HostError, LanceErrorCode, Result};

/// Bytes of the leading `struct_size` field.
const HEADER: usize = size_of::<usize>();

/// Which layout a pointer refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Leading `struct_size` (every `_v2` entry point).
    Sized,
    /// The 0.1 layout without `struct_size` (the 0.1 entry points in `compat.rs`).
    V0,
}

/// A `#[repr(C)]` struct whose first field is `struct_size: usize`.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, start with `pub struct_size: usize`, have alignment at
/// most 8 and consist of fields for which every byte pattern a C caller may store (0/1 for
/// `bool`) is valid. `V0_SIZE` must be the size of the 0.1 layout, which must equal the
/// current layout after the header up to that size.
pub(crate) unsafe trait Extensible: Copy {
    /// The C name, for messages.
    const NAME: &'static str;
    /// The smallest `struct_size` accepted: `sizeof` of the first sized revision.
    const MIN_SIZE: usize;
    /// `sizeof` of the 0.1 layout.
    const V0_SIZE: usize;
    /// The defaults, with `struct_size = sizeof(Self)`.
    fn initial() -> Self;
}

fn size_error<T: Extensible>(size: usize, what: &str) -> HostError {
    HostError::invalid(format!(
        "{what}->struct_size is {size}, but a {} has at least {} bytes: set struct_size to \
         sizeof({}) (the *_init_v2 functions do)",
        T::NAME,
        T::MIN_SIZE,
        T::NAME
    ))
}

/// The caller's `struct_size` at `p` (non-NULL), checked against the minimum.
///
/// # Safety
/// `p` must be valid for reads of `size_of::<usize>()` bytes.
unsafe fn caller_size<T: Extensible>(p: *const u8, what: &str) -> Result<usize> {
    // SAFETY: the caller guarantees the header is readable; it may be unaligned in a packed
    // host struct, hence read_unaligned.
    let size = unsafe { std::ptr::read_unaligned(p as *const usize) };
    if size < T::MIN_SIZE {
        return Err(size_error::<T>(size, what));
    }
    Ok(size)
}

/// Read an input struct; NULL gives `None`. Unknown trailing bytes must be zero.
pub(crate) fn read_in<T: Extensible>(p: *const T, layout: Layout, what: &str) -> Result<Option<T>> {
    if p.is_null() {
        return Ok(None);
    }
    let src = p as *const u8;
    let mut value = T::initial();
    let dst = &mut value as *mut T as *mut u8;
    match layout {
        Layout::V0 => {
            // SAFETY: a 0.1 caller's struct is V0_SIZE readable bytes; `value` has HEADER +
            // V0_SIZE bytes (checked by the tests of every implementor).
            unsafe { std::ptr::copy_nonoverlapping(src, dst.add(HEADER), T::V0_SIZE) };
        }
        Layout::Sized => {
            // SAFETY: the contract of every `_v2` function: `p` points to `struct_size`
            // readable bytes starting with the header.
            let size = unsafe { caller_size::<T>(src, what)? };
            let known = size.min(size_of::<T>());
            if size > known {
                // SAFETY: as above, the caller's struct has `size` readable bytes.
                let tail = unsafe { std::slice::from_raw_parts(src.add(known), size - known) };
                if let Some(at) = tail.iter().position(|b| *b != 0) {
                    return Err(HostError::new(
                        LanceErrorCode::LANCE_ERR_NOT_SUPPORTED,
                        format!(
                            "{what} sets byte {} of its {size}-byte {}, but this library \
                             ({}) knows only {} bytes of it: the caller was built against a \
                             newer header and uses a field this version does not have",
                            known + at,
                            T::NAME,
                            env!("CARGO_PKG_VERSION"),
                            size_of::<T>()
                        ),
                    ));
                }
            }
            // SAFETY: both sides have at least `known` bytes; the header is skipped.
            unsafe { std::ptr::copy_nonoverlapping(src.add(HEADER), dst.add(HEADER), known - HEADER) };
        }
    }
    // Normalise the header: the value now describes this library's layout.
    // SAFETY: `value` starts with the usize header.
    unsafe { std::ptr::write_unaligned(dst as *mut usize, size_of::<T>()) };
    Ok(Some(value))
}

/// A checked place to write an output struct to (see `out_slot`).
pub(crate) struct OutSlot<T: Extensible> {
    p: *mut T,
    layout: Layout,
    size: usize,
}

/// Check an output struct before any work: NULL gives `None`, a too-small `struct_size` an
/// error. Nothing is written until `OutSlot::write`.
pub(crate) fn out_slot<T: Extensible>(p: *mut T, layout: Layout, what: &str) -> Result<Option<OutSlot<T>>> {
    if p.is_null() {
        return Ok(None);
    }
    let size = match layout {
        Layout::V0 => T::V0_SIZE,
        // SAFETY: the contract of every `_v2` function: `p` starts with a readable header.
        Layout::Sized => unsafe { caller_size::<T>(p as *const u8, what)? },
    };
    Ok(Some(OutSlot { p, layout, size }))
}

/// Like `out_slot` for an output that must not be NULL.
pub(crate) fn required_out<T: Extensible>(p: *mut T, layout: Layout, what: &str) -> Result<OutSlot<T>> {
    out_slot(p, layout, what)?.ok_or_else(|| HostError::invalid(format!("{what} is NULL")))
}

impl<T: Extensible> OutSlot<T> {
    /// Write `value`'s fields into the caller's struct (its `struct_size` is left as it is).
    pub(crate) fn write(self, value: &T) {
        let src = value as *const T as *const u8;
        let dst = self.p as *mut u8;
        match self.layout {
            Layout::V0 => {
                // SAFETY: the 0.1 struct has V0_SIZE writable bytes; `value` has HEADER + V0_SIZE.
                unsafe { std::ptr::copy_nonoverlapping(src.add(HEADER), dst, T::V0_SIZE) };
            }
            Layout::Sized => {
                let known = self.size.min(size_of::<T>());
                // SAFETY: the caller's struct has `size` writable bytes (checked >= MIN_SIZE >
                // HEADER); `value` has size_of::<T>().
                unsafe {
                    std::ptr::copy_nonoverlapping(src.add(HEADER), dst.add(HEADER), known - HEADER);
                    std::ptr::write_bytes(dst.add(known), 0, self.size - known);
                }
            }
        }
    }
}

/// Fill `out` (the caller's struct of `struct_size` bytes) with the defaults: the body of
/// every `*_init_v2` function.
pub(crate) fn init_out<T: Extensible>(out: *mut T, struct_size: usize, what: &str) -> Result<()> {
    if out.is_null() {
        return Err(HostError::invalid(format!("{what} is NULL")));
    }
    if struct_size < T::MIN_SIZE {
        return Err(size_error::<T>(struct_size, what));
    }
    let value = T::initial();
    let dst = out as *mut u8;
    let known = struct_size.min(size_of::<T>());
    // SAFETY: the caller's struct has `struct_size` writable bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(&value as *const T as *const u8, dst, known);
        std::ptr::write_bytes(dst.add(known), 0, struct_size - known);
        std::ptr::write_unaligned(dst as *mut usize, struct_size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A struct as a later revision might have it: `b` was added after the first sized
    /// revision, whose size (16) is the minimum.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Grown {
        struct_size: usize,
        a: u64,
        b: u64,
    }

    unsafe impl Extensible for Grown {
        const NAME: &'static str = "Grown";
        const MIN_SIZE: usize = 16;
        const V0_SIZE: usize = 8;
        fn initial() -> Self {
            Grown { struct_size: size_of::<Self>(), a: 1, b: 2 }
        }
    }

    #[test]
    fn older_input_gets_defaults_for_missing_fields() {
        // An older caller: only struct_size and a (16 bytes).
        let old: [u64; 2] = [16, 40];
        let v = read_in(old.as_ptr() as *const Grown, Layout::Sized, "g").unwrap().unwrap();
        assert_eq!(v, Grown { struct_size: 24, a: 40, b: 2 });
    }

    #[test]
    fn newer_input_needs_zero_unknown_bytes() {
        let mut newer: [u64; 4] = [32, 5, 6, 0];
        let v = read_in(newer.as_ptr() as *const Grown, Layout::Sized, "g").unwrap().unwrap();
        assert_eq!(v, Grown { struct_size: 24, a: 5, b: 6 });
        newer[3] = 9;
        let err = read_in(newer.as_ptr() as *const Grown, Layout::Sized, "g").unwrap_err();
        assert_eq!(err.code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED);
        assert!(err.message.contains("byte 24"), "{}", err.message);
    }

    #[test]
    fn too_small_sizes_are_rejected() {
        for size in [0u64, 8, 15] {
            let s: [u64; 3] = [size, 1, 1];
            let err = read_in(s.as_ptr() as *const Grown, Layout::Sized, "g").unwrap_err();
            assert_eq!(err.code, LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT);
            assert!(err.message.contains("sizeof(Grown)"), "{}", err.message);
        }
        let mut out = [0u64; 3];
        assert!(init_out(out.as_mut_ptr() as *mut Grown, 8, "g").is_err());
        assert_eq!(out, [0, 0, 0], "nothing written on failure");
    }

    #[test]
    fn outputs_write_only_the_callers_bytes() {
        let value = Grown { struct_size: 24, a: 7, b: 8 };
        // Older caller: 16 bytes, then a canary the library must not touch.
        let mut old: [u64; 3] = [16, 0, 0xCAFE];
        out_slot(old.as_mut_ptr() as *mut Grown, Layout::Sized, "g").unwrap().unwrap().write(&value);
        assert_eq!(old, [16, 7, 0xCAFE]);
        // Newer caller: unknown bytes are zeroed.
        let mut newer: [u64; 4] = [32, 0, 0, 0xFFFF];
        out_slot(newer.as_mut_ptr() as *mut Grown, Layout::Sized, "g").unwrap().unwrap().write(&value);
        assert_eq!(newer, [32, 7, 8, 0]);
        // 0.1 layout: no header.
        let mut v0: [u64; 2] = [0, 0xCAFE];
        out_slot(v0.as_mut_ptr() as *mut Grown, Layout::V0, "g").unwrap().unwrap().write(&value);
        assert_eq!(v0, [7, 0xCAFE]);
        let v = read_in(v0.as_ptr() as *const Grown, Layout::V0, "g").unwrap().unwrap();
        assert_eq!(v, Grown { struct_size: 24, a: 7, b: 2 });
    }

    #[test]
    fn init_fills_defaults_and_zeroes_unknown_bytes() {
        let mut newer: [u64; 4] = [0, 0, 0, 0xFFFF];
        init_out(newer.as_mut_ptr() as *mut Grown, 32, "g").unwrap();
        assert_eq!(newer, [32, 1, 2, 0]);
        let mut old: [u64; 3] = [0, 0, 0xCAFE];
        init_out(old.as_mut_ptr() as *mut Grown, 16, "g").unwrap();
        assert_eq!(old, [16, 1, 0xCAFE]);
    }
}
