//! Differential test of the library's decoder against Lance's: tables Lance writes (file formats
//! 2.1 and 2.2) with columns of every type this decoder reads, in value patterns that make
//! Lance's writer choose each encoding (flat, bit-packed, dictionary of numbers and of strings,
//! run-length, plain and compressed strings), sizes around the chunk and block boundaries, NaN of
//! both signs, infinities, NUL bytes, non-ASCII text and 38-digit decimals; several fragments,
//! deleted rows and row slices. Every column the decoder accepts must equal Lance's scan bit for
//! bit, NULLs in the same rows (pages with nulls of every kind; a page of only NULLs is refused,
//! Lance reads it); and the encodings the decoder
//! handles itself must all have been met, so the test cannot pass by refusing everything.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::DataType;
use futures::TryStreamExt;
use lance::dataset::{WriteMode, WriteParams};
use lance::deps::datafusion::execution::TaskContext;
use lance::Dataset;
use lance_file::version::LanceFileVersion;
use rand::{Rng, SeedableRng};

use crate::session;

fn columns(n: usize, seed: u64) -> RecordBatch {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let i = |k: usize| k as i64;
    let words = ["alpha", "béta", "γάμμα", "nul\0byte", "", "日本語", "x"];
    let floats = [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 1.5, -2.25];
    let max38 = 10i128.pow(38) - 1;
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("i8_small", Arc::new(Int8Array::from_iter_values((0..n).map(|_| r.random_range(0..5))))),
        ("i16_rand", Arc::new(Int16Array::from_iter_values((0..n).map(|_| r.random())))),
        ("i32_small", Arc::new(Int32Array::from_iter_values((0..n).map(|_| r.random_range(-3..1000))))),
        ("i32_rand", Arc::new(Int32Array::from_iter_values((0..n).map(|_| r.random())))),
        ("i64_seq", Arc::new(Int64Array::from_iter_values((0..n).map(i)))),
        ("i64_rand", Arc::new(Int64Array::from_iter_values((0..n).map(|_| r.random())))),
        ("i64_runs", Arc::new(Int64Array::from_iter_values((0..n).map(|k| i(k / 700))))),
        ("u8_rand", Arc::new(UInt8Array::from_iter_values((0..n).map(|_| r.random())))),
        ("u16_small", Arc::new(UInt16Array::from_iter_values((0..n).map(|_| r.random_range(0..300))))),
        ("u32_rand", Arc::new(UInt32Array::from_iter_values((0..n).map(|_| r.random())))),
        ("u64_small", Arc::new(UInt64Array::from_iter_values((0..n).map(|_| r.random_range(0..1 << 40))))),
        ("f32_rand", Arc::new(Float32Array::from_iter_values((0..n).map(|_| r.random::<f32>() * 1e6 - 5e5)))),
        ("f64_edges", Arc::new(Float64Array::from_iter_values((0..n).map(|_| floats[r.random_range(0..floats.len())])))),
        ("f64_rand", Arc::new(Float64Array::from_iter_values((0..n).map(|_| r.random::<f64>())))),
        (
            "dec_few",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|_| r.random_range(0..50) * 100))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ),
        (
            "dec_rand",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|_| r.random_range(-10i128.pow(15)..10i128.pow(15))))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ),
        (
            "dec_wide",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|k| match k % 3 {
                    0 => max38,
                    1 => -max38,
                    _ => r.random_range(-max38..max38),
                }))
                .with_precision_and_scale(38, 10)
                .unwrap(),
            ),
        ),
        ("date", Arc::new(Date32Array::from_iter_values((0..n).map(|_| r.random_range(8000..11000))))),
        ("ts_us", Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|_| r.random_range(0..i64::MAX / 2))))),
        ("s_flag", Arc::new(StringArray::from_iter_values((0..n).map(|_| ["A", "N", "R"][r.random_range(0..3)])))),
        ("s_words", Arc::new(StringArray::from_iter_values((0..n).map(|_| words[r.random_range(0..words.len())])))),
        (
            "s_unique",
            Arc::new(StringArray::from_iter_values((0..n).map(|k| format!("row {k} · {}", r.random::<u32>())))),
        ),
        (
            "s_long",
            Arc::new(LargeStringArray::from_iter_values(
                (0..n).map(|k| format!("{} the quick brown fox {}", "lorem ipsum dolor ".repeat(k % 9), r.random::<u16>())),
            )),
        ),
        ("bin", Arc::new(BinaryArray::from_iter_values((0..n).map(|k| vec![0u8, (k % 256) as u8, 255, r.random()])))),
        ("n_i64", Arc::new(Int64Array::from_iter((0..n).map(|k| (k % 5 != 0).then_some(i(k)))))),
        ("n_sparse", Arc::new(Int32Array::from_iter((0..n).map(|k| (k % 3001 != 7).then(|| r.random_range(0..100)))))),
        ("n_f64", Arc::new(Float64Array::from_iter((0..n).map(|_| r.random_bool(0.8).then(|| floats[r.random_range(0..8)]))))),
        (
            "n_dec",
            Arc::new(
                Decimal128Array::from_iter((0..n).map(|_| r.random_bool(0.7).then(|| r.random_range(0..40) * 25)))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ),
        ("n_str", Arc::new(StringArray::from_iter((0..n).map(|k| r.random_bool(0.6).then(|| format!("v{}", k % 97)))))),
        ("n_unique", Arc::new(StringArray::from_iter((0..n).map(|k| r.random_bool(0.9).then(|| format!("u{k}·{}", r.random::<u32>())))))),
        ("n_all", Arc::new(Int64Array::from_iter((0..n).map(|_| None::<i64>)))),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

fn write(uri: &str, batch: RecordBatch, version: LanceFileVersion, rows_per_file: usize) -> Arc<Dataset> {
    let schema = batch.schema();
    let params = WriteParams {
        mode: WriteMode::Create,
        data_storage_version: Some(version),
        max_rows_per_file: rows_per_file,
        ..Default::default()
    };
    let u = uri.to_string();
    let ds = session::block_on(async move {
        Dataset::write(RecordBatchIterator::new(vec![Ok(batch)], schema), &u, Some(params)).await
    })
    .unwrap()
    .unwrap();
    Arc::new(ds)
}

/// One array's values, bit for bit: fixed-width bytes, or each value's bytes (never compared as
/// numbers, so NaN of either sign and -0.0 must match exactly).
fn bits(a: &dyn Array) -> Vec<Option<Vec<u8>>> {
    let data = a.to_data();
    match super::page::Out::of(a.data_type()) {
        Some(super::page::Out::Fixed(w)) => {
            let buf = &data.buffers()[0].as_slice()[data.offset() * w..(data.offset() + data.len()) * w];
            buf.chunks(w).enumerate().map(|(i, c)| a.is_valid(i).then(|| c.to_vec())).collect()
        }
        _ => {
            let large = matches!(a.data_type(), DataType::LargeUtf8 | DataType::LargeBinary);
            let target = if large { DataType::LargeBinary } else { DataType::Binary };
            let b = arrow::compute::cast(a, &target).unwrap();
            if large {
                b.as_any().downcast_ref::<LargeBinaryArray>().unwrap().iter().map(|v| v.map(|v| v.to_vec())).collect()
            } else {
                b.as_any().downcast_ref::<BinaryArray>().unwrap().iter().map(|v| v.map(|v| v.to_vec())).collect()
            }
        }
    }
}

/// Lance's scan of `column` (deleted rows left out), or of physical rows `slice` of `fragment`.
fn lance_reads(ds: &Arc<Dataset>, column: &str, slice: Option<(u64, std::ops::Range<u64>)>) -> Vec<Option<Vec<u8>>> {
    let ds = ds.clone();
    let name = column.to_string();
    let column = name.clone();
    let batch = session::block_on(async move {
        let mut scan = ds.scan();
        scan.project(&[column.as_str()])?;
        if let Some((fragment, rows)) = slice {
            let frag = ds.get_fragment(fragment as usize).unwrap().metadata().clone();
            scan.with_fragments(vec![frag]);
            let mut addrs = lance::dataset::scanner::RowAddrTreeMap::new();
            addrs.insert_range((fragment << 32) + rows.start..(fragment << 32) + rows.end);
            scan.with_physical_row_addr_prefilter(addrs);
            scan.with_row_id();
        }
        scan.try_into_batch().await
    })
    .unwrap()
    .unwrap();
    bits(batch.column_by_name(&name).unwrap().as_ref())
}

/// This decoder's read of `column`, with the encodings of the pages it read; `None` if refused.
fn own_reads(
    ds: &Arc<Dataset>,
    column: &str,
    slice: Option<(u64, std::ops::Range<u64>)>,
) -> Option<(Vec<Option<Vec<u8>>>, BTreeSet<&'static str>)> {
    let ds = ds.clone();
    let column = column.to_string();
    session::block_on(async move {
        let frags: Vec<_> = match &slice {
            Some((f, _)) => ds.fragments().iter().filter(|x| x.id == *f).cloned().collect(),
            None => ds.fragments().as_ref().clone(),
        };
        let plan = super::plan(&ds, &frags, slice.clone().map(|s| s.1), &[column.clone()]).await.unwrap()?;
        let kinds = plan.page_kinds();
        let exec = plan.into_exec(1, 2).unwrap();
        let batches: Vec<RecordBatch> =
            exec.execute(0, Arc::new(TaskContext::default())).unwrap().try_collect().await.unwrap();
        let mut out = Vec::new();
        for b in &batches {
            out.extend(bits(b.column(0).as_ref()));
        }
        // the same rows when dealt to three partitions
        let again = super::plan(&ds, &frags, slice.map(|s| s.1), &[column.clone()]).await.unwrap()?;
        let parts = lance::deps::datafusion::physical_plan::collect(again.into_exec(3, 1).unwrap(), Arc::new(TaskContext::default()))
            .await
            .unwrap();
        let mut dealt: Vec<Option<Vec<u8>>> = parts.iter().flat_map(|b| bits(b.column(0).as_ref())).collect();
        let mut sorted = out.clone();
        dealt.sort();
        sorted.sort();
        assert_eq!(dealt, sorted, "{column}: the rows of three partitions");
        Some((out, kinds))
    })
    .unwrap()
}

#[test]
fn the_decoder_reads_what_lance_reads_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = BTreeSet::new();
    let mut compared = 0;
    for (k, (rows, version, per_file)) in [
        (1, LanceFileVersion::V2_2, 1 << 20),
        (1023, LanceFileVersion::V2_2, 1 << 20),
        (1025, LanceFileVersion::V2_1, 1 << 20),
        (4097, LanceFileVersion::V2_2, 1 << 20),
        (70_000, LanceFileVersion::V2_2, 30_000),
        (50_000, LanceFileVersion::V2_1, 1 << 20),
    ]
    .into_iter()
    .enumerate()
    {
        let uri = dir.path().join(format!("t{k}.lance")).to_str().unwrap().to_string();
        let batch = columns(rows, k as u64);
        let names: Vec<String> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
        let mut ds = write(&uri, batch, version, per_file);
        if rows > 10_000 {
            // deleted rows, in more than one fragment
            let mut d = (*ds).clone();
            session::block_on(async { d.delete("i64_seq % 7 = 3 OR i64_seq < 100").await }).unwrap().unwrap();
            ds = Arc::new(d);
        }
        for name in &names {
            let own = own_reads(&ds, name, None);
            if name == "n_all" {
                assert!(own.is_none(), "a page of only NULLs is written in a layout Lance reads");
                continue;
            }
            // (a one-row page is written in a layout this decoder leaves to Lance)
            let Some((own, kinds)) = own else { continue };
            assert_eq!(own, lance_reads(&ds, name, None), "column {name}, {rows} rows, {version:?}");
            seen.extend(kinds);
            compared += 1;
            if rows > 10_000 {
                for slice in [0..1, 999..5000, 4096..8192, (rows as u64 - 31_000).min(29_999)..30_000] {
                    let frag = ds.fragments()[0].id;
                    let (own, _) = own_reads(&ds, name, Some((frag, slice.clone()))).expect("a slice of a read page");
                    assert_eq!(own, lance_reads(&ds, name, Some((frag, slice.clone()))), "{name} rows {slice:?}");
                }
            }
        }
    }
    for kind in ["flat", "packed", "dictionary+packed", "strings", "lance-codec", "dictionary+lance-codec", "nullable"] {
        assert!(seen.contains(kind), "no page decoded as {kind}: {seen:?}");
    }
    assert!(compared >= 100, "only {compared} columns compared");
}

#[test]
fn a_column_the_decoder_does_not_read_leaves_the_read_to_lance() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t.lance").to_str().unwrap().to_string();
    let b = RecordBatch::try_from_iter([
        ("b", Arc::new(BooleanArray::from(vec![true, false, true])) as ArrayRef),
        ("l", Arc::new(ListArray::from_iter_primitive::<arrow::datatypes::Int32Type, _, _>(vec![Some(vec![Some(1)]); 3]))),
        ("x", Arc::new(Int32Array::from(vec![1, 2, 3]))),
    ])
    .unwrap();
    let ds = write(&uri, b, LanceFileVersion::V2_2, 1 << 20);
    assert!(own_reads(&ds, "b", None).is_none());
    assert!(own_reads(&ds, "l", None).is_none());
    assert!(own_reads(&ds, "no_such_column", None).is_none());
    assert!(own_reads(&ds, "x", None).is_some());
}
