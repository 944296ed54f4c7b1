//! Reading a stream a host hands over. Arrow's own stream reader trusts the producer's buffers
//! to be aligned for their types and panics on one that is not (a decimal128 buffer of a batch
//! read from Arrow IPC sits on 8 bytes, not 16); it also panics when a failing producer gives no
//! error text. This reader copies a misaligned buffer to an aligned one (only that buffer) and
//! reports a failure without text by its errno.

use std::ffi::CStr;
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions, StructArray};
use arrow::ffi::{from_ffi_and_data_type, FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};

pub(crate) struct HostStreamReader {
    stream: FFI_ArrowArrayStream,
    schema: SchemaRef,
}

impl HostStreamReader {
    /// Take `stream` (already moved out of the caller's struct); fails if it is released or its
    /// schema cannot be read.
    pub(crate) fn try_new(mut stream: FFI_ArrowArrayStream) -> Result<Self, ArrowError> {
        let get_schema = match (stream.release, stream.get_schema, stream.get_next) {
            (Some(_), Some(g), Some(_)) => g,
            (None, _, _) => return Err(ArrowError::CDataInterface("input stream is already released".into())),
            _ => return Err(ArrowError::CDataInterface("input stream lacks get_schema or get_next".into())),
        };
        let mut ffi_schema = FFI_ArrowSchema::empty();
        // SAFETY: a live stream's callback, called with the stream and an empty schema to fill.
        let rc = unsafe { get_schema(&mut stream, &mut ffi_schema) };
        if rc != 0 {
            let text = last_error(&mut stream).unwrap_or_else(|| format!("errno {rc}"));
            return Err(ArrowError::CDataInterface(format!("cannot get the input stream's schema: {text}")));
        }
        let schema = Arc::new(Schema::try_from(&ffi_schema)?);
        Ok(Self { stream, schema })
    }
}

fn last_error(stream: &mut FFI_ArrowArrayStream) -> Option<String> {
    let get = stream.get_last_error?;
    // SAFETY: a live stream's callback; the text it returns lives until the next call on it.
    let p = unsafe { get(stream) };
    if p.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string owned by the stream (C stream interface).
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// One array a host handed over (already moved out of its struct), of `data_type`: a
/// misaligned buffer copied to an aligned one, the buffers' sizes checked against the length
/// (`full`: the values too — offsets in range, UTF-8 valid), so a malformed array is an error,
/// never a read out of bounds.
///
/// # Safety
/// `array` must be an array exported through Arrow's C data interface whose layout is
/// `data_type`'s.
pub(crate) unsafe fn host_array(array: FFI_ArrowArray, data_type: DataType, full: bool) -> Result<arrow::array::ArrayData, ArrowError> {
    // SAFETY: the caller's contract.
    let mut data = unsafe { from_ffi_and_data_type(array, data_type) }?;
    data.align_buffers();
    if full {
        data.validate_full()?;
    } else {
        data.validate()?;
    }
    Ok(data)
}

impl Iterator for HostStreamReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let get_next = self.stream.get_next?;
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: a live stream's callback, called with the stream and an empty array to fill.
        let rc = unsafe { get_next(&mut self.stream, &mut array) };
        if rc != 0 {
            let text = last_error(&mut self.stream).unwrap_or_else(|| format!("the stream failed with errno {rc}"));
            return Some(Err(ArrowError::CDataInterface(text)));
        }
        if array.is_released() {
            return None;
        }
        // SAFETY: the array the producer just handed over, of the stream's schema.
        let data = unsafe { host_array(array, DataType::Struct(self.schema.fields().clone()), false) };
        Some(data.and_then(|data| {
            let len = data.len();
            let columns = StructArray::from(data).into_parts().1;
            RecordBatch::try_new_with_options(self.schema.clone(), columns, &RecordBatchOptions::new().with_row_count(Some(len)))
        }))
    }
}

impl arrow::record_batch::RecordBatchReader for HostStreamReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
