//! An aggregate's rows read by the library's own page decoder (`crate::decode`) when it reads
//! every page they touch: the fragments or row slice, the columns the keys, aggregates and
//! filter use, and the filter as Lance's scanner plans it, evaluated on each decoded unit (`Plan::with_filter`).

use std::ops::Range;
use std::sync::Arc;

use arrow::array::RecordBatch;
use lance::deps::datafusion::logical_expr::Expr;
use lance::deps::datafusion::physical_plan::ExecutionPlan;
use lance::Dataset;
use lance_table::format::Fragment;

use super::AggregateSpec;
use crate::error::Result;
use crate::scan;
use crate::snapshot::Snapshot;

/// What the decoder needs to try an aggregate's read (`crate::decode::plan` decides).
pub struct OwnRead {
    ds: Arc<Dataset>,
    fragments: Vec<Fragment>,
    rows: Option<Range<u64>>,
    columns: Vec<String>,
    filter: Option<Expr>,
}

impl OwnRead {
    /// `None` when the environment turns the decoder off or the filter does not plan here
    /// (Lance's scanner then reports it).
    pub fn new(
        snapshot: &Snapshot,
        ds: &Arc<Dataset>,
        spec: &AggregateSpec,
        fragments: Option<&[u64]>,
        slice: Option<(u64, crate::split::RowSlice)>,
        group: &[Expr],
        aggregates: &[Expr],
    ) -> Result<Option<OwnRead>> {
        if crate::decode::disabled() {
            return Ok(None);
        }
        let filter = match &spec.filter {
            None => None,
            Some(sql) => {
                let planner = lance_datafusion::planner::Planner::new(Arc::new(arrow_schema::Schema::from(ds.schema())));
                match planner.parse_filter(sql).and_then(|e| planner.optimize_expr(e)) {
                    Ok(e) => Some(e),
                    Err(_) => return Ok(None),
                }
            }
        };
        let mut columns: Vec<String> = group
            .iter()
            .chain(aggregates)
            .chain(&filter)
            .flat_map(|e| e.column_refs().into_iter().map(|c| c.name.clone()))
            .collect();
        columns.sort();
        columns.dedup();
        let (fragments, rows) = scan::read_fragments(snapshot, fragments, slice)?;
        Ok(Some(OwnRead { ds: ds.clone(), fragments, rows, columns, filter }))
    }

    /// The schema of the decoder's units: the columns read, in this order.
    pub fn schema(&self) -> arrow_schema::SchemaRef {
        let fields: Vec<arrow_schema::Field> =
            self.columns.iter().filter_map(|c| self.ds.schema().field(c)).map(arrow_schema::Field::from).collect();
        Arc::new(arrow_schema::Schema::new(fields))
    }

    /// The filtered rows as the decoder's plan, or `None` when the decoder does not read them
    /// all, the filter uses an indexed column (Lance answers it from the index), or planning
    /// fails (a missing file, say: Lance's read then reports it).
    pub async fn read(&self) -> lance::Result<Option<crate::decode::Plan>> {
        let filtered: Vec<String> = self.filter.iter().flat_map(|f| f.column_refs()).map(|c| c.name.clone()).collect();
        if crate::decode::indexed(&self.ds, &filtered).await.unwrap_or(true) {
            return Ok(None);
        }
        let Ok(Some(read)) = crate::decode::plan(&self.ds, &self.fragments, self.rows.clone(), &self.columns).await else {
            return Ok(None);
        };
        let keep = self.columns.len();
        Ok(match &self.filter {
            Some(f) => read.with_filter(f, keep).ok(),
            None => Some(read),
        })
    }
}

/// The partial states of `input`'s rows computed by the library's own grouping (`fused`), or
/// the decoder's read for DataFusion's aggregate when `fused` is `None` (the spec has what it
/// does not compute) or a kept row's value left 128 bits (DataFusion's aggregate then computes
/// it again and answers: an overflow error); `Err(None)` when the decoder does not read the rows.
pub async fn grouped_here(
    input: &OwnRead,
    fused: Option<super::fused::Fused>,
) -> lance::Result<std::result::Result<RecordBatch, Option<crate::decode::Plan>>> {
    let read = input.read().await?;
    let (mut fused, read) = match (fused, read) {
        (Some(fused), Some(read)) => (fused, read),
        (_, read) => return Ok(Err(read)),
    };
    let mut units = std::pin::pin!(read.units(2));
    while let Some(unit) = futures::StreamExt::next(&mut units).await {
        let (batch, kept) = unit?;
        if fused.add(&batch, kept.as_ref()).is_err() {
            return Ok(Err(input.read().await?));
        }
    }
    crate::metrics::aggregate_read(true);
    crate::metrics::aggregate_grouped_here();
    fused.finish().map(Ok).map_err(|e| lance::Error::internal(format!("aggregate states: {e}")))
}

/// `read` as an execution plan: one partition decoding two batches at a time (each filtered in
/// its decode task) — a one-call aggregate already runs one split per core (and a host's
/// workers one split each), so more would only contend.
pub fn exec(read: crate::decode::Plan) -> lance::Result<Arc<dyn ExecutionPlan>> {
    read.into_exec(1, 2)
}
