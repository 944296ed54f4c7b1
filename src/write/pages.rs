//! The size of the pages a write leaves for every later reader.
//!
//! Lance 14.0.2's file writer cuts a column's page once the data it has gathered for the column
//! passes 8 MiB, but it never cuts inside a batch it is given: a host batch of 1,000,000 rows
//! of 128-d float32 vectors becomes one page of 488 MiB (pylance's `write_dataset` does the
//! same). A scan reads a page whole, so every scan of that column then holds the whole page
//! and its read pieces at once: measured 1.1 GiB peak RSS for a full scan that peaks at 262 MiB
//! when the same rows are in 8 MiB pages, and slower. Pages above Lance's largest read request
//! (`LANCE_MAX_IOP_SIZE`, 16 MiB unless set) are also read in pieces and copied together.
//!
//! So the library hands Lance a large batch as row slices, each column of a slice at most
//! [`SLICE_BYTES`] and in buffers of its own. Lance then gathers slices into pages of 8 to
//! 12 MiB, as it does for a host that sends batches of a few thousand rows, whatever the host's
//! batch size. A slice must own its buffers: Lance measures what it has gathered by the
//! buffers an array holds, and a view into a large batch counts as the whole batch, which would
//! cut every column, the narrow ones too, into a page per slice.

use arrow::array::{make_array, Array, ArrayRef, MutableArrayData, RecordBatch};
use arrow::error::ArrowError;
use arrow_schema::DataType;

/// The most data of one column a slice handed to Lance holds. Lance cuts a page when what it
/// has gathered passes 8 MiB, so pages of slices of this size are 8 to 12 MiB: below the 16 MiB
/// a reader fetches in one request by default.
pub(crate) const SLICE_BYTES: usize = 4 << 20;

/// The bytes of `array`'s rows (a view counts only its own rows).
fn data_bytes(array: &dyn Array) -> usize {
    array.to_data().get_slice_memory_size().unwrap_or_else(|_| array.get_array_memory_size())
}

/// Dictionary arrays are passed on as views: a copy of a slice repeats the whole dictionary.
fn has_dictionary(t: &DataType) -> bool {
    match t {
        DataType::Dictionary(..) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::ListView(f) | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => has_dictionary(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_dictionary(f.data_type())),
        DataType::Union(fields, _) => fields.iter().any(|(_, f)| has_dictionary(f.data_type())),
        DataType::RunEndEncoded(_, v) => has_dictionary(v.data_type()),
        _ => false,
    }
}

/// `array` in buffers of its own (only its rows).
fn owned(array: &ArrayRef) -> ArrayRef {
    if has_dictionary(array.data_type()) {
        return array.clone();
    }
    let data = array.to_data();
    let mut copy = MutableArrayData::new(vec![&data], false, data.len());
    copy.extend(0, 0, data.len());
    make_array(copy.freeze())
}

/// `batch` as Lance should get it: unchanged when no column holds more than `limit` bytes,
/// else as consecutive row slices whose columns hold at most about `limit` bytes each (at
/// least one row per slice), each in buffers of its own. The rows and their order are kept.
pub(crate) fn cut(batch: RecordBatch, limit: usize) -> Result<Vec<RecordBatch>, ArrowError> {
    let rows = batch.num_rows();
    let widest = batch.columns().iter().map(|c| data_bytes(c.as_ref())).max().unwrap_or(0);
    if rows <= 1 || widest <= limit {
        return Ok(vec![batch]);
    }
    // Rows per slice so that the widest column's slice holds at most `limit` bytes (rows are
    // taken as equally wide; a column of variable width may exceed it where its rows are wider).
    let per_slice = ((rows as u128 * limit as u128 / widest as u128) as usize).max(1);
    let mut slices = Vec::with_capacity(rows.div_ceil(per_slice));
    let mut start = 0;
    while start < rows {
        let len = per_slice.min(rows - start);
        let view = batch.slice(start, len);
        let columns = view.columns().iter().map(owned).collect();
        slices.push(RecordBatch::try_new(view.schema(), columns)?);
        start += len;
    }
    Ok(slices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{DictionaryArray, FixedSizeListArray, Float32Array, Int64Array, StringArray};
    use arrow::datatypes::Int32Type;
    use arrow_schema::{Field, Schema};
    use std::sync::Arc;

    fn vectors(rows: usize, dim: i32) -> ArrayRef {
        let values = Float32Array::from_iter_values((0..rows * dim as usize).map(|i| i as f32 * 0.5));
        Arc::new(FixedSizeListArray::new(Arc::new(Field::new("item", DataType::Float32, true)), dim, Arc::new(values), None))
    }

    fn batch(rows: usize) -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values((0..rows).map(|i| format!("row {i}"))));
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("vec", vectors(1, 128).data_type().clone(), true),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![ids, names, vectors(rows, 128)]).unwrap()
    }

    #[test]
    fn a_batch_within_the_limit_is_passed_on_unchanged() {
        let b = batch(1_000); // vec: 500 KiB
        let out = cut(b.clone(), SLICE_BYTES).unwrap();
        assert_eq!(out.len(), 1);
        assert!(Arc::ptr_eq(&out[0].columns()[2], &b.columns()[2]), "no copy below the limit");
    }

    #[test]
    fn a_large_batch_is_cut_into_owned_slices_of_the_same_rows() {
        let b = batch(50_000); // vec: 24.4 MiB
        let out = cut(b.clone(), SLICE_BYTES).unwrap();
        assert!(out.len() >= 6, "{} slices", out.len());
        let mut start = 0;
        for s in &out {
            for c in s.columns() {
                // What Lance measures (all buffers held) is the slice's own size.
                assert!(c.get_array_memory_size() <= SLICE_BYTES + 64 * 1024, "{}", c.get_array_memory_size());
            }
            assert_eq!(s, &b.slice(start, s.num_rows()), "slice at row {start} differs");
            start += s.num_rows();
        }
        assert_eq!(start, b.num_rows());
    }

    #[test]
    fn rows_wider_than_the_limit_go_one_per_slice() {
        let b = batch(8);
        let width = data_bytes(b.column(2).as_ref()) / 8;
        let out = cut(b.clone(), width / 2).unwrap();
        assert_eq!(out.len(), 8);
        assert!(out.iter().all(|s| s.num_rows() == 1));
    }

    #[test]
    fn a_dictionary_column_stays_a_view_of_its_dictionary() {
        let keys: DictionaryArray<Int32Type> = (0..200_000).map(|i| ["a", "b", "c"][i % 3]).collect();
        let schema = Schema::new(vec![
            Field::new("k", keys.data_type().clone(), false),
            Field::new("vec", vectors(1, 128).data_type().clone(), true),
        ]);
        let b = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), vectors(200_000, 128)]).unwrap();
        let out = cut(b.clone(), SLICE_BYTES).unwrap();
        assert!(out.len() > 1);
        let mut start = 0;
        for s in &out {
            assert_eq!(s, &b.slice(start, s.num_rows()));
            start += s.num_rows();
        }
        assert_eq!(start, 200_000);
    }
}
