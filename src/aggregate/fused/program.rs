//! An aggregate's arguments as one program over 128-bit registers: decimal `+ - *` with arrow's
//! rules, every operation checked (`run`: 1,024 rows at a time; `run_row`: one row, for the rows
//! a chunk's overflow may concern).

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{
    Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_schema::{DataType, Schema};
use lance::deps::datafusion::common::ScalarValue;
use lance::deps::datafusion::logical_expr::Operator;
use lance::deps::datafusion::physical_expr::PhysicalExpr;
use lance::deps::datafusion::physical_plan::expressions::{BinaryExpr, CastExpr, Column, Literal, TryCastExpr};

/// One instruction of the aggregate's program (every argument's, common parts once);
/// instruction `k` writes register `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ins {
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
pub(super) fn emit(program: &mut Vec<Ins>, ins: Ins) -> Option<usize> {
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

/// Decimal digits of an integer type (the integer digits a cast needs to hold it).
pub(super) fn integer_digits(t: &DataType) -> Option<u8> {
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

/// `e` compiled into `program`: its register, scale and precision (arrow's rules), or `None`
/// for anything but columns, literals, widening casts to decimals and `+ - *` of decimals.
pub(super) fn compile(e: &Arc<dyn PhysicalExpr>, schema: &Schema, program: &mut Vec<Ins>, columns: &mut Vec<usize>) -> Option<(usize, i8, u8)> {
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
pub(super) fn run(program: &[Ins], columns: &[ArrayRef], at: usize, n: usize, regs: &mut [Vec<i128>]) -> bool {
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
pub(super) fn run_row(program: &[Ins], columns: &[ArrayRef], row: usize, reg: usize) -> Option<i128> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_of_wide_values_are_checked() {
        assert_eq!(mul(3, -4), (-12, false));
        assert_eq!(mul(i64::MAX as i128, i64::MAX as i128), ((i64::MAX as i128) * (i64::MAX as i128), false));
        assert!(mul(i128::MAX / 2, 3).1);
        assert_eq!(mul(1 << 70, 2), (1 << 71, false));
    }
}
