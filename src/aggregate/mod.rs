//! Aggregates computed inside the splits (COUNT, SUM, MIN, MAX, AVG with GROUP BY and a
//! filter): each split yields a few rows of *partial states* — group keys and, per aggregate,
//! its state columns — and a merge combines the partials of every split into the results.
//!
//! Partial states are computed by Lance's own aggregate in its scanner (DataFusion's hash
//! aggregate over the split's rows: deleted rows and the filter applied, only the aggregated
//! columns read) — or, where the library's own decoder reads the rows, by DataFusion's aggregate
//! over that read (`own`), or by the library's own grouping when it computes every state
//! (`fused`: the same types and values) — with the aggregates rewritten so that partials merge
//! exactly and the results equal SQL's and pyarrow's where those agree:
//! - SUM of integers is summed as Decimal128(38, 0) (exact; DataFusion's int64 SUM wraps on
//!   overflow) and the result must fit int64 (uint64 for unsigned columns), else
//!   LANCE_ERR_OUT_OF_RANGE — never a wrapped value (pyarrow wraps).
//! - AVG ships a sum and a count; decimals average in their own type rounded half away from
//!   zero (as pyarrow), numbers to float64.
//! - MIN/MAX of floats leave NaN out (as pyarrow: DataFusion would order NaN above every
//!   number) and count the NaNs, so that a group of only NaNs is NaN.
//! - NULLs are ignored; a group whose values are all NULL gives NULL (COUNT gives 0); NULL group
//!   keys form their own group.
//!
//! The partial schema describes itself (field metadata), so a merge needs nothing but the
//! partial batches.

mod exact_sum;
mod expr;
mod fused;
pub mod hll;
mod own;
mod shared;
pub mod spec;
pub mod substrait;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, Decimal128Array, Decimal128Builder, Float64Array, Int64Array, RecordBatch, UInt64Array,
};
use arrow::compute::cast;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lance::deps::datafusion::functions_aggregate::expr_fn as agg;
use lance::deps::datafusion::logical_expr::{Expr, ExprFunctionExt};
use lance::deps::datafusion::prelude::{cast as df_cast, ident, lit, not};

use crate::error::{HostError, LanceErrorCode, Result};
use crate::scan;
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};
pub use spec::{Aggregate, AggregateSpec, Function, Kind, Resolved, State};
use spec::{META_AGGREGATE, META_FUNCTION, META_INPUT, META_KIND, META_NAME, META_STATE};

/// Schema metadata key of a partial-state batch: the number of group-by columns it starts with.
pub const META_GROUP_BY: &str = "lance_host.aggregate_group_by";

fn isnan(e: Expr) -> Expr {
    lance::deps::datafusion::functions::math::expr_fn::isnan(df_cast(e, DataType::Float64))
}

/// The DataFusion aggregate that computes `state` of aggregate `r`.
fn state_expr(r: &Resolved, state: State) -> Expr {
    let column = || match &r.argument {
        Some(e) => e.clone(),
        None => ident(r.aggregate.column.clone().unwrap_or_default()),
    };
    match (state, &r.kind) {
        (State::Count, Kind::None) => agg::count(lit(1i64)),
        (State::Count, _) => agg::count(column()),
        // DataFusion's Decimal128 SUM wraps past i128: integers and decimals sum exactly in 76
        // digits (in i128 until a group's sum leaves it), checked when the state narrows to 38
        (State::Sum, Kind::Signed | Kind::Unsigned | Kind::Decimal128 { .. }) => exact_sum::udaf().call(vec![column()]),
        (State::Sum, Kind::Float) => agg::sum(df_cast(column(), DataType::Float64)),
        (State::Sum, _) => agg::sum(column()),
        (State::Min, Kind::Float) => agg::min(column()).filter(not(isnan(column()))).build().unwrap_or_else(|_| agg::min(column())),
        (State::Max, Kind::Float) => agg::max(column()).filter(not(isnan(column()))).build().unwrap_or_else(|_| agg::max(column())),
        (State::Min, _) => agg::min(column()),
        (State::Max, _) => agg::max(column()),
        (State::NaNs, _) => agg::count(column()).filter(isnan(column())).build().unwrap_or_else(|_| agg::count(column())),
        // each split's sketch of its distinct values (NULL left out); the merge takes maxima
        (State::Hll, _) => hll::udaf(false).call(vec![column()]),
        // each split's distinct values (NULL left out); the merge unites them, normalizing floats
        (State::Distinct, _) => agg::array_agg(column())
            .distinct()
            .filter(column().is_not_null())
            .build()
            .unwrap_or_else(|_| agg::array_agg(column())),
    }
}

/// The schema of the partial states of `resolved` grouped by `group_fields`.
fn partial_schema(group_fields: &[Field], resolved: &[Resolved]) -> SchemaRef {
    let mut fields: Vec<Field> = group_fields.iter().map(|f| f.clone().with_nullable(true)).collect();
    let groups: Vec<String> = group_fields.iter().map(|f| f.name().clone()).collect();
    for (i, r) in resolved.iter().enumerate() {
        for s in &r.states {
            let t = spec::state_type(*s, &r.kind, r.input.as_ref());
            let function = match r.aggregate.function {
                Function::CountStar => "count_star",
                f => f.sql_name(),
            };
            let meta = HashMap::from([
                (META_AGGREGATE.to_string(), i.to_string()),
                (META_STATE.to_string(), s.suffix().to_string()),
                (META_KIND.to_string(), r.kind.tag()),
                (META_NAME.to_string(), r.aggregate.name()),
                (META_FUNCTION.to_string(), function.to_string()),
                (META_INPUT.to_string(), r.aggregate.argument().unwrap_or_default().to_string()),
            ]);
            fields.push(Field::new(spec::state_column(&groups, i, *s), t, !matches!(s, State::Count | State::NaNs)).with_metadata(meta));
        }
    }
    let meta = HashMap::from([(META_GROUP_BY.to_string(), group_fields.len().to_string())]);
    Arc::new(Schema::new_with_metadata(fields, meta))
}

/// A spec checked against a snapshot: its group keys, its aggregates and the partial states'
/// schema.
struct Prepared {
    groups: Vec<spec::GroupKey>,
    resolved: Vec<Resolved>,
    schema: SchemaRef,
}

/// Check `spec` against the snapshot (`Prepared`).
fn prepare(snapshot: &Snapshot, spec: &AggregateSpec) -> Result<Prepared> {
    let table: SchemaRef = Arc::new(snapshot.arrow_schema());
    let (groups, resolved) = spec::resolve_with(spec, &table, &|text, what| expr::plan_argument(&table, text, what))?;
    if let Some(f) = &spec.filter {
        scan::check_sql_filter(snapshot, f)?;
    }
    let fields: Vec<Field> = groups.iter().map(|g| g.field.clone()).collect();
    let schema = partial_schema(&fields, &resolved);
    Ok(Prepared { groups, resolved, schema })
}

/// The partial states of the rows of `fragments` (None = all) — or of one fragment's row slice —
/// that match the spec's filter, with the I/O they caused.
fn partial(
    snapshot: &Snapshot,
    spec: &AggregateSpec,
    fragments: Option<&[u64]>,
    slice: Option<(u64, crate::split::RowSlice)>,
) -> Result<(RecordBatch, IoStats)> {
    let stats = OpStats::default();
    let prepared = prepare(snapshot, spec)?;
    let batch = partial_with(snapshot, spec, &prepared, fragments, slice, &stats)?;
    Ok((batch, stats.snapshot()))
}

/// `partial` of a spec checked once (`prepare`), counting its I/O in `stats` (shared by the
/// splits of one call).
fn partial_with(
    snapshot: &Snapshot,
    spec: &AggregateSpec,
    Prepared { groups, resolved, schema }: &Prepared,
    fragments: Option<&[u64]>,
    slice: Option<(u64, crate::split::RowSlice)>,
    stats: &OpStats,
) -> Result<RecordBatch> {
    crate::metrics::op(crate::metrics::Op::Aggregate);
    if counts_from_manifest(snapshot, spec, resolved) {
        return from_manifest(snapshot, schema, fragments, slice);
    }
    let ds = stats.dataset(snapshot);
    let mut scanner = ds.scan();
    let lance_err = |e| HostError::from_lance("cannot plan the aggregate", e);
    if let Some(f) = &spec.filter {
        scanner.filter(f).map_err(lance_err)?;
    }
    if let Some(ids) = fragments {
        scanner.with_fragments(scan::resolve_fragments(snapshot, ids)?);
    }
    if let Some((fragment, rows)) = slice {
        scanner.with_physical_row_addr_prefilter(scan::slice_rows(snapshot, fragment, rows)?);
        // the prefilter needs row addresses to apply to
        scanner.with_row_id();
    }
    scan::apply_memory_bounds(snapshot, &mut scanner, &scan::ScanOptions::default())?;
    if snapshot.is_local() && spec.filter.is_some() {
        // Lance reads columns wider than 10 bytes on a local disk after the filter, row by row
        // address, which pays off when a filter keeps ~0.1 % of the rows; an aggregate reads
        // every kept row of its columns, and reading them with the filter's columns was 1.6x
        // faster at 98 % kept, 2x at 10 %, 3.3x at 30 %, equal at 1.7 % (bench/TPCH.md)
        scanner.materialization_style(lance::dataset::scanner::MaterializationStyle::AllEarly);
    }
    let group: Vec<Expr> = groups
        .iter()
        .map(|g| match &g.expression {
            Some(e) => e.clone().alias(g.field.name().clone()),
            None => ident(g.field.name().clone()),
        })
        .collect();
    let mut aggregates = Vec::new();
    for (i, r) in resolved.iter().enumerate() {
        for s in &r.states {
            aggregates.push(state_expr(r, *s).alias(spec::state_column(&spec.group_by, i, *s)));
        }
    }
    // an expression the aggregates would compute twice per row: computed once (`shared`)
    let uses: Vec<Expr> = groups
        .iter()
        .filter_map(|g| g.expression.clone())
        .chain(resolved.iter().flat_map(|r| r.argument.iter().flat_map(|a| r.states.iter().map(move |_| a.clone()))))
        .collect();
    let repeated = shared::repeated(&uses);
    // the library's own decoder reads the columns when it can read every page (crate::decode),
    // and the library groups and sums them itself when it computes every state (`fused`)
    let own_read = own::OwnRead::new(snapshot, &ds, spec, fragments, slice, &group, &aggregates)?;
    let fused = own_read.as_ref().and_then(|r| fused::Fused::new(groups, resolved, &r.schema(), schema));
    let own_aggregate = (group.clone(), aggregates.clone(), repeated.clone());
    let own_plan = if repeated.is_empty() {
        scanner
            .aggregate(lance::dataset::scanner::AggregateExpr::datafusion(group, aggregates))
            .map_err(lance_err)?;
        None
    } else {
        let mut columns: Vec<String> = group
            .iter()
            .chain(&aggregates)
            .flat_map(|e| e.column_refs().into_iter().map(|c| c.name.clone()))
            .collect();
        columns.sort();
        columns.dedup();
        scanner.project(&columns).map_err(lance_err)?;
        Some((group, aggregates, repeated))
    };
    stats.attach(&mut scanner);
    let callback = stats.callback();
    let batches = session::run_on_worker(async move {
        let own = match &own_read {
            Some(input) => match own::grouped_here(input, fused).await? {
                Ok(states) => return Ok(vec![states]),
                Err(read) => read,
            },
            None => None,
        };
        crate::metrics::aggregate_read(own.is_some());
        let plan = match own {
            Some(read) => {
                let (group, aggregates, repeated) = own_aggregate;
                shared::plan(own::exec(read)?, group, aggregates, &repeated)?
            }
            None => {
                let plan = scanner.create_plan().await?;
                match own_plan {
                    Some((group, aggregates, repeated)) => shared::plan(plan, group, aggregates, &repeated)?,
                    None => plan,
                }
            }
        };
        let options = lance_datafusion::exec::LanceExecutionOptions {
            execution_stats_callback: Some(callback),
            ..Default::default()
        };
        let stream = lance_datafusion::exec::execute_plan(plan, options)?;
        futures::TryStreamExt::try_collect::<Vec<_>>(stream).await.map_err(lance::Error::from)
    })?
    .map_err(|e| HostError::from_lance("cannot compute the aggregate", e))?;
    conform(schema, batches)
}

/// Whether the manifest answers `spec` (the statistics shortcut below).
fn counts_from_manifest(snapshot: &Snapshot, spec: &AggregateSpec, resolved: &[Resolved]) -> bool {
    if spec.filter.is_some() || !spec.group_by.is_empty() {
        return false;
    }
    let table = snapshot.arrow_schema();
    resolved.iter().all(|r| match (r.aggregate.function, &r.aggregate.column) {
        (Function::CountStar, _) => true,
        (Function::Count, Some(c)) => table.field_with_name(c).map(|f| !f.is_nullable()).unwrap_or(false),
        _ => false,
    })
}

/// The statistics shortcut: with no filter and no group-by, COUNT(*) — and COUNT(col) of a
/// column the schema declares non-nullable — is the manifest's count of visible rows (rows per
/// fragment minus deleted rows; a row slice's from its deletion vector): no data page is read.
/// Lance 14's data files keep no per-column minimum or maximum in their footers, so MIN and MAX
/// always read the column.
fn from_manifest(
    snapshot: &Snapshot,
    schema: &SchemaRef,
    fragments: Option<&[u64]>,
    slice: Option<(u64, crate::split::RowSlice)>,
) -> Result<RecordBatch> {
    let (rows, _) = crate::count::count_rows_sliced(snapshot, fragments, slice, None)?;
    let rows = i64::try_from(rows).map_err(|_| HostError::internal("row count beyond int64"))?;
    let columns: Vec<ArrayRef> = schema.fields().iter().map(|_| Arc::new(Int64Array::from(vec![rows])) as ArrayRef).collect();
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| HostError::internal(format!("aggregate states: {e}")))
}

/// Lance's output batches as one batch of `schema` (state types made exact: a decimal sum's
/// precision widened to 38).
/// `c` as the state or result column `f`: a 76-digit decimal sum narrowed to 38 digits only
/// when it fits (else LANCE_ERR_OUT_OF_RANGE; arrow's cast would give NULL), any other cast
/// refusing values that do not fit rather than making them NULL.
fn narrow(c: &ArrayRef, f: &Field) -> Result<ArrayRef> {
    if let (DataType::Decimal256(_, _), DataType::Decimal128(p, s)) = (c.data_type(), f.data_type()) {
        let wide = c
            .as_any()
            .downcast_ref::<arrow::array::Decimal256Array>()
            .ok_or_else(|| HostError::internal(format!("aggregate state '{}': not a decimal256 array", f.name())))?;
        return Ok(Arc::new(decimal_to_128(wide, *p, *s, f.name())?));
    }
    let options = arrow::compute::CastOptions { safe: false, ..Default::default() };
    arrow::compute::cast_with_options(c, f.data_type(), &options)
        .map_err(|e| HostError::internal(format!("aggregate state '{}': {e}", f.name())))
}

/// 10^38: the first value a Decimal128 of 38 digits cannot hold.
const TEN_POW_38: i128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// The 76-digit decimals of `wide` as Decimal128(`precision`, `scale`), or
/// LANCE_ERR_OUT_OF_RANGE naming the first that has more than 38 digits.
fn decimal_to_128(wide: &arrow::array::Decimal256Array, precision: u8, scale: i8, name: &str) -> Result<Decimal128Array> {
    let mut b = Decimal128Builder::with_capacity(wide.len());
    for v in wide.iter() {
        match v {
            None => b.append_null(),
            Some(v) => match v.to_i128().filter(|n| n.unsigned_abs() < TEN_POW_38 as u128) {
                Some(n) => b.append_value(n),
                None => {
                    return Err(HostError::new(
                        LanceErrorCode::LANCE_ERR_OUT_OF_RANGE,
                        format!(
                            "{name} is {}, which does not fit decimal128(38, {scale}) (more than 38 digits; the library does not wrap sums)",
                            format_decimal(&v.to_string(), scale)
                        ),
                    ))
                }
            },
        }
    }
    b.finish()
        .with_precision_and_scale(precision, scale)
        .map_err(|e| HostError::internal(format!("{name}: {e}")))
}

/// The unscaled integer `digits` written with `scale` decimals.
fn format_decimal(digits: &str, scale: i8) -> String {
    if scale <= 0 {
        return format!("{digits}{}", "0".repeat(scale.unsigned_abs() as usize));
    }
    let (sign, digits) = digits.strip_prefix('-').map_or(("", digits), |d| ("-", d));
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

fn conform(schema: &SchemaRef, batches: Vec<RecordBatch>) -> Result<RecordBatch> {
    let mut columns: Vec<Vec<ArrayRef>> = vec![Vec::new(); schema.fields().len()];
    for b in &batches {
        if b.num_columns() != schema.fields().len() {
            return Err(HostError::internal(format!(
                "the aggregate plan returned {} columns, {} expected",
                b.num_columns(),
                schema.fields().len()
            )));
        }
        for (i, (c, f)) in b.columns().iter().zip(schema.fields()).enumerate() {
            let c = if c.data_type() == f.data_type() { c.clone() } else { narrow(c, f)? };
            columns[i].push(c);
        }
    }
    let arrays = columns
        .into_iter()
        .zip(schema.fields())
        .map(|(parts, f)| {
            if parts.is_empty() {
                Ok(arrow::array::new_empty_array(f.data_type()))
            } else {
                let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                arrow::compute::concat(&refs).map_err(|e| HostError::internal(format!("aggregate state '{}': {e}", f.name())))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema.clone(), arrays).map_err(|e| HostError::internal(format!("aggregate states: {e}")))
}

/// The partial states of a scan split (its fragments, or its row slice of one).
pub fn aggregate_split(snapshot: &Snapshot, split: &crate::split::Split, spec: &AggregateSpec) -> Result<(RecordBatch, IoStats)> {
    split.check_snapshot(snapshot)?;
    if split.kind != crate::split::SplitKind::Scan {
        return Err(HostError::invalid("an aggregate runs on scan splits (plan them with a scan plan)"));
    }
    let slice = split.rows.map(|r| (split.fragment_ids[0], r));
    partial(snapshot, spec, Some(&split.fragment_ids), slice)
}

/// The partial states of the whole snapshot (one partial; merge it for the results).
pub fn aggregate_partial(snapshot: &Snapshot, spec: &AggregateSpec) -> Result<(RecordBatch, IoStats)> {
    partial(snapshot, spec, None, None)
}

/// Tables with fewer visible rows are aggregated as one partial in one call.
const PARALLEL_MIN_ROWS: u64 = 200_000;

/// The results of `spec` over the whole snapshot, in one call. Lance runs one aggregate on one
/// thread (its decoding is parallel, the hash aggregate is not), so a larger table is planned
/// in scan splits of about rows / cores (row slices where fragments are larger), their partial
/// states computed on one thread each, and merged: the plan a distributed host runs, in one
/// process.
pub fn aggregate(snapshot: &Snapshot, spec: &AggregateSpec) -> Result<(RecordBatch, IoStats)> {
    let prepared = prepare(snapshot, spec)?;
    let stats = OpStats::default();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(16) as u64;
    let rows = snapshot.count_rows()?;
    if cores < 2 || rows < PARALLEL_MIN_ROWS || counts_from_manifest(snapshot, spec, &prepared.resolved) {
        let partial = partial_with(snapshot, spec, &prepared, None, None, &stats)?;
        return Ok((merge(vec![partial])?, stats.snapshot()));
    }
    let plan = crate::split::plan_scan(snapshot, rows.div_ceil(cores), true)?;
    let partials = std::thread::scope(|scope| {
        let tasks: Vec<_> = plan
            .splits
            .iter()
            .map(|split| {
                let (stats, prepared) = (&stats, &prepared);
                // The filter is planned on this thread: it needs the workers' stack.
                std::thread::Builder::new()
                    .name("lance-host-aggregate".into())
                    .stack_size(crate::runtime::WORKER_STACK_BYTES)
                    .spawn_scoped(scope, move || {
                        let slice = split.rows.map(|r| (split.fragment_ids[0], r));
                        partial_with(snapshot, spec, prepared, Some(&split.fragment_ids), slice, stats)
                    })
            })
            .collect();
        tasks
            .into_iter()
            .map(|t| match t {
                Ok(t) => t.join().unwrap_or_else(|_| Err(HostError::internal("an aggregate thread panicked"))),
                Err(e) => Err(HostError::internal(format!("cannot start an aggregate thread: {e}"))),
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let partials = if partials.is_empty() { vec![partial_with(snapshot, spec, &prepared, None, None, &stats)?] } else { partials };
    Ok((merge(partials)?, stats.snapshot()))
}

/// One partial-state column, as its schema describes it.
#[derive(Debug, Clone)]
struct StateField {
    index: usize,
    aggregate: usize,
    state: State,
    kind: Kind,
    name: String,
    function: String,
}

fn describe(schema: &Schema) -> Result<(usize, Vec<StateField>)> {
    let bad = |why: &str| HostError::invalid(format!("not a partial-state batch of lance-host aggregates: {why}"));
    let groups: usize = schema
        .metadata()
        .get(META_GROUP_BY)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("its schema has no group-by count"))?;
    if groups > schema.fields().len() {
        return Err(bad("more group-by columns than columns"));
    }
    let mut out = Vec::new();
    for (index, f) in schema.fields().iter().enumerate().skip(groups) {
        let m = f.metadata();
        let get = |k: &str| m.get(k).ok_or_else(|| bad(&format!("column '{}' lacks '{k}'", f.name())));
        let aggregate: usize = get(META_AGGREGATE)?
            .parse()
            .ok()
            .filter(|i| *i < spec::MAX_AGGREGATES)
            .ok_or_else(|| bad("a bad aggregate index"))?;
        let state = State::from_suffix(get(META_STATE)?).ok_or_else(|| bad("an unknown state"))?;
        let kind = Kind::from_tag(get(META_KIND)?).ok_or_else(|| bad("an unknown kind"))?;
        // the state's type is the one its kind gives (MIN and MAX: the column's, any; DISTINCT:
        // a list of the column's)
        let input = match (state, f.data_type()) {
            (State::Distinct, DataType::List(item)) => Some(item.data_type().clone()),
            (_, t) => Some(t.clone()),
        };
        let want = spec::state_type(state, &kind, input.as_ref());
        if f.data_type() != &want {
            return Err(bad(&format!("column '{}' is {}, its state needs {want}", f.name(), f.data_type())));
        }
        out.push(StateField {
            index,
            aggregate,
            state,
            kind,
            name: get(META_NAME)?.clone(),
            function: get(META_FUNCTION)?.clone(),
        });
    }
    if out.is_empty() {
        return Err(bad("no state columns"));
    }
    Ok((groups, out))
}

/// Combine partial-state batches (of one spec, from any splits of one snapshot) into the
/// results: the group-by columns, then one column per aggregate.
pub fn merge(partials: Vec<RecordBatch>) -> Result<RecordBatch> {
    let first = partials
        .first()
        .ok_or_else(|| HostError::invalid("no partial states to merge (give at least one split's partial states)"))?;
    let schema = first.schema();
    for (i, p) in partials.iter().enumerate() {
        if p.schema() != schema {
            return Err(HostError::invalid(format!(
                "partial states {i} are of another aggregate than partial states 0 (their schemas differ)"
            )));
        }
    }
    let (groups, states) = describe(&schema)?;
    let group: Vec<Expr> = schema.fields().iter().take(groups).map(|f| ident(f.name().clone())).collect();
    let combine: Vec<Expr> = states
        .iter()
        .map(|s| {
            let c = ident(schema.field(s.index).name().clone());
            let e = match (s.state, &s.kind) {
                (State::Sum, Kind::Decimal128 { scale, .. }) => agg::sum(df_cast(c, DataType::Decimal256(76, *scale))),
                (State::Count | State::NaNs | State::Sum, _) => agg::sum(c),
                (State::Min, _) => agg::min(c),
                (State::Max, _) => agg::max(c),
                // every split's list of the group's values; `finish` unites and counts them
                (State::Distinct, _) => agg::array_agg(c),
                (State::Hll, _) => hll::udaf(true).call(vec![c]),
            };
            e.alias(schema.field(s.index).name().clone())
        })
        .collect();
    let merged = session::block_on(async move {
        let ctx = lance::deps::datafusion::prelude::SessionContext::new();
        let df = ctx.read_batches(partials)?;
        let df = df.aggregate(group, combine)?;
        df.collect().await
    })?
    // partial states of this library always merge; a failure is the input's (forged metadata)
    .map_err(|e| HostError::invalid(format!("cannot merge the partial states: {e}")))?;
    // decimal sums stay 76 digits wide until `finish` narrows them (with a check)
    let wide: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match states.iter().find(|s| s.index == i) {
            Some(StateField { state: State::Sum, kind: Kind::Decimal128 { scale, .. }, .. }) => {
                f.as_ref().clone().with_data_type(DataType::Decimal256(76, *scale))
            }
            // the splits' lists, one list of them per group
            Some(StateField { state: State::Distinct, .. }) => {
                f.as_ref().clone().with_data_type(DataType::List(Arc::new(Field::new("item", f.data_type().clone(), true))))
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    let merged = conform(&Arc::new(Schema::new_with_metadata(wide, schema.metadata().clone())), merged)?;
    finish(&merged, groups, &states)
}

/// `merge` of partial-state streams a host hands over (each read to its end; a stream of no
/// batch counts as empty partial states of its schema).
pub fn merge_readers(readers: Vec<Box<dyn arrow::array::RecordBatchReader + Send>>) -> Result<RecordBatch> {
    let mut batches = Vec::new();
    for (i, r) in readers.into_iter().enumerate() {
        let schema = r.schema();
        let before = batches.len();
        for b in r {
            batches.push(b.map_err(|e| HostError::invalid(format!("partials[{i}]: {e}")))?);
        }
        if batches.len() == before {
            batches.push(RecordBatch::new_empty(schema));
        }
    }
    merge(batches)
}

fn out_of_range(name: &str, v: i128, to: &str) -> HostError {
    HostError::new(
        LanceErrorCode::LANCE_ERR_OUT_OF_RANGE,
        format!("{name} is {v}, which does not fit {to} (the library does not wrap sums)"),
    )
}

/// The results from merged states.
fn finish(merged: &RecordBatch, groups: usize, states: &[StateField]) -> Result<RecordBatch> {
    let schema = merged.schema();
    let mut fields: Vec<Field> = schema.fields().iter().take(groups).map(|f| f.as_ref().clone().with_metadata(HashMap::new())).collect();
    let mut columns: Vec<ArrayRef> = merged.columns().iter().take(groups).cloned().collect();
    let rows = merged.num_rows();
    let mut by_aggregate: Vec<Vec<&StateField>> = Vec::new();
    for s in states {
        if by_aggregate.len() <= s.aggregate {
            by_aggregate.resize(s.aggregate + 1, Vec::new());
        }
        by_aggregate[s.aggregate].push(s);
    }
    for parts in by_aggregate.iter().filter(|p| !p.is_empty()) {
        let find = |state: State| parts.iter().find(|s| s.state == state).map(|s| merged.column(s.index).clone());
        let head = parts[0];
        let name = head.name.clone();
        let counts = |a: ArrayRef| -> Int64Array {
            let a = a.as_any().downcast_ref::<Int64Array>().cloned().unwrap_or_else(|| Int64Array::from(vec![0; rows]));
            a.iter().map(|v| Some(v.unwrap_or(0))).collect()
        };
        let column: ArrayRef = match (head.function.as_str(), &head.kind) {
            ("count" | "count_star", _) => Arc::new(counts(find(State::Count).ok_or_else(|| missing(&name))?)),
            ("sum", Kind::Signed | Kind::Unsigned) => {
                let sum = find(State::Sum).ok_or_else(|| missing(&name))?;
                let sum = sum.as_any().downcast_ref::<Decimal128Array>().ok_or_else(|| missing(&name))?;
                if head.kind == Kind::Signed {
                    let mut out = Vec::with_capacity(rows);
                    for v in sum.iter() {
                        out.push(v.map(|v| i64::try_from(v).map_err(|_| out_of_range(&name, v, "int64"))).transpose()?);
                    }
                    Arc::new(Int64Array::from(out))
                } else {
                    let mut out = Vec::with_capacity(rows);
                    for v in sum.iter() {
                        out.push(v.map(|v| u64::try_from(v).map_err(|_| out_of_range(&name, v, "uint64"))).transpose()?);
                    }
                    Arc::new(UInt64Array::from(out))
                }
            }
            ("sum", Kind::Decimal128 { scale, .. }) => {
                let sum = find(State::Sum).ok_or_else(|| missing(&name))?;
                narrow(&sum, &Field::new(name.clone(), DataType::Decimal128(38, *scale), true))?
            }
            ("sum", _) => find(State::Sum).ok_or_else(|| missing(&name))?,
            ("avg", kind) => {
                let sum = find(State::Sum).ok_or_else(|| missing(&name))?;
                let count = counts(find(State::Count).ok_or_else(|| missing(&name))?);
                match kind {
                    Kind::Decimal128 { precision, scale } => {
                        // the sum is 76 digits wide; the average of values of `precision`
                        // digits has at most `precision` digits
                        let sum = sum.as_any().downcast_ref::<arrow::array::Decimal256Array>().ok_or_else(|| missing(&name))?;
                        let mut avg = arrow::array::Decimal256Builder::with_capacity(rows);
                        for (s, n) in sum.iter().zip(count.iter()) {
                            match (s, n.unwrap_or(0)) {
                                (Some(s), n) if n > 0 => avg.append_value(div_round_half_away_256(s, arrow::datatypes::i256::from_i128(n as i128))),
                                _ => avg.append_null(),
                            }
                        }
                        let avg = avg.finish();
                        Arc::new(decimal_to_128(&avg, *precision, *scale, &name)?)
                    }
                    _ => {
                        let sum = cast(&sum, &DataType::Float64).map_err(|e| HostError::internal(format!("{name}: {e}")))?;
                        let sum = sum.as_any().downcast_ref::<Float64Array>().ok_or_else(|| missing(&name))?;
                        let out: Float64Array = sum
                            .iter()
                            .zip(count.iter())
                            .map(|(s, n)| match (s, n.unwrap_or(0)) {
                                (Some(s), n) if n > 0 => Some(s / n as f64),
                                _ => None,
                            })
                            .collect();
                        Arc::new(out)
                    }
                }
            }
            ("min" | "max", Kind::Float) => {
                let value = find(if head.function == "min" { State::Min } else { State::Max }).ok_or_else(|| missing(&name))?;
                let nans = counts(find(State::NaNs).ok_or_else(|| missing(&name))?);
                let t = value.data_type().clone();
                let v = cast(&value, &DataType::Float64).map_err(|e| HostError::internal(format!("{name}: {e}")))?;
                let v = v.as_any().downcast_ref::<Float64Array>().ok_or_else(|| missing(&name))?;
                let out: Float64Array = v
                    .iter()
                    .zip(nans.iter())
                    .map(|(v, n)| match (v, n.unwrap_or(0)) {
                        (None, n) if n > 0 => Some(f64::NAN),
                        (v, _) => v,
                    })
                    .collect();
                cast(&(Arc::new(out) as ArrayRef), &t).map_err(|e| HostError::internal(format!("{name}: {e}")))?
            }
            ("count_distinct", _) => Arc::new(count_distinct(&find(State::Distinct).ok_or_else(|| missing(&name))?, &name)?),
            ("approx_count_distinct", _) => {
                Arc::new(hll::estimates(&find(State::Hll).ok_or_else(|| missing(&name))?).ok_or_else(|| missing(&name))?)
            }
            ("min", _) => find(State::Min).ok_or_else(|| missing(&name))?,
            ("max", _) => find(State::Max).ok_or_else(|| missing(&name))?,
            (other, _) => return Err(HostError::invalid(format!("partial states of an unknown function '{other}'"))),
        };
        fields.push(Field::new(name, column.data_type().clone(), true));
        columns.push(column);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| HostError::internal(format!("aggregate results: {e}")))
}

/// Per row of `lists` (each a list of the splits' lists of distinct values): how many distinct
/// values the splits hold together. Floats are compared as SQL engines compare them: every NaN
/// is one value and -0.0 equals 0.0 (pyarrow's count_distinct compares bits and counts more).
fn count_distinct(lists: &ArrayRef, name: &str) -> Result<Int64Array> {
    use arrow::array::{AsArray, Float32Array};
    use arrow::row::{RowConverter, SortField};
    let outer = lists.as_list_opt::<i32>().ok_or_else(|| missing(name))?;
    let mut out = Vec::with_capacity(outer.len());
    let mut converter: Option<RowConverter> = None;
    for row in 0..outer.len() {
        if outer.is_null(row) {
            out.push(0);
            continue;
        }
        let parts = outer.value(row);
        let parts = parts.as_list_opt::<i32>().ok_or_else(|| missing(name))?;
        // each split's list (a NULL list: a split where the group had no value), by its offsets
        let pieces: Vec<ArrayRef> = parts.iter().flatten().collect();
        if pieces.is_empty() {
            out.push(0);
            continue;
        }
        let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
        let values = arrow::compute::concat(&refs).map_err(|e| HostError::internal(format!("{name}: {e}")))?;
        // normalized floats: one NaN, one zero
        let values: ArrayRef = match values.data_type() {
            DataType::Float64 => {
                let v = values.as_primitive::<arrow::datatypes::Float64Type>();
                Arc::new(v.iter().map(|x| x.map(|x| if x.is_nan() { f64::NAN } else { x + 0.0 })).collect::<Float64Array>())
            }
            DataType::Float32 => {
                let v = values.as_primitive::<arrow::datatypes::Float32Type>();
                Arc::new(v.iter().map(|x| x.map(|x| if x.is_nan() { f32::NAN } else { x + 0.0 })).collect::<Float32Array>())
            }
            _ => values,
        };
        let conv = match &mut converter {
            Some(c) => c,
            None => converter.insert(
                RowConverter::new(vec![SortField::new(values.data_type().clone())]).map_err(|e| HostError::internal(format!("{name}: {e}")))?,
            ),
        };
        let rows = conv.convert_columns(&[values.clone()]).map_err(|e| HostError::internal(format!("{name}: {e}")))?;
        let mut seen = std::collections::HashSet::with_capacity(rows.num_rows());
        for (i, r) in rows.iter().enumerate() {
            if values.is_valid(i) {
                seen.insert(r.as_ref().to_vec());
            }
        }
        out.push(seen.len() as i64);
    }
    Ok(Int64Array::from(out))
}

fn missing(name: &str) -> HostError {
    HostError::invalid(format!("the partial states of '{name}' are incomplete or of the wrong type"))
}

/// `n / d` rounded half away from zero (d > 0).
/// `n / d` rounded half away from zero (`d` > 0).
fn div_round_half_away_256(n: arrow::datatypes::i256, d: arrow::datatypes::i256) -> arrow::datatypes::i256 {
    use arrow::datatypes::i256;
    let q = n.wrapping_div(d);
    let r = n.wrapping_rem(d);
    if r.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= d {
        if n < i256::ZERO {
            q.wrapping_sub(i256::ONE)
        } else {
            q.wrapping_add(i256::ONE)
        }
    } else {
        q
    }
}

#[cfg(test)]
fn div_round_half_away(n: i128, d: i128) -> i128 {
    use arrow::datatypes::i256;
    div_round_half_away_256(i256::from_i128(n), i256::from_i128(d)).as_i128()
}

#[cfg(test)]
mod tests {
    use super::div_round_half_away;

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(div_round_half_away(375, 2), 188);
        assert_eq!(div_round_half_away(-375, 2), -188);
        assert_eq!(div_round_half_away(374, 2), 187);
        assert_eq!(div_round_half_away(10, 3), 3);
        assert_eq!(div_round_half_away(-10, 3), -3);
        assert_eq!(div_round_half_away(20, 3), 7);
    }
}
