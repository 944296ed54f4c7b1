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
//! - sums add up in `exact_sum::Sum` (exact in 76 digits), counts in 64 bits.
//!
//! The states have the types and values of DataFusion's (the tests compare both;
//! `LANCE_HOST_AGGREGATE=datafusion` in the environment turns this path off).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal256Array, Int64Array, RecordBatch, UInt32Array};
use arrow::datatypes::{
    i256, Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_schema::{DataType, Schema, SchemaRef};
use lance::deps::datafusion::common::{DFSchema, ScalarValue};
use lance::deps::datafusion::logical_expr::execution_props::ExecutionProps;
use lance::deps::datafusion::logical_expr::{Expr, Operator};
use lance::deps::datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use lance::deps::datafusion::physical_plan::expressions::{BinaryExpr, CastExpr, Column, Literal, TryCastExpr};

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

/// Numbers for values, as first seen: 128-bit codes in an open-addressed table, longer byte
/// strings in a map, NULL as one more value.
#[derive(Debug)]
struct Numbering {
    codes: Vec<u128>,
    ids: Vec<u32>,
    bits: u32,
    long: HashMap<Box<[u8]>, u32>,
    null: Option<u32>,
    next: u32,
    /// codes in the table
    len: usize,
}

const EMPTY: u32 = u32::MAX;
/// The group of a row a unit does not keep (`Fused::group_rows`).
const DROPPED: u32 = u32::MAX;

impl Numbering {
    fn new() -> Self {
        let bits = 6;
        Numbering { codes: vec![0; 1 << bits], ids: vec![EMPTY; 1 << bits], bits, long: HashMap::new(), null: None, next: 0, len: 0 }
    }

    #[inline]
    fn slot(code: u128, bits: u32) -> usize {
        let x = (code as u64) ^ ((code >> 64) as u64).rotate_left(31);
        (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The number of `code`, and whether it is new.
    #[inline]
    fn code(&mut self, code: u128) -> (u32, bool) {
        let mask = (1usize << self.bits) - 1;
        let mut at = Self::slot(code, self.bits);
        loop {
            let id = self.ids[at];
            if id == EMPTY {
                let id = self.fresh();
                self.codes[at] = code;
                self.ids[at] = id;
                self.len += 1;
                if self.len * 2 > self.ids.len() {
                    self.grow();
                }
                return (id, true);
            }
            if self.codes[at] == code {
                return (id, false);
            }
            at = (at + 1) & mask;
        }
    }

    /// The number `code` was given (`insert`), if any.
    #[inline]
    fn find(&self, code: u128) -> Option<u32> {
        let mask = (1usize << self.bits) - 1;
        let mut at = Self::slot(code, self.bits);
        loop {
            match self.ids[at] {
                EMPTY => return None,
                id if self.codes[at] == code => return Some(id),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Gives `code` (not in the table) the number `id`.
    fn insert(&mut self, code: u128, id: u32) {
        let mask = (1usize << self.bits) - 1;
        let mut at = Self::slot(code, self.bits);
        while self.ids[at] != EMPTY {
            at = (at + 1) & mask;
        }
        self.codes[at] = code;
        self.ids[at] = id;
        self.len += 1;
        if self.len * 2 > self.ids.len() {
            self.grow();
        }
    }

    fn fresh(&mut self) -> u32 {
        let id = self.next;
        self.next += 1;
        id
    }

    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mut codes = vec![0u128; 1 << bits];
        let mut ids = vec![EMPTY; 1 << bits];
        let mask = (1usize << bits) - 1;
        for (c, id) in self.codes.iter().zip(&self.ids) {
            if *id == EMPTY {
                continue;
            }
            let mut at = Self::slot(*c, bits);
            while ids[at] != EMPTY {
                at = (at + 1) & mask;
            }
            codes[at] = *c;
            ids[at] = *id;
        }
        (self.codes, self.ids, self.bits) = (codes, ids, bits);
    }

    #[inline]
    fn bytes(&mut self, v: &[u8]) -> (u32, bool) {
        if v.len() < 16 {
            let mut b = [0u8; 16];
            b.iter_mut().zip(v).for_each(|(d, s)| *d = *s);
            b[15] = v.len() as u8;
            return self.code(u128::from_le_bytes(b));
        }
        if let Some(id) = self.long.get(v) {
            return (*id, false);
        }
        let id = self.fresh();
        self.long.insert(v.into(), id);
        (id, true)
    }

    fn null(&mut self) -> (u32, bool) {
        match self.null {
            Some(id) => (id, false),
            None => {
                let id = self.fresh();
                self.null = Some(id);
                (id, true)
            }
        }
    }
}

/// A group key column: where it is in the units, its values' numbers, and its distinct values
/// in the order of their numbers (parts taken from the units).
#[derive(Debug)]
struct KeyColumn {
    at: usize,
    numbers: Numbering,
    values: Vec<ArrayRef>,
}

/// One instruction of the aggregate's program (every argument's, common parts once);
/// instruction `k` writes register `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ins {
    /// the unit's column, as unscaled integers
    Load(usize),
    Const(i128),
    /// register × a power of ten
    Scale(usize, i128),
    Add(usize, usize),
    Sub(usize, usize),
    Mul(usize, usize),
}

/// `ins` appended to `program` — or the register of an equal instruction already there, or
/// computed now when its operands are constants; `None` when a constant leaves 128 bits.
fn emit(program: &mut Vec<Ins>, ins: Ins) -> Option<usize> {
    let constant = |r: usize| match program[r] {
        Ins::Const(v) => Some(v),
        _ => None,
    };
    let folded = match ins {
        Ins::Scale(a, by) => constant(a).map(|x| x.checked_mul(by)),
        Ins::Add(a, b) => constant(a).zip(constant(b)).map(|(x, y)| x.checked_add(y)),
        Ins::Sub(a, b) => constant(a).zip(constant(b)).map(|(x, y)| x.checked_sub(y)),
        Ins::Mul(a, b) => constant(a).zip(constant(b)).map(|(x, y)| x.checked_mul(y)),
        _ => None,
    };
    let ins = match folded {
        Some(Some(v)) => Ins::Const(v),
        Some(None) => return None,
        None => ins,
    };
    if let Some(at) = program.iter().position(|x| *x == ins) {
        return Some(at);
    }
    program.push(ins);
    Some(program.len() - 1)
}

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

/// `f(row)` for each of `n` rows `kept` keeps (all when `None`), in order.
#[inline]
fn for_kept(kept: Option<&BooleanArray>, n: usize, f: impl FnMut(usize)) {
    match kept {
        None => (0..n).for_each(f),
        Some(k) => k.values().set_indices().for_each(f),
    }
}

/// Decimal digits of an integer type (the integer digits a cast needs to hold it).
fn integer_digits(t: &DataType) -> Option<u8> {
    use DataType::*;
    Some(match t {
        Int8 | UInt8 => 3,
        Int16 | UInt16 => 5,
        Int32 | UInt32 => 10,
        Int64 => 19,
        UInt64 => 20,
        _ => return None,
    })
}

fn key_type(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Date32 | Date64 | Time32(_) | Time64(_)
            | Timestamp(_, _) | Duration(_) | Decimal128(_, _) | Utf8 | LargeUtf8 | Binary | LargeBinary
    )
}

/// `e` compiled into `program`: its register, scale and precision (arrow's rules), or `None`
/// for anything but columns, literals, widening casts to decimals and `+ - *` of decimals.
fn compile(e: &Arc<dyn PhysicalExpr>, schema: &Schema, program: &mut Vec<Ins>, columns: &mut Vec<usize>) -> Option<(usize, i8, u8)> {
    let any = e.as_ref();
    if let Some(c) = any.downcast_ref::<Column>() {
        let field = schema.fields().get(c.index()).filter(|f| f.name() == c.name())?;
        let (s, p) = match field.data_type() {
            DataType::Decimal128(p, s) => (*s, *p),
            t => (0, integer_digits(t)?),
        };
        if !columns.contains(&c.index()) {
            columns.push(c.index());
        }
        return Some((emit(program, Ins::Load(c.index()))?, s, p));
    }
    if let Some(l) = any.downcast_ref::<Literal>() {
        let (v, s, p) = match l.value().clone() {
            ScalarValue::Decimal128(Some(v), p, s) => (v, s, p),
            ScalarValue::Int8(Some(v)) => (v as i128, 0, 3),
            ScalarValue::Int16(Some(v)) => (v as i128, 0, 5),
            ScalarValue::Int32(Some(v)) => (v as i128, 0, 10),
            ScalarValue::Int64(Some(v)) => (v as i128, 0, 19),
            ScalarValue::UInt8(Some(v)) => (v as i128, 0, 3),
            ScalarValue::UInt16(Some(v)) => (v as i128, 0, 5),
            ScalarValue::UInt32(Some(v)) => (v as i128, 0, 10),
            ScalarValue::UInt64(Some(v)) => (v as i128, 0, 20),
            _ => return None,
        };
        return Some((emit(program, Ins::Const(v))?, s, p));
    }
    let cast = match (any.downcast_ref::<CastExpr>(), any.downcast_ref::<TryCastExpr>()) {
        (Some(c), _) => Some((c.expr(), c.cast_type())),
        (_, Some(c)) => Some((c.expr(), c.cast_type())),
        _ => None,
    };
    if let Some((child, to)) = cast {
        let DataType::Decimal128(p, s) = to else { return None };
        let (r, cs, cp) = compile(child, schema, program, columns)?;
        // only casts that keep every value: no scale dropped, no integer digit lost
        if *s < cs || (*p as i16 - *s as i16) < (cp as i16 - cs as i16) {
            return None;
        }
        let r = if *s == cs { r } else { emit(program, Ins::Scale(r, 10i128.checked_pow((*s - cs) as u32)?))? };
        return Some((r, *s, *p));
    }
    let b = any.downcast_ref::<BinaryExpr>()?;
    let decimal = |x: &Arc<dyn PhysicalExpr>| matches!(x.data_type(schema), Ok(DataType::Decimal128(_, _)));
    if !decimal(b.left()) || !decimal(b.right()) {
        return None;
    }
    let (l, s1, p1) = compile(b.left(), schema, program, columns)?;
    let (r, s2, p2) = compile(b.right(), schema, program, columns)?;
    let (reg, s, p) = match b.op() {
        Operator::Plus | Operator::Minus => {
            let s = s1.max(s2);
            let p = ((s.saturating_add((p1 as i8 - s1).max(p2 as i8 - s2))) as u8).saturating_add(1).min(38);
            let l = if s == s1 { l } else { emit(program, Ins::Scale(l, 10i128.checked_pow((s - s1) as u32)?))? };
            let r = if s == s2 { r } else { emit(program, Ins::Scale(r, 10i128.checked_pow((s - s2) as u32)?))? };
            let op = if *b.op() == Operator::Plus { Ins::Add(l, r) } else { Ins::Sub(l, r) };
            (emit(program, op)?, s, p)
        }
        Operator::Multiply => {
            let s = s1.checked_add(s2).filter(|s| *s <= 38)?;
            (emit(program, Ins::Mul(l, r))?, s, p1.saturating_add(p2 + 1).min(38))
        }
        _ => return None,
    };
    // the type DataFusion gives the node has the scale computed here
    match b.data_type(schema) {
        Ok(DataType::Decimal128(_, ds)) if ds == s => Some((reg, s, p)),
        _ => None,
    }
}

/// Rows `at..at + out.len()` of a decimal or integer column as unscaled 128-bit integers.
fn load(array: &ArrayRef, at: usize, out: &mut [i128]) {
    macro_rules! copy {
        ($t:ty) => {{
            let v = &array.as_primitive::<$t>().values()[at..at + out.len()];
            out.iter_mut().zip(v).for_each(|(o, x)| *o = *x as i128);
        }};
    }
    match array.data_type() {
        DataType::Decimal128(_, _) => out.copy_from_slice(&array.as_primitive::<Decimal128Type>().values()[at..at + out.len()]),
        DataType::Int64 => copy!(Int64Type),
        DataType::Int32 => copy!(Int32Type),
        DataType::Int16 => copy!(Int16Type),
        DataType::Int8 => copy!(Int8Type),
        DataType::UInt64 => copy!(UInt64Type),
        DataType::UInt32 => copy!(UInt32Type),
        DataType::UInt16 => copy!(UInt16Type),
        DataType::UInt8 => copy!(UInt8Type),
        // `compile` loads no other type
        _ => out.fill(0),
    }
}

#[inline]
fn mul(x: i128, y: i128) -> (i128, bool) {
    if x as i64 as i128 == x && y as i64 as i128 == y {
        ((x as i64 as i128) * (y as i64 as i128), false)
    } else {
        x.overflowing_mul(y)
    }
}

/// Registers of `program` over `n` rows from row `at`; whether an operation overflowed (in any
/// row: the caller checks the rows it keeps).
fn run(program: &[Ins], columns: &[ArrayRef], at: usize, n: usize, regs: &mut [Vec<i128>]) -> bool {
    let mut over = false;
    for (k, ins) in program.iter().enumerate() {
        let (before, rest) = regs.split_at_mut(k);
        let out = &mut rest[0][..n];
        match *ins {
            Ins::Load(c) => load(&columns[c], at, out),
            Ins::Const(v) => out.fill(v),
            Ins::Scale(a, by) => {
                for (o, x) in out.iter_mut().zip(&before[a][..n]) {
                    let (v, f) = mul(*x, by);
                    *o = v;
                    over |= f;
                }
            }
            Ins::Add(a, b) | Ins::Sub(a, b) | Ins::Mul(a, b) => {
                let (x, y) = (&before[a][..n], &before[b][..n]);
                for j in 0..n {
                    let (v, f) = match ins {
                        Ins::Add(..) => x[j].overflowing_add(y[j]),
                        Ins::Sub(..) => x[j].overflowing_sub(y[j]),
                        _ => mul(x[j], y[j]),
                    };
                    out[j] = v;
                    over |= f;
                }
            }
        }
    }
    over
}

/// Register `reg` of `program` at one row, every operation checked (`None`: it leaves 128 bits).
fn run_row(program: &[Ins], columns: &[ArrayRef], row: usize, reg: usize) -> Option<i128> {
    let mut regs: Vec<i128> = Vec::with_capacity(reg + 1);
    for ins in program.iter().take(reg + 1) {
        let v = match *ins {
            Ins::Load(c) => {
                let mut one = [0i128];
                load(&columns[c], row, &mut one);
                one[0]
            }
            Ins::Const(v) => v,
            Ins::Scale(a, by) => regs[a].checked_mul(by)?,
            Ins::Add(a, b) => regs[a].checked_add(regs[b])?,
            Ins::Sub(a, b) => regs[a].checked_sub(regs[b])?,
            Ins::Mul(a, b) => regs[a].checked_mul(regs[b])?,
        };
        regs.push(v);
    }
    regs.get(reg).copied()
}

/// The number of row `i`'s value of `key`'s column (`column`), taking the value if it is new.
fn number_one(key: &mut KeyColumn, column: &ArrayRef, i: usize) -> u32 {
    let numbers = &mut key.numbers;
    let (id, new) = if column.is_null(i) {
        numbers.null()
    } else {
        match column.data_type() {
            DataType::Utf8 => numbers.bytes(column.as_string::<i32>().value(i).as_bytes()),
            DataType::LargeUtf8 => numbers.bytes(column.as_string::<i64>().value(i).as_bytes()),
            DataType::Binary => numbers.bytes(column.as_binary::<i32>().value(i)),
            DataType::LargeBinary => numbers.bytes(column.as_binary::<i64>().value(i)),
            t => {
                let width = t.primitive_width().unwrap_or(0);
                let data = column.to_data();
                let at = (data.offset() + i) * width;
                let mut b = [0u8; 16];
                if let Some(v) = data.buffers().first().and_then(|raw| raw.as_slice().get(at..at + width)) {
                    b[..width].copy_from_slice(v);
                }
                numbers.code(u128::from_le_bytes(b))
            }
        }
    };
    if new {
        if let Ok(part) = arrow::compute::take(column.as_ref(), &UInt32Array::from(vec![i as u32]), None) {
            key.values.push(part);
        }
    }
    id
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
            1 => self.keys[0].numbers.next as usize,
            _ => self.group_keys.len(),
        }
    }

    /// The group of each kept row of `batch`; `DROPPED` for the others.
    fn group_rows(&mut self, batch: &RecordBatch, kept: Option<&BooleanArray>) -> Vec<u32> {
        let n = batch.num_rows();
        if self.keys.is_empty() {
            let mut out = vec![DROPPED; n];
            for_kept(kept, n, |i| out[i] = 0);
            return out;
        }
        if let Some(out) = self.group_packed(batch, kept) {
            return out;
        }
        let mut per_key: Vec<Vec<u32>> = Vec::with_capacity(self.keys.len());
        for key in &mut self.keys {
            let column = batch.column(key.at);
            let mut ids = vec![DROPPED; n];
            let mut new_rows: Vec<u32> = Vec::new();
            let nulls = column.logical_nulls();
            let numbers = &mut key.numbers;
            // (offsets, bytes) of a string or binary column
            let var: Option<(Vec<usize>, &[u8])> = match column.data_type() {
                DataType::Utf8 => Some(column.as_string::<i32>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                DataType::LargeUtf8 => Some(column.as_string::<i64>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                DataType::Binary => Some(column.as_binary::<i32>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                DataType::LargeBinary => Some(column.as_binary::<i64>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                _ => None,
            };
            let width = column.data_type().primitive_width().unwrap_or(0);
            let data = column.to_data();
            let raw: &[u8] = match (&var, data.buffers().first()) {
                (None, Some(b)) => b.as_slice().get(data.offset() * width..).unwrap_or(&[]),
                _ => &[],
            };
            let mut put = |i: usize, (id, new): (u32, bool)| {
                ids[i] = id;
                if new {
                    new_rows.push(i as u32);
                }
            };
            let fixed = |i: usize| {
                let mut b = [0u8; 16];
                b[..width].copy_from_slice(&raw[i * width..(i + 1) * width]);
                u128::from_le_bytes(b)
            };
            // one loop per case, so that the row loop does not ask what the column is
            match (&var, &nulls) {
                (Some((offsets, values)), None) => for_kept(kept, n, |i| put(i, numbers.bytes(&values[offsets[i]..offsets[i + 1]]))),
                (None, None) => for_kept(kept, n, |i| put(i, numbers.code(fixed(i)))),
                (var, Some(nb)) => for_kept(kept, n, |i| {
                    let v = match var {
                        _ if nb.is_null(i) => numbers.null(),
                        Some((offsets, values)) => numbers.bytes(&values[offsets[i]..offsets[i + 1]]),
                        None => numbers.code(fixed(i)),
                    };
                    put(i, v)
                }),
            }
            if !new_rows.is_empty() {
                // the new values, out of the unit (a few rows: the unit's buffers are not kept)
                if let Ok(part) = arrow::compute::take(column.as_ref(), &UInt32Array::from(new_rows), None) {
                    key.values.push(part);
                }
            }
            per_key.push(ids);
        }
        if per_key.len() == 1 {
            return per_key.pop().unwrap_or_default();
        }
        let mut out = vec![DROPPED; n];
        let (tuples, group_keys) = (&mut self.tuples, &mut self.group_keys);
        for_kept(kept, n, |i| {
            let mut code = 0u128;
            let mut tuple = [0u32; MAX_KEYS];
            for (j, ids) in per_key.iter().enumerate() {
                code |= (ids[i] as u128) << (32 * j);
                tuple[j] = ids[i];
            }
            let (g, new) = tuples.code(code);
            if new {
                group_keys.push(tuple);
            }
            out[i] = g;
        });
        out
    }

    /// The groups of a unit whose two to four keys are all narrow here — fixed-width values of
    /// up to 8 bytes and strings or binary of up to 7, no NULL, 16 bytes together — found by one
    /// lookup per row of the keys' values packed into 128 bits (each key in a place and width
    /// fixed by its type, so the same values pack the same in every unit); a packed value not
    /// seen before is numbered through the keys' own numbers (`tuples`), as `group_rows` does.
    fn group_packed(&mut self, batch: &RecordBatch, kept: Option<&BooleanArray>) -> Option<Vec<u32>> {
        enum Narrow<'a> {
            Fixed(arrow::buffer::Buffer, usize),
            Var(Vec<usize>, &'a [u8]),
        }
        if self.keys.len() < 2 {
            return None;
        }
        let n = batch.num_rows();
        let mut narrow = Vec::with_capacity(self.keys.len());
        let mut bytes = 0;
        for key in &self.keys {
            let column = batch.column(key.at);
            if column.logical_null_count() > 0 {
                return None;
            }
            let var: Option<(Vec<usize>, &[u8])> = match column.data_type() {
                DataType::Utf8 => Some(column.as_string::<i32>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                DataType::LargeUtf8 => Some(column.as_string::<i64>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                DataType::Binary => Some(column.as_binary::<i32>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                DataType::LargeBinary => Some(column.as_binary::<i64>()).map(|a| (a.value_offsets().iter().map(|o| *o as usize).collect(), a.value_data())),
                _ => None,
            };
            let (part, width) = match var {
                Some((offsets, values)) if offsets.windows(2).all(|w| w[1] - w[0] <= 7) => (Narrow::Var(offsets, values), 8),
                Some(_) => return None,
                None => {
                    let width = column.data_type().primitive_width().filter(|w| *w <= 8)?;
                    let data = column.to_data();
                    let raw = data.buffers().first()?;
                    if raw.len() < (data.offset() + n) * width {
                        return None;
                    }
                    let raw = raw.slice(data.offset() * width);
                    (Narrow::Fixed(raw, width), width)
                }
            };
            bytes += width;
            narrow.push(part);
        }
        if bytes > 16 {
            return None;
        }
        let code_of = |i: usize| -> u128 {
            let mut code = 0u128;
            let mut shift = 0;
            for part in &narrow {
                let (v, width) = match part {
                    Narrow::Fixed(raw, width) => {
                        let mut b = [0u8; 8];
                        b[..*width].copy_from_slice(&raw.as_slice()[i * width..(i + 1) * width]);
                        (u64::from_le_bytes(b), *width)
                    }
                    Narrow::Var(offsets, values) => {
                        let s = &values[offsets[i]..offsets[i + 1]];
                        let mut v = (s.len() as u64) << 56;
                        s.iter().enumerate().for_each(|(j, b)| v |= (*b as u64) << (8 * j));
                        (v, 8)
                    }
                };
                code |= (v as u128) << shift;
                shift += 8 * width;
            }
            code
        };
        const PENDING: u32 = DROPPED - 1;
        let mut out = vec![DROPPED; n];
        let mut missing = Vec::new();
        let packed = &self.packed;
        for_kept(kept, n, |i| match packed.find(code_of(i)) {
            Some(g) => out[i] = g,
            None => {
                out[i] = PENDING;
                missing.push(i);
            }
        });
        for i in missing {
            let code = code_of(i);
            if let Some(g) = self.packed.find(code) {
                out[i] = g;
                continue;
            }
            let mut tuple = [0u32; MAX_KEYS];
            let mut tuple_code = 0u128;
            for (j, key) in self.keys.iter_mut().enumerate() {
                tuple[j] = number_one(key, batch.column(key.at), i);
                tuple_code |= (tuple[j] as u128) << (32 * j);
            }
            let (g, new) = self.tuples.code(tuple_code);
            if new {
                self.group_keys.push(tuple);
            }
            self.packed.insert(code, g);
            out[i] = g;
        }
        Some(out)
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
                                // below 2^190 in every case (exact_sum's reasoning): cannot wrap
                                carries.resize(slots.max(carries.len()), i256::ZERO);
                                carries[g] = carries[g].wrapping_add(i256::from_i128(lows[g]));
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
                    // a group without a value sums to NULL; the total cannot leave 256 bits
                    let totals: Decimal256Array = (0..groups)
                        .map(|g| (arg.counts[g] > 0).then(|| arg.carries[g].wrapping_add(i256::from_i128(arg.lows[g]))))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_given_as_first_seen_and_survive_growth() {
        let mut n = Numbering::new();
        let mut seen = Vec::new();
        for round in 0..2 {
            for v in 0..10_000u128 {
                let (id, new) = n.code(v * 7919);
                assert_eq!(new, round == 0);
                if round == 0 {
                    seen.push(id);
                } else {
                    assert_eq!(id, seen[v as usize]);
                }
            }
        }
        assert_eq!(seen, (0..10_000).collect::<Vec<u32>>());
        // short and long byte strings, the empty one and NULL are values of their own
        let mut b = Numbering::new();
        assert_eq!(b.bytes(b"").0, 0);
        assert_eq!(b.bytes(b"\0").0, 1, "a NUL byte differs from the empty string");
        assert_eq!(b.null().0, 2);
        let long = [7u8; 40];
        assert_eq!(b.bytes(&long), (3, true));
        assert_eq!(b.bytes(&long), (3, false));
        assert_eq!(b.bytes(&long[..15]), (4, true), "15 bytes are a code, 40 a key of the map");
        assert_eq!(b.null(), (2, false));
    }

    #[test]
    fn products_of_wide_values_are_checked() {
        assert_eq!(mul(3, -4), (-12, false));
        assert_eq!(mul(i64::MAX as i128, i64::MAX as i128), ((i64::MAX as i128) * (i64::MAX as i128), false));
        assert!(mul(i128::MAX / 2, 3).1);
        assert_eq!(mul(1 << 70, 2), (1 << 71, false));
    }
}
