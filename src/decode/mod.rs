//! The library's own read of top-level columns from Lance 2.1+ files (issue 62: the scan under an
//! aggregate was four fifths of TPC-H Q1, and a third of Lance's decode time went to copying
//! decoded blocks into builders, value by value for dictionary pages).
//!
//! `plan` looks at every page the read would touch and answers `None` unless this decoder reads
//! all of them (`page.rs`: mini-block pages without nulls of fixed-width and string columns;
//! data files of the table's own base; fragments with a physical row count); the caller then
//! uses Lance's scanner, so a page this decoder does not know is never guessed at. `stream`
//! reads the planned rows in batches, several at a time on the runtime's threads, each batch one
//! request per column and page part, and drops deleted rows. `LANCE_HOST_DECODER=lance` in the
//! environment turns the path off (differential tests and benches compare both).

pub mod page;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, LazyLock, Mutex};

use arrow::array::{make_array, Array, ArrayData, ArrayRef, BooleanArray, RecordBatch};
use arrow::buffer::Buffer;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use lance::dataset::fragment::FileFragment;
use lance::Dataset;
use lance_core::utils::deletion::DeletionVector;
use lance::deps::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use lance::deps::datafusion::physical_plan::union::UnionExec;
use lance::deps::datafusion::logical_expr::Expr;
use lance::deps::datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use lance_datafusion::exec::OneShotExec;
use lance_encoding::decoder::PageEncoding;
use lance_file::reader::{CachedFileMetadata, FileReader};
use lance_io::scheduler::{FileScheduler, ScanScheduler, SchedulerConfig};
use lance_table::format::Fragment;

use page::{Decoded, Out, PageLayout, PagePlan};

type LResult<T> = lance::Result<T>;

/// Rows per batch the stream produces at most, and at least (multiples of every chunk size
/// Lance writes), and the decoded bytes a batch aims at between them: two batches per partition
/// are decoded at a time.
const BATCH_ROWS: u64 = 65_536;
const MIN_BATCH_ROWS: u64 = 4_096;
const BATCH_BYTES: u64 = 16 << 20;

/// Whether the environment asks for Lance's decoder everywhere.
pub fn disabled() -> bool {
    std::env::var("LANCE_HOST_DECODER").is_ok_and(|v| v == "lance")
}

/// Files are immutable once written, so their metadata is kept by path (bounded).
static METADATA: LazyLock<Mutex<HashMap<String, Arc<CachedFileMetadata>>>> = LazyLock::new(Default::default);
const METADATA_ENTRIES: usize = 1024;

#[derive(Debug)]
struct Column {
    field: Field,
    file: usize,
    /// (first row in the fragment, page)
    pages: Vec<(u64, Arc<PagePlan>)>,
}

#[derive(Debug)]
struct FragmentRead {
    rows: Range<u64>,
    deleted: Option<Arc<DeletionVector>>,
    files: Vec<FileScheduler>,
    columns: Vec<Column>,
}

/// A read this decoder can do in full.
#[derive(Debug)]
pub struct Plan {
    schema: SchemaRef,
    fragments: Vec<FragmentRead>,
    /// rows decoded together (one read per column and page part)
    batch_rows: u64,
    /// rows per batch handed on, if the caller asked for a size (`with_batch_rows`)
    out_rows: Option<u64>,
    /// rows kept by a filter, evaluated on each decoded unit (`with_filter`)
    filter: Option<Filter>,
}

/// A predicate over some of the plan's columns (`inputs`, in the order of `input_schema`) and
/// how many of the plan's columns (the first) are handed on (`schema`).
#[derive(Debug)]
struct Filter {
    predicate: Arc<dyn PhysicalExpr>,
    inputs: Vec<usize>,
    input_schema: SchemaRef,
    keep: usize,
    schema: SchemaRef,
}

fn lance_error(message: String) -> lance::Error {
    lance::Error::corrupt_file_named("lance-host decoder", message)
}

async fn metadata(ds: &Dataset, scheduler: &FileScheduler, path: &str) -> LResult<Arc<CachedFileMetadata>> {
    let key = format!("{}#{}", ds.uri(), path);
    if let Some(m) = METADATA.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(m);
    }
    let m = Arc::new(FileReader::read_all_metadata(scheduler).await?);
    if let Ok(mut cache) = METADATA.lock() {
        if cache.len() >= METADATA_ENTRIES {
            cache.clear();
        }
        cache.insert(key, m.clone());
    }
    Ok(m)
}

/// Whether an index of the table covers one of `columns`: Lance's scanner answers a filter on
/// such a column from the index, reading only the rows it names, where this read would decode
/// every row (the answer is the same; the time is not), so such a filtered read is Lance's.
pub async fn indexed(ds: &Dataset, columns: &[String]) -> LResult<bool> {
    use lance::index::DatasetIndexExt;
    let ids: Vec<i32> = columns.iter().filter_map(|c| ds.schema().field(c).map(|f| f.id)).collect();
    Ok(ds.load_indices().await?.iter().any(|i| i.fields.iter().any(|f| ids.contains(f))))
}

/// The read of `columns` (top-level, in this order) over `fragments` — or over rows `slice` of
/// the one fragment — if this decoder reads every page of it; `None` otherwise.
pub async fn plan(
    ds: &Arc<Dataset>,
    fragments: &[Fragment],
    slice: Option<Range<u64>>,
    columns: &[String],
) -> LResult<Option<Plan>> {
    let mut fields = Vec::new();
    for name in columns {
        let Some(f) = ds.schema().fields.iter().find(|f| &f.name == name) else { return Ok(None) };
        if !f.children.is_empty() {
            return Ok(None);
        }
        let arrow = Field::from(f);
        if Out::of(arrow.data_type()).is_none() {
            return Ok(None);
        }
        fields.push((f.id, arrow));
    }
    let store = ds.object_store(None).await?;
    let scheduler = ScanScheduler::new(store.clone(), SchedulerConfig::max_bandwidth(&store));
    // fragments planned concurrently (each reads its files' metadata and its pages' chunk
    // tables: on an object store, one round trip per file and column)
    let fields: Arc<[(i32, Field)]> = fields.into();
    let planned: Vec<Option<FragmentRead>> = futures::stream::iter(fragments.to_vec())
        .map(|fragment| plan_fragment(ds.clone(), scheduler.clone(), fragment, slice.clone(), fields.clone()))
        .buffered(16)
        .try_collect()
        .await?;
    let Some(reads) = planned.into_iter().collect::<Option<Vec<_>>>() else { return Ok(None) };
    let schema = Arc::new(Schema::new(fields.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>()));
    // the widest row of any page the read touches sets the batch size
    let row_bytes: u64 = reads
        .iter()
        .map(|f| {
            f.columns.iter().map(|c| c.pages.iter().map(|(_, p)| p.value_bytes()).max().unwrap_or(0)).sum::<u64>()
        })
        .max()
        .unwrap_or(0);
    let batch_rows = (BATCH_BYTES / row_bytes.max(1)).clamp(MIN_BATCH_ROWS, BATCH_ROWS) / MIN_BATCH_ROWS * MIN_BATCH_ROWS;
    Ok(Some(Plan { schema, fragments: reads, batch_rows, out_rows: None, filter: None }))
}

/// The read of one fragment's `fields` (rows `slice`, else all), or `None` when a page or file
/// of it is not this decoder's.
async fn plan_fragment(
    ds: Arc<Dataset>,
    scheduler: Arc<ScanScheduler>,
    fragment: Fragment,
    slice: Option<Range<u64>>,
    fields: Arc<[(i32, Field)]>,
) -> LResult<Option<FragmentRead>> {
    let ds = &ds;
    let Some(physical) = fragment.physical_rows.map(|n| n as u64) else { return Ok(None) };
    let rows = match &slice {
        Some(r) if r.end <= physical => r.clone(),
        Some(_) => return Ok(None),
        None => 0..physical,
    };
    let mut files: Vec<(usize, FileScheduler, Arc<CachedFileMetadata>)> = Vec::new();
    let mut cols = Vec::new();
    for (id, field) in fields.iter() {
        let Some((k, file)) = fragment
            .files
            .iter()
            .enumerate()
            .find(|(_, f)| f.fields.contains(id))
        else {
            return Ok(None);
        };
        if file.base_id.is_some() || file.file_major_version != 2 || file.file_minor_version < 1 {
            return Ok(None);
        }
        let Some(pos) = file.fields.iter().position(|f| f == id) else { return Ok(None) };
        let Some(index) = file.column_indices.get(pos).and_then(|i| usize::try_from(*i).ok()) else {
            return Ok(None);
        };
        let at = match files.iter().position(|(j, _, _)| *j == k) {
            Some(at) => at,
            None => {
                let path = ds.data_dir().join(file.path.as_str());
                let s = scheduler.open_file(&path, &file.file_size_bytes).await?;
                let m = metadata(ds, &s, &file.path).await?;
                if m.num_rows != physical {
                    return Ok(None);
                }
                files.push((k, s, m));
                files.len() - 1
            }
        };
        let Some(info) = files[at].2.column_infos.get(index) else { return Ok(None) };
        let out = Out::of(field.data_type()).unwrap_or(Out::Var);
        let mut layouts = Vec::new();
        let mut first = 0u64;
        for p in info.page_infos.iter() {
            let PageEncoding::Structural(layout) = &p.encoding else { return Ok(None) };
            let Some(l) = PageLayout::new(layout, &p.buffer_offsets_and_sizes, p.num_rows, out) else {
                return Ok(None);
            };
            layouts.push((first, l));
            first += p.num_rows;
        }
        if first != physical {
            return Ok(None);
        }
        // only the pages the rows touch
        layouts.retain(|(f, l)| *f < rows.end && f + l.rows() > rows.start);
        let ranges: Vec<Range<u64>> = layouts.iter().flat_map(|(_, l)| l.metadata_ranges()).collect();
        let mut bytes = files[at].1.submit_request(ranges, 0).await?.into_iter();
        let mut pages = Vec::new();
        for (f, l) in layouts {
            let n = l.metadata_ranges().len();
            let Some(p) = l.plan(bytes.by_ref().take(n).collect()) else { return Ok(None) };
            pages.push((f, Arc::new(p)));
        }
        cols.push(Column { field: field.clone(), file: at, pages });
    }
    let deleted = if fragment.deletion_file.is_some() {
        FileFragment::new(ds.clone(), fragment.clone()).get_deletion_vector().await?
    } else {
        None
    };
    Ok(Some(FragmentRead { rows, deleted, files: files.into_iter().map(|(_, s, _)| s).collect(), columns: cols }))
}

impl Plan {
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Batches of `rows` rows (at least 1; the last of each fragment or slice, and batches with
    /// deleted rows, may be shorter).
    /// Rows are still decoded in units of about `BATCH_BYTES` (a multiple of `rows`, or `rows`
    /// when larger): small batches would cost a read per column each.
    pub fn with_batch_rows(mut self, rows: u64) -> Self {
        let rows = rows.max(1);
        self.batch_rows = rows * (self.batch_rows / rows).max(1);
        self.out_rows = Some(rows);
        self
    }

    /// Only the rows `predicate` (an expression Lance planned, over the plan's columns) keeps —
    /// NULL as false, as Lance's filter — and of those only the first `keep` columns. In each
    /// decoded unit the predicate's columns are decoded first; the other columns only when a row
    /// is kept, and only from the first kept row to the last. An expression that does not plan
    /// over the columns is an error (the caller then leaves the read to Lance).
    pub fn with_filter(mut self, predicate: &Expr, keep: usize) -> LResult<Self> {
        let mut inputs: Vec<usize> = Vec::new();
        for c in predicate.column_refs() {
            let Some(at) = self.schema.fields().iter().position(|f| f.name() == &c.name) else {
                return Err(lance_error(format!("the filter's column {} is not read", c.name)));
            };
            if !inputs.contains(&at) {
                inputs.push(at);
            }
        }
        let input_schema = Arc::new(self.schema.project(&inputs)?);
        let planner = lance_datafusion::planner::Planner::new(input_schema.clone());
        let predicate = planner.create_physical_expr(predicate)?;
        if predicate.data_type(&input_schema)? != DataType::Boolean {
            return Err(lance_error(format!("the filter {predicate} is not a predicate")));
        }
        let keep = keep.clamp(1, self.schema.fields().len());
        let schema = Arc::new(self.schema.project(&(0..keep).collect::<Vec<_>>())?);
        self.filter = Some(Filter { predicate, inputs, input_schema, keep, schema });
        Ok(self)
    }

    /// The schema of the batches handed on.
    fn out_schema(&self) -> SchemaRef {
        self.filter.as_ref().map_or_else(|| self.schema.clone(), |f| f.schema.clone())
    }

    /// How the planned pages store their values (`PagePlan::kind`).
    pub fn page_kinds(&self) -> std::collections::BTreeSet<&'static str> {
        self.fragments.iter().flat_map(|f| &f.columns).flat_map(|c| &c.pages).flat_map(|(_, p)| [Some(p.kind()), p.nullable().then_some("nullable")].into_iter().flatten())
            .collect()
    }

    /// The rows of the plan as an execution plan of `partitions` partitions (the batches dealt
    /// round-robin), each decoding `ahead` batches at a time on the runtime's threads.
    pub fn into_exec(self, partitions: usize, ahead: usize) -> LResult<Arc<dyn ExecutionPlan>> {
        let schema = self.out_schema();
        let self_batch = self.batch_rows;
        let out_rows = self.out_rows.map(|n| n as usize);
        let plan = Arc::new(self);
        let tasks: Vec<(usize, Range<u64>)> = plan
            .fragments
            .iter()
            .enumerate()
            .flat_map(|(i, f)| {
                let (start, end, step) = (f.rows.start, f.rows.end, self_batch);
                (start..end).step_by(step as usize).map(move |r| (i, r..(r + step).min(end)))
            })
            .collect();
        let partitions = partitions.clamp(1, tasks.len().max(1));
        let ahead = ahead.max(1);
        let mut children: Vec<Arc<dyn ExecutionPlan>> = Vec::with_capacity(partitions);
        for p in 0..partitions {
            let mine: Vec<_> = tasks.iter().skip(p).step_by(partitions).cloned().collect();
            let plan = plan.clone();
            let stream = futures::stream::iter(mine)
                .map(move |(i, rows)| {
                    let plan = plan.clone();
                    tokio::spawn(async move { plan.read(i, rows).await })
                })
                .buffered(ahead)
                .map(|r| match r {
                    Ok(Ok(batch)) => Ok(batch),
                    Ok(Err(e)) => Err(datafusion_error(e)),
                    Err(join) => Err(datafusion_error(lance_error(format!("a decode task failed: {join}")))),
                })
                .try_filter_map(|b: Option<RecordBatch>| async move { Ok(b) })
                // a decoded unit handed on in batches of the size asked for (zero-copy slices)
                .map_ok(move |b| {
                    let n = out_rows.unwrap_or(b.num_rows()).max(1);
                    let parts: Vec<_> = (0..b.num_rows()).step_by(n).map(|at| Ok(b.slice(at, n.min(b.num_rows() - at)))).collect();
                    futures::stream::iter(parts)
                })
                .try_flatten();
            let stream = RecordBatchStreamAdapter::new(schema.clone(), stream);
            children.push(Arc::new(OneShotExec::new(Box::pin(stream))));
        }
        Ok(UnionExec::try_new(children)?)
    }

    /// Rows `rows` of fragment `i` without its deleted rows and those the filter drops (`None`
    /// when no row is left).
    async fn read(&self, i: usize, rows: Range<u64>) -> LResult<Option<RecordBatch>> {
        match self.read_unit(i, rows).await? {
            Some((batch, kept)) => keep_rows(batch, kept.as_ref()),
            None => Ok(None),
        }
    }

    /// Rows `rows` of fragment `i` (the filter's columns whole, the others from the first kept
    /// row to the last) and which of them are kept — live and, with a filter, matching it, NULL
    /// as false; `None` for every row kept — without copying the kept rows out; `None` when no
    /// row is kept.
    async fn read_unit(&self, i: usize, rows: Range<u64>) -> LResult<Option<(RecordBatch, Option<BooleanArray>)>> {
        let f = &self.fragments[i];
        let live: Option<BooleanArray> = match &f.deleted {
            Some(dv) if !dv.is_empty() => Some((rows.start..rows.end).map(|r| Some(!dv.contains(r as u32))).collect()),
            _ => None,
        };
        let Some(flt) = &self.filter else {
            let mut columns = Vec::with_capacity(f.columns.len());
            for c in &f.columns {
                columns.push(self.column(f, c, rows.clone()).await?);
            }
            if live.as_ref().is_some_and(|l| l.true_count() == 0) {
                return Ok(None);
            }
            return Ok(Some((RecordBatch::try_new(self.schema.clone(), columns)?, live)));
        };
        let mut inputs = Vec::with_capacity(flt.inputs.len());
        for at in &flt.inputs {
            inputs.push(self.column(f, &f.columns[*at], rows.clone()).await?);
        }
        let n = (rows.end - rows.start) as usize;
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(n));
        let input = RecordBatch::try_new_with_options(flt.input_schema.clone(), inputs.clone(), &options)?;
        let kept = flt.predicate.evaluate(&input)?.into_array(n)?;
        let Some(kept) = kept.as_any().downcast_ref::<BooleanArray>() else {
            return Err(lance_error(format!("the filter {} did not answer booleans", flt.predicate)));
        };
        // NULL as false, then without the deleted rows
        let kept = match kept.null_count() {
            0 => kept.clone(),
            _ => arrow::compute::prep_null_mask_filter(kept),
        };
        let kept = match &live {
            Some(live) => arrow::compute::and(&kept, live)?,
            None => kept,
        };
        let values = kept.values();
        let (Some(first), Some(last)) = (values.set_indices().next(), (0..n).rev().find(|r| values.value(*r))) else {
            return Ok(None);
        };
        // the other columns only from the first kept row to the last
        let (len, sub) = (last + 1 - first, rows.start + first as u64..rows.start + last as u64 + 1);
        let mut columns = Vec::with_capacity(flt.keep);
        for (j, c) in f.columns.iter().enumerate().take(flt.keep) {
            columns.push(match flt.inputs.iter().position(|at| *at == j) {
                Some(k) => inputs[k].slice(first, len),
                None => self.column(f, c, sub.clone()).await?,
            });
        }
        let batch = RecordBatch::try_new(flt.schema.clone(), columns)?;
        let kept = kept.slice(first, len);
        Ok(Some((batch, (kept.true_count() < len).then_some(kept))))
    }

    /// The plan's decoded units in order (`read_unit`: each with the rows it keeps, not copied
    /// out unless it keeps under half of them), `ahead` decoded at a time on the runtime's threads; units without a kept row are
    /// left out. For a consumer that applies the kept rows itself (`crate::aggregate`'s own
    /// grouping).
    pub fn units(self, ahead: usize) -> impl futures::Stream<Item = LResult<(RecordBatch, Option<BooleanArray>)>> + Send {
        let plan = Arc::new(self);
        let step = plan.batch_rows;
        let tasks: Vec<(usize, Range<u64>)> = plan
            .fragments
            .iter()
            .enumerate()
            .flat_map(|(i, f)| (f.rows.start..f.rows.end).step_by(step as usize).map(move |r| (i, r..(r + step).min(f.rows.end))))
            .collect();
        futures::stream::iter(tasks)
            .map(move |(i, rows)| {
                let plan = plan.clone();
                tokio::spawn(async move {
                    // a unit keeping under half its rows is cut down to them here, in the decode
                    // task (a copy of few rows costs less than the consumer's work over all)
                    match plan.read_unit(i, rows).await? {
                        Some((batch, Some(kept))) if kept.true_count() * 2 < kept.len() => {
                            Ok(keep_rows(batch, Some(&kept))?.map(|b| (b, None)))
                        }
                        other => Ok(other),
                    }
                })
            })
            .buffered(ahead.max(1))
            .map(|r| match r {
                Ok(r) => r,
                Err(join) => Err(lance_error(format!("a decode task failed: {join}"))),
            })
            .try_filter_map(|u| async move { Ok(u) })
    }

    /// The schema of the units `units` hands on.
    pub fn unit_schema(&self) -> SchemaRef {
        self.out_schema()
    }

    /// Rows `rows` of column `c` of fragment `f`, deleted rows included.
    async fn column(&self, f: &FragmentRead, c: &Column, rows: Range<u64>) -> LResult<ArrayRef> {
        // the parts of pages the rows touch, and the bytes each needs
        let mut parts = Vec::new();
        for (first, p) in &c.pages {
            let end = first + p.rows();
            if p.rows() == 0 || end <= rows.start || *first >= rows.end {
                continue;
            }
            let local = rows.start.max(*first) - first..rows.end.min(end) - first;
            let (chunks, bytes) = p.chunks_for(&local);
            parts.push((*first, p.clone(), chunks, bytes));
        }
        let ranges = parts.iter().map(|(_, p, _, b)| p.file_range(b)).collect();
        let data = f.files[c.file].submit_request(ranges, rows.start).await?;
        let mut out = Decoded::default();
        let mut decoded_from = None;
        for ((first, p, chunks, _), bytes) in parts.iter().zip(&data) {
            if chunks.is_empty() {
                return Err(lance_error(format!("column {}: no chunk of a page holds rows {rows:?}", c.field.name())));
            }
            decoded_from.get_or_insert(first + p.chunk_first(chunks.start));
            p.decode(chunks.clone(), bytes, &mut out).map_err(lance_error)?;
        }
        let Some(skip) = rows.start.checked_sub(decoded_from.unwrap_or(rows.start)) else {
            return Err(lance_error(format!("column {}: decoding started after row {}", c.field.name(), rows.start)));
        };
        let skip = skip as usize;
        let (want, array) = ((rows.end - rows.start) as usize, to_array(&c.field, out)?);
        if skip + want > array.len() {
            return Err(lance_error(format!(
                "column {}: {} rows decoded from row {skip} where {want} were wanted",
                c.field.name(),
                array.len()
            )));
        }
        Ok(array.slice(skip, want))
    }
}

/// The rows of `batch` that `keep` (no NULLs) keeps, all when `None`; `None` when none is left.
fn keep_rows(batch: RecordBatch, keep: Option<&BooleanArray>) -> LResult<Option<RecordBatch>> {
    let Some(keep) = keep else { return Ok(Some(batch)) };
    Ok(match keep.true_count() {
        0 => None,
        n if n == batch.num_rows() => Some(batch),
        _ => Some(arrow::compute::filter_record_batch(&batch, keep)?),
    })
}

fn datafusion_error(e: lance::Error) -> lance::deps::datafusion::error::DataFusionError {
    lance::deps::datafusion::error::DataFusionError::External(Box::new(e))
}

/// An Arrow array of `field`'s type over decoded values (checked: lengths, offsets, UTF-8).
fn to_array(field: &Field, d: Decoded) -> LResult<ArrayRef> {
    let dt = field.data_type().clone();
    let nulls = d.validity.as_ref().map(|v| Buffer::from(arrow::buffer::BooleanBuffer::from(v.as_slice()).into_inner()));
    if nulls.is_some() && !field.is_nullable() {
        return Err(lance_error(format!("column {} is not nullable but a page holds NULLs", field.name())));
    }
    let data = match Out::of(&dt) {
        Some(Out::Fixed(n)) => {
            let len = d.values.len() / n;
            ArrayData::try_new(dt, len, nulls, 0, vec![Buffer::from_vec(d.values)], vec![])
        }
        _ => {
            let len = d.offsets.len().saturating_sub(1);
            let offsets = if d.offsets.is_empty() { vec![0] } else { d.offsets };
            let offsets = match dt {
                DataType::LargeUtf8 | DataType::LargeBinary => {
                    Buffer::from_vec(offsets.into_iter().map(|o| o as i64).collect::<Vec<i64>>())
                }
                _ => {
                    if offsets.last().is_some_and(|o| *o > i32::MAX as u64) {
                        return Err(lance_error(format!("column {} passes 2 GiB in one batch", field.name())));
                    }
                    Buffer::from_vec(offsets.into_iter().map(|o| o as i32).collect::<Vec<i32>>())
                }
            };
            ArrayData::try_new(dt, len, nulls, 0, vec![offsets, Buffer::from_vec(d.values)], vec![])
        }
    };
    Ok(make_array(data.map_err(|e| lance_error(format!("column {}: {e}", field.name())))?))
}
