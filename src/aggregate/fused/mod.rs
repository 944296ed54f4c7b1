//! The library's own grouping and summing of an aggregate's rows (issue 62: with the own
//! decoder reading, about two thirds of TPC-H Q1's CPU went to DataFusion's hash aggregate — the
//! kept rows copied out of each unit first, the decimal expressions evaluated node by node with
//! a checked 128-bit operation per value, the two string keys hashed row by row).
//!
//! When the decoder reads an aggregate's rows (`own::OwnRead`) and the spec has only what this
//! module computes — up to four group keys that are columns of integer, date, time, timestamp,
//! duration, decimal, string or binary type; COUNT(*), COUNT, and SUM and AVG of integers and
//! decimals; arguments that are columns or `+`, `-`, `*` over decimal columns and literals (with
//! the casts to wider decimals DataFusion's coercion puts in) — the partial states are computed
//! here, over each decoded unit and the rows it keeps, without copying the kept rows:
//! - each key column's values are numbered as first seen (a value of up to 16 bytes as a 128-bit
//!   code in an open-addressed table, longer ones in a hash map, NULL as a value of its own), and
//!   the tuple of numbers names the group, numbered as first seen too;
//! - each argument is evaluated 1,024 rows at a time as a short program over 128-bit registers
//!   with arrow's decimal rules (for `+` and `-` the operand of the smaller scale multiplied up to
//!   the larger; for `*` the scales add), every operation checked; a product of two values that
//!   fit 64 bits is one machine multiply. A kept row whose value leaves 128 bits makes the whole
//!   aggregate go back to DataFusion's (`Fallback`), which then answers as it always did;
//! - sums add up as `exact_sum`'s do (an i128 running sum per group, carried into 256 bits when
//!   it would leave i128: exact in 76 digits), counts in 64 bits.
//!
//! The states have the types and values of DataFusion's (the tests compare both;
//! `LANCE_HOST_AGGREGATE=datafusion` in the environment turns this path off).

mod keys;
mod program;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Decimal256Array, Int64Array, RecordBatch, UInt32Array};
use arrow::datatypes::i256;
use arrow_schema::{DataType, Schema, SchemaRef};
use lance::deps::datafusion::common::DFSchema;
use lance::deps::datafusion::logical_expr::execution_props::ExecutionProps;
use lance::deps::datafusion::logical_expr::Expr;
use lance::deps::datafusion::physical_expr::create_physical_expr;

use super::exact_sum::carried;
use keys::{KeyColumn, Numbering, DROPPED};
use program::{compile, emit, integer_digits, run, run_row, Ins};
use super::spec::{GroupKey, Kind, Resolved, State};

/// Rows evaluated together.
const CHUNK: usize = 1024;
/// Digits of a sum's state (`exact_sum`: 76, narrowed to 38 later, with a check).
const SUM_PRECISION: u8 = 76;
/// Group keys this path takes at most (their numbers packed into 128 bits).
const MAX_KEYS: usize = 4;

/// Whether the environment asks for DataFusion's aggregate everywhere.
pub fn disabled() -> bool {
    std::env::var("LANCE_HOST_AGGREGATE").is_ok_and(|v| v == "datafusion")
}

/// A kept row's value left 128 bits: DataFusion's aggregate answers instead.
#[derive(Debug)]
pub struct Fallback;

/// An aggregate's argument (a column or an expression) and what is kept per group for it: the
/// rows where it is not NULL and, when a SUM takes it, the exact sum (an i128 running sum and a
/// 256-bit carry it moves into when it would leave i128, as `exact_sum`).
#[derive(Debug)]
struct Arg {
    argument: Option<Expr>,
    column: Option<String>,
    /// the columns whose NULLs make it NULL
    columns: Vec<usize>,
    /// its register and scale, for an integer or decimal value
    result: Option<(usize, i8)>,
    summed: bool,
    counts: Vec<u64>,
    lows: Vec<i128>,
    carries: Vec<i256>,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    CountRows,
    Count(usize),
    Sum(usize, i8),
}

/// One split's (or table's) aggregate computed here.
#[derive(Debug)]
pub struct Fused {
    keys: Vec<KeyColumn>,
    /// groups of several keys: the tuple of key numbers → the group's number
    tuples: Numbering,
    /// groups of several narrow keys: their values packed into 128 bits → the group's number
    packed: Numbering,
    /// per group, the number of each key's value
    group_keys: Vec<[u32; MAX_KEYS]>,
    program: Vec<Ins>,
    args: Vec<Arg>,
    /// kept rows per group
    rows: Vec<u64>,
    ops: Vec<Op>,
    out: SchemaRef,
}

fn key_type(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Date32 | Date64 | Time32(_) | Time64(_)
            | Timestamp(_, _) | Duration(_) | Decimal128(_, _) | Utf8 | LargeUtf8 | Binary | LargeBinary
    )
}

impl Fused {
    /// The aggregate of `groups` and `resolved` over units of `schema` (the decoder's columns), or
    /// `None` when the spec has something this path does not compute (DataFusion's then does).
    pub fn new(groups: &[GroupKey], resolved: &[Resolved], schema: &SchemaRef, out: &SchemaRef) -> Option<Fused> {
        if disabled() || groups.len() > MAX_KEYS {
            return None;
        }
        let position = |name: &str| schema.fields().iter().position(|f| f.name() == name);
        let mut keys = Vec::new();
        for g in groups {
            if g.expression.is_some() {
                return None;
            }
            let at = position(g.field.name())?;
            if !key_type(schema.field(at).data_type()) || schema.field(at).data_type() != g.field.data_type() {
                return None;
            }
            keys.push(KeyColumn { at, numbers: Numbering::new(), values: Vec::new() });
        }
        let df_schema = DFSchema::try_from(schema.as_ref().clone()).ok()?;
        let props = ExecutionProps::default();
        let mut program = Vec::new();
        let mut args: Vec<Arg> = Vec::new();
        let mut ops = Vec::new();
        for r in resolved {
            for s in &r.states {
                let scale = match (s, &r.kind) {
                    (State::Count, Kind::None) => {
                        ops.push(Op::CountRows);
                        continue;
                    }
                    (State::Count, _) => None,
                    (State::Sum, Kind::Signed | Kind::Unsigned) => Some(0),
                    (State::Sum, Kind::Decimal128 { scale, .. }) => Some(*scale),
                    _ => return None,
                };
                let at = match args.iter().position(|a| a.argument == r.argument && a.column == r.aggregate.column) {
                    Some(at) => at,
                    None => {
                        let (columns, result) = match (&r.argument, &r.aggregate.column) {
                            (Some(e), _) => {
                                let physical = create_physical_expr(e, &df_schema, &props).ok()?;
                                let mut columns = Vec::new();
                                let (reg, s, _) = compile(&physical, schema, &mut program, &mut columns)?;
                                (columns, Some((reg, s)))
                            }
                            (None, Some(c)) => {
                                let at = position(c)?;
                                let result = match schema.field(at).data_type() {
                                    DataType::Decimal128(_, s) => Some((emit(&mut program, Ins::Load(at))?, *s)),
                                    t if integer_digits(t).is_some() => Some((emit(&mut program, Ins::Load(at))?, 0)),
                                    _ => None,
                                };
                                (vec![at], result)
                            }
                            (None, None) => return None,
                        };
                        args.push(Arg {
                            argument: r.argument.clone(),
                            column: r.aggregate.column.clone(),
                            columns,
                            result,
                            summed: false,
                            counts: Vec::new(),
                            lows: Vec::new(),
                            carries: Vec::new(),
                        });
                        args.len() - 1
                    }
                };
                match scale {
                    None => ops.push(Op::Count(at)),
                    // the sum's scale is its argument's
                    Some(scale) if args[at].result.is_some_and(|(_, s)| s == scale) => {
                        args[at].summed = true;
                        ops.push(Op::Sum(at, scale));
                    }
                    Some(_) => return None,
                }
            }
        }
        Some(Fused {
            keys,
            tuples: Numbering::new(),
            packed: Numbering::new(),
            group_keys: Vec::new(),
            program,
            args,
            rows: Vec::new(),
            ops,
            out: out.clone(),
        })
    }

    fn groups(&self) -> usize {
        match self.keys.len() {
            0 => 1,
            1 => self.keys[0].numbers.count(),
            _ => self.group_keys.len(),
        }
    }

    /// Adds the kept rows of a decoded unit (`None`: every row). Rows not kept, and rows whose
    /// argument is NULL, add to a slot past the last group, emptied after each unit, so that
    /// the loops over the rows do not branch.
    pub fn add(&mut self, batch: &RecordBatch, kept: Option<&BooleanArray>) -> Result<(), Fallback> {
        // a unit that keeps under half its rows is cut down to them first (a copy of few rows
        // costs less than computing every argument over all of them)
        if let Some(k) = kept.filter(|k| k.true_count() * 2 < k.len()) {
            return match arrow::compute::filter_record_batch(batch, k) {
                Ok(few) => self.add(&few, None),
                Err(_) => Err(Fallback),
            };
        }
        let n = batch.num_rows();
        let mut groups_of = self.group_rows(batch, kept);
        let dropped = self.groups() as u32;
        let slots = dropped as usize + 1;
        groups_of.iter_mut().filter(|g| **g == DROPPED).for_each(|g| *g = dropped);
        // the unit's kept rows per group
        let mut unit = vec![0u64; slots];
        groups_of.iter().for_each(|g| unit[*g as usize] += 1);
        self.rows.resize(slots, 0);
        self.rows.iter_mut().zip(&unit).for_each(|(r, u)| *r += u);
        let columns = batch.columns();
        // per argument, its rows' groups: a copy with its NULL rows dropped where it has some
        let mut own_groups: Vec<Option<Vec<u32>>> = Vec::with_capacity(self.args.len());
        for arg in &mut self.args {
            let nulls: Vec<arrow::buffer::NullBuffer> = arg.columns.iter().filter_map(|c| columns[*c].logical_nulls()).collect();
            arg.counts.resize(slots, 0);
            if arg.summed {
                arg.lows.resize(slots, 0);
            }
            if nulls.is_empty() {
                arg.counts.iter_mut().zip(&unit).for_each(|(c, u)| *c += u);
                own_groups.push(None);
                continue;
            }
            let mut g = groups_of.clone();
            for b in &nulls {
                (0..n).filter(|i| b.is_null(*i)).for_each(|i| g[i] = dropped);
            }
            g.iter().for_each(|x| arg.counts[*x as usize] += 1);
            own_groups.push(Some(g));
        }
        let mut result = Ok(());
        if self.args.iter().any(|a| a.summed) {
            let mut regs: Vec<Vec<i128>> = vec![vec![0i128; CHUNK]; self.program.len()];
            'chunks: for at in (0..n).step_by(CHUNK) {
                let m = CHUNK.min(n - at);
                let over = run(&self.program, columns, at, m, &mut regs);
                for (arg, groups) in self.args.iter_mut().zip(&own_groups) {
                    let Some((reg, _)) = arg.result.filter(|_| arg.summed) else { continue };
                    let rows = &groups.as_deref().unwrap_or(&groups_of)[at..at + m];
                    // some row overflowed: no row that counts may have
                    if over && (0..m).any(|j| rows[j] != dropped && run_row(&self.program, columns, at + j, reg).is_none()) {
                        result = Err(Fallback);
                        break 'chunks;
                    }
                    let (lows, carries) = (&mut arg.lows, &mut arg.carries);
                    for (g, v) in rows.iter().zip(&regs[reg][..m]) {
                        let g = *g as usize;
                        match lows[g].checked_add(*v) {
                            Some(sum) => lows[g] = sum,
                            None => {
                                carries.resize(slots.max(carries.len()), i256::ZERO);
                                carries[g] = carried(carries[g], lows[g]);
                                lows[g] = *v;
                            }
                        }
                    }
                }
            }
        }
        // the dropped slot starts empty for the next unit (it may become a group's)
        let d = dropped as usize;
        self.rows[d] = 0;
        for arg in &mut self.args {
            arg.counts[d] = 0;
            if let Some(l) = arg.lows.get_mut(d) {
                *l = 0;
            }
            if let Some(c) = arg.carries.get_mut(d) {
                *c = i256::ZERO;
            }
        }
        result
    }

    /// The partial states: the group keys, then each state column, of the types DataFusion's
    /// aggregate gives them (sums 76 digits wide; the caller narrows them as it does DataFusion's).
    pub fn finish(mut self) -> Result<RecordBatch, String> {
        let groups = self.groups();
        self.rows.resize(groups, 0);
        for arg in &mut self.args {
            arg.counts.resize(groups, 0);
            arg.lows.resize(groups, 0);
            arg.carries.resize(groups, i256::ZERO);
        }
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (j, key) in self.keys.iter().enumerate() {
            let parts: Vec<&dyn Array> = key.values.iter().map(|a| a.as_ref()).collect();
            let values = if parts.is_empty() {
                arrow::array::new_empty_array(self.out.field(j).data_type())
            } else {
                arrow::compute::concat(&parts).map_err(|e| e.to_string())?
            };
            let ids: UInt32Array = match self.keys.len() {
                1 => (0..groups as u32).collect(),
                _ => self.group_keys.iter().map(|t| t[j]).collect(),
            };
            columns.push(arrow::compute::take(values.as_ref(), &ids, None).map_err(|e| e.to_string())?);
        }
        let counts = |c: &[u64]| -> ArrayRef { Arc::new(Int64Array::from_iter_values(c.iter().map(|n| *n as i64))) };
        for op in &self.ops {
            columns.push(match *op {
                Op::CountRows => counts(&self.rows),
                Op::Count(a) => counts(&self.args[a].counts),
                Op::Sum(a, scale) => {
                    let arg = &self.args[a];
                    // a group without a value sums to NULL
                    let totals: Decimal256Array = (0..groups)
                        .map(|g| (arg.counts[g] > 0).then(|| carried(arg.carries[g], arg.lows[g])))
                        .collect();
                    Arc::new(totals.with_precision_and_scale(SUM_PRECISION, scale).map_err(|e| e.to_string())?)
                }
            });
        }
        let fields: Vec<arrow_schema::Field> = columns
            .iter()
            .zip(self.out.fields())
            .map(|(c, f)| f.as_ref().clone().with_data_type(c.data_type().clone()).with_nullable(true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| e.to_string())
    }
}

