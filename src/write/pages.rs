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
//! So the library hands Lance a batch whose widest column holds more than [`CUT_ABOVE`] as row
//! slices whose widest column holds about [`PAGE_BYTES`]. Lance measures what it has gathered by
//! the buffers an array holds, and a view into a large batch counts as the whole batch, so each
//! slice of a wide column becomes a page of its own, written from the host's buffers without a
//! copy. A column whose slice is small (the narrow columns) is copied into buffers of its own, so
//! that Lance gathers it over several slices into pages of its usual size rather than cutting
//! it into a page per slice. A batch within the limit goes on unchanged, as before.
//!
//! What it costs a write (3,000,000 rows of 128-d vectors from 65,536-row batches, release
//! build, 5 pairs of whole processes): 0.91x (0.80-1.19) the time of writing the batches uncut.
//! On a virtual machine that hands freed memory back to its host (virtio-balloon free page
//! reporting) the same write took 2x: the page cache then refills memory the host must fault in
//! again, charged as system time to the write calls; with the reporting off the cost is gone.

use arrow::array::{make_array, Array, ArrayRef, MutableArrayData, RecordBatch};
use arrow::error::ArrowError;
use arrow_schema::DataType;

/// A batch whose widest column holds more than this is cut: Lance's largest single read
/// request unless `LANCE_MAX_IOP_SIZE` is set, so a page up to it is read in one request.
pub(crate) const CUT_ABOVE: usize = 16 << 20;

/// The bytes of the widest column of a slice: the size of the pages Lance writes from large
/// batches of host data (Lance's own page size for data that arrives in small batches).
pub(crate) const PAGE_BYTES: usize = 8 << 20;

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

/// A column of a slice as Lance should get it: a view into the host's batch when the slice is
/// large enough to be a page of its own (or holds a dictionary: a copy of a slice repeats the
/// whole dictionary); else a copy of only its rows, so Lance measures it by its own size.
fn column_of_slice(array: &ArrayRef) -> ArrayRef {
    if data_bytes(array.as_ref()) >= PAGE_BYTES / 2 || has_dictionary(array.data_type()) {
        return array.clone();
    }
    let data = array.to_data();
    let mut copy = MutableArrayData::new(vec![&data], false, data.len());
    copy.extend(0, 0, data.len());
    make_array(copy.freeze())
}

/// `batch` as Lance should get it: unchanged when no column holds more than [`CUT_ABOVE`], else
/// as consecutive row slices whose widest column holds about [`PAGE_BYTES`] (at least one row a
/// slice; columns as [`column_of_slice`] makes them). The rows and their order are kept.
pub(crate) fn cut(batch: RecordBatch) -> Result<Vec<RecordBatch>, ArrowError> {
    let rows = batch.num_rows();
    let widest = batch.columns().iter().map(|c| data_bytes(c.as_ref())).max().unwrap_or(0);
    if rows <= 1 || widest <= CUT_ABOVE {
        return Ok(vec![batch]);
    }
    // Rows are taken as equally wide: a column of variable width may hold more in a slice where
    // its rows are wider.
    let per_slice = ((rows as u128 * PAGE_BYTES as u128 / widest as u128) as usize).max(1);
    let mut slices = Vec::with_capacity(rows.div_ceil(per_slice));
    let mut start = 0;
    while start < rows {
        let len = per_slice.min(rows - start);
        let view = batch.slice(start, len);
        let columns = view.columns().iter().map(column_of_slice).collect();
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
        let b = batch(30_000); // vec: 14.6 MiB, one page a reader fetches in one request
        let out = cut(b.clone()).unwrap();
        assert_eq!(out.len(), 1);
        assert!(Arc::ptr_eq(&out[0].columns()[2], &b.columns()[2]), "no copy below the limit");
    }

    #[test]
    fn a_large_batch_is_cut_into_slices_of_the_same_rows() {
        let b = batch(100_000); // vec: 48.8 MiB
        let out = cut(b.clone()).unwrap();
        assert_eq!(out.len(), 7, "slices of 16,384 rows: 8 MiB of vectors each");
        let mut start = 0;
        for s in &out {
            assert_eq!(s, &b.slice(start, s.num_rows()), "slice at row {start} differs");
            // The vectors stay a view into the batch (no copy): Lance makes each slice a page. The
            // last, short slice is copied, and Lance gathers it with the next batch's rows.
            let vec_bytes = data_bytes(s.column(2).as_ref());
            assert!(vec_bytes <= PAGE_BYTES);
            let held = s.column(2).get_array_memory_size();
            if vec_bytes >= PAGE_BYTES / 2 {
                assert!(held >= data_bytes(b.column(2).as_ref()), "a view holds the batch's buffer: {held}");
            } else {
                assert!(held <= vec_bytes + 64 * 1024, "a copy holds its own rows: {held}");
            }
            // The narrow columns are copied: Lance measures them by their own rows.
            for c in [s.column(0), s.column(1)] {
                assert!(c.get_array_memory_size() <= data_bytes(c.as_ref()) + 64 * 1024, "{}", c.get_array_memory_size());
            }
            start += s.num_rows();
        }
        assert_eq!(start, b.num_rows());
    }

    #[test]
    fn rows_wider_than_a_page_go_one_per_slice() {
        let b = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("vec", vectors(1, 3 << 20).data_type().clone(), true)])),
            vec![vectors(3, 3 << 20)], // 12 MiB a row
        )
        .unwrap();
        let out = cut(b.clone()).unwrap();
        assert_eq!(out.len(), 3);
        for (i, s) in out.iter().enumerate() {
            assert_eq!(s, &b.slice(i, 1));
        }
    }

    #[test]
    fn nulls_of_copied_and_viewed_columns_are_kept() {
        let rows = 60_000;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter((0..rows as i64).map(|i| (i % 7 != 3).then_some(i))));
        let vec = vectors(rows, 128);
        let nulls = arrow::buffer::NullBuffer::from_iter((0..rows).map(|i| i % 5 != 1));
        let field = Arc::new(Field::new("item", DataType::Float32, true));
        let values = vec.as_any().downcast_ref::<FixedSizeListArray>().unwrap().values().clone();
        let vec: ArrayRef = Arc::new(FixedSizeListArray::new(field, 128, values, Some(nulls)));
        let schema = Schema::new(vec![Field::new("id", DataType::Int64, true), Field::new("vec", vec.data_type().clone(), true)]);
        let b = RecordBatch::try_new(Arc::new(schema), vec![ids, vec]).unwrap();
        let out = cut(b.clone()).unwrap();
        assert!(out.len() > 1);
        let mut start = 0;
        for s in &out {
            assert_eq!(s, &b.slice(start, s.num_rows()), "slice at row {start} differs");
            assert_eq!(s.column(0).null_count(), b.column(0).slice(start, s.num_rows()).null_count());
            start += s.num_rows();
        }
        assert_eq!(start, rows);
    }

    #[test]
    fn a_dictionary_column_stays_a_view_of_its_dictionary() {
        let keys: DictionaryArray<Int32Type> = (0..200_000).map(|i| ["a", "b", "c"][i % 3]).collect();
        let schema = Schema::new(vec![
            Field::new("k", keys.data_type().clone(), false),
            Field::new("vec", vectors(1, 128).data_type().clone(), true),
        ]);
        let b = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(keys), vectors(200_000, 128)]).unwrap();
        let out = cut(b.clone()).unwrap();
        assert!(out.len() > 1);
        let mut start = 0;
        for s in &out {
            assert_eq!(s, &b.slice(start, s.num_rows()));
            start += s.num_rows();
        }
        assert_eq!(start, 200_000);
    }
}
