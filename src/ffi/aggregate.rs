//! C ABI of aggregates computed inside splits (`crate::aggregate`).

use std::ffi::c_char;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use super::handles::{LanceDataset, LanceIoStats, LanceSplit};
use super::scan::{export_stream, import_stream};
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{guard_code, handle_ref, opt_str_arg, out_arg, slice_arg, str_list_arg};
use crate::aggregate::{self, Aggregate, AggregateSpec, Function};
use crate::error::{HostError, Result};
use crate::scan::BatchReader;

/// An aggregate function of a `LanceAggregateSpec`.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceAggregateFunction {
    /// COUNT(*): rows (its column is NULL). Int64.
    LANCE_AGG_COUNT_STAR = 1,
    /// COUNT(col): rows where `col` is not NULL (any column type). Int64.
    LANCE_AGG_COUNT = 2,
    /// SUM(col) of a number column: int64 for signed integers, uint64 for unsigned (a sum
    /// beyond their range is LANCE_ERR_OUT_OF_RANGE, never wrapped), float64 for floats,
    /// decimal128(38, s) for decimal128(p, s). NULL for a group of only NULLs.
    LANCE_AGG_SUM = 3,
    /// MIN(col) of a number, string, binary, boolean, date, time or timestamp column, in the
    /// column's type. Float NaN is left out (a group of only NaN gives NaN).
    LANCE_AGG_MIN = 4,
    /// MAX(col), as MIN.
    LANCE_AGG_MAX = 5,
    /// AVG(col) of a number column: float64; for decimal128(p, s) the column's type, rounded
    /// half away from zero.
    LANCE_AGG_AVG = 6,
    /// COUNT(DISTINCT col): distinct non-NULL values of a number, string, binary, boolean, date,
    /// time or timestamp column. Int64; exact across splits (each partial ships its group's
    /// distinct values). Floats count every NaN as one value and -0.0 as 0.0, as SQL engines do
    /// (pyarrow's count_distinct compares bits). Since 0.15.
    LANCE_AGG_COUNT_DISTINCT = 7,
    /// APPROX_COUNT_DISTINCT(col): a HyperLogLog estimate of the distinct non-NULL values of the
    /// types COUNT(DISTINCT) takes (values compared as it compares them). Int64; standard error
    /// 1.6 % (4,096 registers); each partial ships a 4 KiB sketch per group (state `hll`,
    /// Binary) and the merge takes the registers' maxima, so partials of any splits merge to the
    /// one-call estimate exactly. Since 0.15.
    LANCE_AGG_APPROX_COUNT_DISTINCT = 8,
}

/// An aggregate query: group-by columns, aggregates, an optional filter. Initialize with
/// `lance_aggregate_init_v2(&spec, sizeof spec)` (no group-by, no aggregates, no filter), then
/// set the fields. Since 0.12.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceAggregateSpec {
    /// `sizeof(LanceAggregateSpec)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// Group-by columns (scalar columns: numbers, strings, binary, booleans, dates, times,
    /// timestamps, dictionaries); NULL keys form their own group. May be NULL when
    /// `num_group_by` is 0 (one result row).
    pub group_by: *const *const c_char,
    pub num_group_by: usize,
    /// `num_aggregates` `LanceAggregateFunction` values.
    pub functions: *const i32,
    /// `num_aggregates` column names, the entry of COUNT(*) NULL. The array itself may be
    /// NULL when every aggregate is COUNT(*).
    pub columns: *const *const c_char,
    /// `num_aggregates` result column names; NULL (the array or an entry) gives the default
    /// name: `count(*)`, `sum(col)`, `min(col)`, ...
    pub aliases: *const *const c_char,
    pub num_aggregates: usize,
    /// A Lance SQL filter on the table's columns (as scans take it); NULL = every row.
    pub filter_sql: *const c_char,
    /// `num_aggregates` Lance SQL expressions over the row, aggregated instead of a column
    /// (`l_extendedprice * (1 - l_discount)`); NULL (the array or an entry) = the entry of
    /// `columns`. An aggregate gives a column or an expression, not both. Integer arithmetic
    /// inside an expression is refused (LANCE_ERR_NOT_SUPPORTED: the engine would wrap an
    /// overflow); cast to DECIMAL(38, 0) or DOUBLE. Since 0.15.
    pub expressions: *const *const c_char,
    /// `num_group_by` Lance SQL expressions over the row, grouped by instead of a column
    /// (`date_part('year', l_shipdate)`, `CASE WHEN ... END`); NULL (the array or an entry) =
    /// the entry of `group_by` is a column. For an expression key, `group_by[i]` names the
    /// result column (NULL: the expression's text). Its type must be one a column key may
    /// have; integer arithmetic is refused as in `expressions`. Partial states of different
    /// key expressions do not merge (LANCE_ERR_INVALID_ARGUMENT). Since 0.15.
    pub group_by_expressions: *const *const c_char,
    /// A serialized Substrait `Plan` (`substrait_plan_len` bytes) that says the whole spec:
    /// its root an `AggregateRel` with one grouping set (keys: columns or expressions; measures
    /// `count` — no argument: COUNT(*), DISTINCT: COUNT(DISTINCT) —, `sum`, `min`, `max`,
    /// `avg`, of a column or of an expression a `ProjectRel` below computes) over `ProjectRel`s
    /// and `FilterRel`s over one `ReadRel` (its filter and projection included); `RelRoot.names`
    /// name the result columns. The `ReadRel`'s named table is not looked up: the spec runs on
    /// the dataset it is given to, whose columns the `base_schema` names; each column's type is
    /// the table's, not the declared one. Expressions mean what Substrait says (a float NaN
    /// compares false). NULL or 0 bytes: the fields above say the spec; with a plan they must
    /// be empty (no group-by, no aggregates, no filter). Since 0.15.
    pub substrait_plan: *const u8,
    pub substrait_plan_len: usize,
}

impl Default for LanceAggregateSpec {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            group_by: std::ptr::null(),
            num_group_by: 0,
            functions: std::ptr::null(),
            columns: std::ptr::null(),
            aliases: std::ptr::null(),
            num_aggregates: 0,
            filter_sql: std::ptr::null(),
            expressions: std::ptr::null(),
            group_by_expressions: std::ptr::null(),
            substrait_plan: std::ptr::null(),
            substrait_plan_len: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer and pointer fields. It has no 0.1
// layout (V0_SIZE is never used).
unsafe impl Extensible for LanceAggregateSpec {
    const NAME: &'static str = "LanceAggregateSpec";
    const MIN_SIZE: usize = 64;
    const V0_SIZE: usize = 56;
    fn initial() -> Self {
        Self::default()
    }
}

/// A list of `n` C strings whose array or entries may be NULL.
fn opt_str_list(p: *const *const c_char, n: usize, name: &str) -> Result<Vec<Option<String>>> {
    if p.is_null() {
        return Ok(vec![None; n]);
    }
    let ptrs = slice_arg(p, n, name)?;
    ptrs.iter()
        .enumerate()
        .map(|(i, s)| opt_str_arg(*s, &format!("{name}[{i}]")).map(|s| s.map(str::to_string)))
        .collect()
}

/// A spec as the caller gave it: its fields, or a Substrait plan read against the table the
/// call runs on (`resolve`).
enum SpecArg {
    Fields(AggregateSpec),
    Plan(Vec<u8>),
}

impl SpecArg {
    fn resolve(self, table: &crate::snapshot::Snapshot) -> Result<AggregateSpec> {
        match self {
            SpecArg::Fields(spec) => Ok(spec),
            SpecArg::Plan(bytes) => aggregate::substrait::spec_from_plan(&bytes, &table.arrow_schema()),
        }
    }
}

fn spec_arg(p: *const LanceAggregateSpec) -> Result<SpecArg> {
    let s = read_in(p, Layout::Sized, "spec")?.ok_or_else(|| HostError::invalid("spec is NULL"))?;
    let plan = slice_arg(s.substrait_plan, s.substrait_plan_len, "spec->substrait_plan")?;
    if !plan.is_empty() {
        let given = [
            (s.num_group_by > 0, "group-by keys"),
            (s.num_aggregates > 0, "aggregates"),
            (!s.filter_sql.is_null(), "a filter"),
        ];
        if let Some((_, what)) = given.iter().find(|(set, _)| *set) {
            return Err(HostError::invalid(format!(
                "spec->substrait_plan is given with {what}: a plan says the whole spec (leave num_group_by, num_aggregates and filter_sql empty)"
            )));
        }
        return Ok(SpecArg::Plan(plan.to_vec()));
    }
    fields_spec(&s).map(SpecArg::Fields)
}

fn fields_spec(s: &LanceAggregateSpec) -> Result<AggregateSpec> {
    if s.num_aggregates > aggregate::spec::MAX_AGGREGATES {
        return Err(HostError::invalid(format!(
            "spec->num_aggregates is {}; at most {}",
            s.num_aggregates,
            aggregate::spec::MAX_AGGREGATES
        )));
    }
    if s.num_group_by > aggregate::spec::MAX_GROUP_BY {
        return Err(HostError::invalid(format!(
            "spec->num_group_by is {}; at most {}",
            s.num_group_by,
            aggregate::spec::MAX_GROUP_BY
        )));
    }
    let (group_by, group_expressions) = if s.group_by_expressions.is_null() {
        (str_list_arg(s.group_by, s.num_group_by, "spec->group_by")?, Vec::new())
    } else {
        let names = opt_str_list(s.group_by, s.num_group_by, "spec->group_by")?;
        let expressions = opt_str_list(s.group_by_expressions, s.num_group_by, "spec->group_by_expressions")?;
        aggregate::spec::group_keys(names, expressions, ("spec->group_by", "spec->group_by_expressions"))?
    };
    let functions = slice_arg(s.functions, s.num_aggregates, "spec->functions")?;
    let columns = opt_str_list(s.columns, s.num_aggregates, "spec->columns")?;
    let aliases = opt_str_list(s.aliases, s.num_aggregates, "spec->aliases")?;
    let expressions = opt_str_list(s.expressions, s.num_aggregates, "spec->expressions")?;
    let aggregates = functions
        .iter()
        .zip(columns)
        .zip(aliases)
        .zip(expressions)
        .enumerate()
        .map(|(i, (((f, column), alias), expression))| {
            let function = Function::from_i32(*f)
                .ok_or_else(|| HostError::invalid(format!("spec->functions[{i}] is {f}, not a LanceAggregateFunction")))?;
            Ok(Aggregate { function, column, alias, expression })
        })
        .collect::<Result<Vec<_>>>()?;
    let filter = opt_str_arg(s.filter_sql, "spec->filter_sql")?.map(str::to_string);
    Ok(AggregateSpec { group_by, group_expressions, aggregates, filter })
}

/// Hand a computed batch and its I/O to the caller's `out` and `io` (already checked).
fn hand_out(batch: arrow::array::RecordBatch, stats: crate::io_stats::IoStats, out: &mut FFI_ArrowArrayStream, io: *mut LanceIoStats) -> Result<()> {
    if let Some(slot) = out_slot(io, Layout::Sized, "io")? {
        slot.write(&stats.into());
    }
    export_stream(BatchReader::from_batch(batch), out);
    Ok(())
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with the empty
/// spec (no group-by, no aggregates, no filter) and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure. Since 0.12.
#[no_mangle]
pub extern "C" fn lance_aggregate_init_v2(out: *mut LanceAggregateSpec, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Compute the partial states of `spec` over a scan split (its fragments, or its row slice of
/// one) on `dataset`, which must be the split's table at the split's version (a shipped split
/// on another process works as on the planner). Deleted rows never count; the filter applies
/// first; only the aggregated, grouped and filtered columns are read.
///
/// `*out` receives a stream of partial states: the group-by columns, then per aggregate `i`
/// its state columns `agg<i>_<state>` with the state in their field metadata
/// (`lance_host.state`: `count` int64, `sum` — decimal128(38, 0) for integers, float64 for
/// floats, decimal128(38, s) for decimals —, `min`/`max` in the column's type, `nans` int64).
/// A host merges the partials of all splits itself (sum counts, sums and nans; min of mins;
/// max of maxes; AVG = sum / count) or hands them to `lance_aggregate_merge`. The states carry
/// exact sums, so partials merge to the one-call answer. If `io` is not NULL it receives the
/// I/O the split caused.
///
/// Borrows its arguments; `*out` is owned by the caller (release it). Thread-safe. Returns
/// LANCE_ERR_INVALID_ARGUMENT for NULL arguments, an unknown column, a bad function value, an
/// empty or unparsable filter, duplicate result names, more than 1024 aggregates or 64 group-by
/// columns, a split of another table or version or not a scan split, a `substrait_plan` that
/// is no plan, has no `AggregateRel`, names a column the table lacks or comes with other
/// fields; LANCE_ERR_NOT_SUPPORTED for a function the column's type does not take (SUM of a
/// string, MIN of a vector), a group-by on a list or vector column, or a plan asking what the
/// translation does not take (a `FetchRel`, a join, a function without a Lance SQL
/// equivalent); or the I/O error. Outputs are not written on failure. Since 0.12.
#[no_mangle]
pub extern "C" fn lance_dataset_aggregate_split(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    spec: *const LanceAggregateSpec,
    out: *mut FFI_ArrowArrayStream,
    io: *mut LanceIoStats,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let s = handle_ref(split, "split")?;
        let spec = spec_arg(spec)?;
        let out = out_arg(out, "out")?;
        out_slot(io, Layout::Sized, "io")?;
        let table = ds.split_table(&s.split)?;
        let spec = spec.resolve(table)?;
        let (batch, stats) = aggregate::aggregate_split(table, &s.split, &spec)?;
        hand_out(batch, stats, out, io)
    })
}

/// The results of `spec` over the whole pinned `dataset`, in one call: a stream of the
/// group-by columns and one column per aggregate (named by its alias or `sum(col)`, ...; types
/// as `LanceAggregateFunction` says). Without group-by columns it has exactly one row (COUNT 0
/// and NULL for the others over no rows). Equal to merging the partial states of every scan
/// split of the dataset. If `io` is not NULL it receives the I/O the call caused.
///
/// Borrows its arguments; `*out` is owned by the caller. Thread-safe. Errors as
/// `lance_dataset_aggregate_split`, and LANCE_ERR_OUT_OF_RANGE for an integer SUM beyond
/// int64 (uint64). Outputs are not written on failure. Since 0.12.
#[no_mangle]
pub extern "C" fn lance_dataset_aggregate(
    dataset: *const LanceDataset,
    spec: *const LanceAggregateSpec,
    out: *mut FFI_ArrowArrayStream,
    io: *mut LanceIoStats,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let spec = spec_arg(spec)?;
        let out = out_arg(out, "out")?;
        out_slot(io, Layout::Sized, "io")?;
        let table = ds.table()?;
        let spec = spec.resolve(table)?;
        let (batch, stats) = aggregate::aggregate(table, &spec)?;
        hand_out(batch, stats, out, io)
    })
}

/// Merge the partial states of `num_partials` streams (`partials` is an array of that many
/// `ArrowArrayStream` structs: those of `lance_dataset_aggregate_split` for the splits of one
/// plan, or streams of the same batches after a trip through Arrow IPC — the field metadata
/// must survive) into the results, as `lance_dataset_aggregate` returns them.
///
/// Takes ownership of every stream in `partials` (each is released, also on failure; a NULL
/// `partials` with 0 streams is INVALID_ARGUMENT); `*out` is owned by the caller. Thread-safe.
/// Returns LANCE_ERR_INVALID_ARGUMENT for no streams, streams of different aggregates or
/// batches that are not partial states; LANCE_ERR_OUT_OF_RANGE for an integer SUM beyond
/// int64 (uint64); or the stream's own error. Outputs are not written on failure. Since 0.12.
#[no_mangle]
pub extern "C" fn lance_aggregate_merge(
    partials: *mut FFI_ArrowArrayStream,
    num_partials: usize,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        if partials.is_null() || num_partials == 0 {
            return Err(HostError::invalid("no partial-state streams to merge (partials is NULL or num_partials is 0)"));
        }
        // Take every stream first, so that all are released whatever fails.
        let mut readers = Vec::with_capacity(num_partials);
        let mut first_error = None;
        for i in 0..num_partials {
            // SAFETY: the caller passes an array of `num_partials` streams (contract above).
            let p = unsafe { partials.add(i) };
            match import_stream(p, &format!("partials[{i}]")) {
                Ok((r, _)) => readers.push(r),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let out = out_arg(out, "out")?;
        let merged = aggregate::merge_readers(readers)?;
        export_stream(BatchReader::from_batch(merged), out);
        Ok(())
    })
}
