//! SUM of an integer or Decimal128 column or expression, exact in 76 digits without widening
//! every value.
//!
//! DataFusion's Decimal128 SUM wraps past i128, so the states summed decimals in
//! Decimal256(76, s) — a cast of every value to 256 bits and a 256-bit add per row, a fifth of
//! TPC-H Q1's time (bench/TPCH.md) — and integers in Decimal128(38, 0) after a cast of every
//! value. Here each value is added to an i128 per group with a checked add; when a
//! group's running sum would leave i128, the running sum moves into a 256-bit carry and the
//! i128 starts again from the value. The total (carry + running sum) is the exact sum, of the
//! same type as before (Decimal256(76, s)), so the partial states and their narrowing to 38 digits
//! (LANCE_ERR_OUT_OF_RANGE past them) are unchanged. 76 digits cannot overflow: 2^63 rows of
//! values below 2^127 sum below 2^190.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal256Array};
use arrow::datatypes::{
    i256, ArrowPrimitiveType, Decimal128Type, Decimal256Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_schema::DataType;
use lance::deps::datafusion::common::{Result as DfResult, ScalarValue};
use lance::deps::datafusion::error::DataFusionError;
use lance::deps::datafusion::logical_expr::function::AccumulatorArgs;
use lance::deps::datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// Digits of the sum's type.
const PRECISION: u8 = 76;

/// One group's sum: an i128 running sum, a 256-bit carry, and whether a value was seen (a
/// group of only NULLs sums to NULL).
#[derive(Debug, Default, Clone, Copy)]
struct Sum {
    low: i128,
    carry: i256,
    seen: bool,
}

impl Sum {
    #[inline]
    fn add(&mut self, v: i128) {
        self.seen = true;
        match self.low.checked_add(v) {
            Some(s) => self.low = s,
            None => {
                self.carry = carried(self.carry, self.low);
                self.low = v;
            }
        }
    }

    fn add_wide(&mut self, v: i256) -> DfResult<()> {
        self.seen = true;
        self.carry = self
            .carry
            .checked_add(v)
            .ok_or_else(|| DataFusionError::Execution("a decimal sum beyond 76 digits".into()))?;
        Ok(())
    }

    fn total(&self) -> DfResult<Option<i256>> {
        if !self.seen {
            return Ok(None);
        }
        self.carry
            .checked_add(i256::from_i128(self.low))
            .map(Some)
            .ok_or_else(|| DataFusionError::Execution("a decimal sum beyond 76 digits".into()))
    }
}

/// `carry` with a running sum `low` moved into it. Below 2^190 in every case (module comment):
/// the 256-bit add cannot wrap. Also the total of a sum the library's own grouping keeps
/// (`super::fused`).
#[inline]
pub(super) fn carried(carry: i256, low: i128) -> i256 {
    carry.wrapping_add(i256::from_i128(low))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalSum {
    signature: Signature,
}

impl AggregateUDFImpl for DecimalSum {
    fn name(&self) -> &str {
        "lance_host_exact_sum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        match arg_types {
            [DataType::Decimal128(_, s)] => Ok(DataType::Decimal256(PRECISION, *s)),
            [t] if t.is_integer() => Ok(DataType::Decimal256(PRECISION, 0)),
            other => Err(DataFusionError::Plan(format!(
                "lance_host_exact_sum takes one integer or Decimal128, not {other:?}"
            ))),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(Box::new(Total { sum: Sum::default(), scale: scale_of(&args)? }))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Groups { sums: Vec::new(), scale: scale_of(&args)? }))
    }
}

fn scale_of(args: &AccumulatorArgs) -> DfResult<i8> {
    match args.return_field.data_type() {
        DataType::Decimal256(_, s) => Ok(*s),
        other => Err(DataFusionError::Internal(format!("lance_host_exact_sum returns {other}"))),
    }
}

/// `f(row, value)` for each row of `values` (an integer or Decimal128 column; a decimal's value
/// is its unscaled integer) that is not NULL and that `filter` (if any) keeps.
#[inline]
fn each_value(values: &ArrayRef, filter: Option<&BooleanArray>, f: impl FnMut(usize, i128)) -> DfResult<()> {
    match values.data_type() {
        DataType::Decimal128(_, _) => each_native::<Decimal128Type>(values, filter, f),
        DataType::Int64 => each_native::<Int64Type>(values, filter, f),
        DataType::Int32 => each_native::<Int32Type>(values, filter, f),
        DataType::Int16 => each_native::<Int16Type>(values, filter, f),
        DataType::Int8 => each_native::<Int8Type>(values, filter, f),
        DataType::UInt64 => each_native::<UInt64Type>(values, filter, f),
        DataType::UInt32 => each_native::<UInt32Type>(values, filter, f),
        DataType::UInt16 => each_native::<UInt16Type>(values, filter, f),
        DataType::UInt8 => each_native::<UInt8Type>(values, filter, f),
        other => Err(DataFusionError::Internal(format!("lance_host_exact_sum of {other}"))),
    }
}

#[inline]
fn each_native<T: ArrowPrimitiveType>(
    values: &ArrayRef,
    filter: Option<&BooleanArray>,
    mut f: impl FnMut(usize, i128),
) -> DfResult<()>
where
    T::Native: Into<i128>,
{
    let values = values.as_primitive::<T>();
    let raw = values.values();
    match (values.nulls(), filter) {
        (None, None) => raw.iter().enumerate().for_each(|(i, v)| f(i, (*v).into())),
        (nulls, filter) => {
            for (i, v) in raw.iter().enumerate() {
                let valid = nulls.is_none_or(|n| n.is_valid(i));
                let kept = filter.is_none_or(|m| m.is_valid(i) && m.value(i));
                if valid && kept {
                    f(i, (*v).into());
                }
            }
        }
    }
    Ok(())
}

/// `f(row, value)` for each non-NULL 256-bit state `filter` keeps.
fn each_state(states: &ArrayRef, filter: Option<&BooleanArray>, mut f: impl FnMut(usize, i256) -> DfResult<()>) -> DfResult<()> {
    let states = states
        .as_primitive_opt::<Decimal256Type>()
        .ok_or_else(|| DataFusionError::Internal(format!("lance_host_exact_sum state of {}", states.data_type())))?;
    for i in 0..states.len() {
        if states.is_valid(i) && filter.is_none_or(|m| m.is_valid(i) && m.value(i)) {
            f(i, states.value(i))?;
        }
    }
    Ok(())
}

fn totals(sums: &[Sum], scale: i8) -> DfResult<ArrayRef> {
    let values = sums.iter().map(Sum::total).collect::<DfResult<Decimal256Array>>()?;
    Ok(Arc::new(values.with_precision_and_scale(PRECISION, scale)?))
}

/// The sum of one group (an aggregate without GROUP BY).
#[derive(Debug)]
struct Total {
    sum: Sum,
    scale: i8,
}

impl Accumulator for Total {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        match values.first() {
            Some(v) => each_value(v, None, |_, x| self.sum.add(x)),
            None => Ok(()),
        }
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(ScalarValue::Decimal256(self.sum.total()?, PRECISION, self.scale))
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        match states.first() {
            Some(s) => each_state(s, None, |_, v| self.sum.add_wide(v)),
            None => Ok(()),
        }
    }
}

/// The sums of every group.
#[derive(Debug)]
struct Groups {
    sums: Vec<Sum>,
    scale: i8,
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.sums.resize(total_num_groups, Sum::default());
        let Some(values) = values.first() else { return Ok(()) };
        let sums = &mut self.sums;
        each_value(values, opt_filter, |i, v| sums[group_indices[i]].add(v))
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        totals(&emit_to.take_needed(&mut self.sums), self.scale)
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit_to)?])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.sums.resize(total_num_groups, Sum::default());
        let Some(states) = values.first() else { return Ok(()) };
        let sums = &mut self.sums;
        each_state(states, opt_filter, |i, v| sums[group_indices[i]].add_wide(v))
    }

    fn size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<Sum>()
    }
}

/// The exact SUM of an integer or Decimal128 argument, as Decimal256(76, its scale; integers 0).
pub fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(DecimalSum { signature: Signature::any(1, Volatility::Immutable) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Decimal128Array;

    fn sum_of(values: &[Option<i128>]) -> Option<i256> {
        let mut s = Sum::default();
        for v in values.iter().flatten() {
            s.add(*v);
        }
        s.total().unwrap()
    }

    #[test]
    fn sums_past_i128_are_exact_and_come_back() {
        let big = i128::MAX - 5;
        // three values past i128 and back below it: the exact total in 256 bits
        let want = i256::from_i128(big);
        assert_eq!(sum_of(&[Some(big), Some(big), Some(big), Some(-big), Some(-big)]), Some(want));
        assert_eq!(sum_of(&[Some(big), Some(big)]), Some(i256::from_i128(big).wrapping_mul(i256::from_i128(2))));
        assert_eq!(sum_of(&[Some(i128::MIN), Some(-1)]), Some(i256::from_i128(i128::MIN).wrapping_sub(i256::ONE)));
        assert_eq!(sum_of(&[None, None]), None);
        assert_eq!(sum_of(&[Some(-7), None, Some(3)]), Some(i256::from_i128(-4)));
    }

    #[test]
    fn integers_of_every_width_sum_without_a_cast() {
        use arrow::array::{Int8Array, UInt64Array};
        let mut g = Groups { sums: Vec::new(), scale: 0 };
        let big: ArrayRef = Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(u64::MAX), None, Some(1)]));
        g.update_batch(&[big], &[0, 0, 0, 1], None, 2).unwrap();
        let small: ArrayRef = Arc::new(Int8Array::from(vec![Some(-128), Some(127)]));
        g.update_batch(&[small], &[1, 1], None, 2).unwrap();
        let out = g.evaluate(EmitTo::All).unwrap();
        let out = out.as_primitive::<Decimal256Type>();
        assert_eq!(out.value(0), i256::from_i128(2 * u64::MAX as i128));
        assert_eq!(out.value(1), i256::from_i128(0));
        assert_eq!(udaf().return_type(&[DataType::Int32]).unwrap(), DataType::Decimal256(76, 0));
        assert!(udaf().return_type(&[DataType::Utf8]).is_err());
    }

    #[test]
    fn groups_skip_nulls_and_filtered_rows_and_merge_states() {
        let mut g = Groups { sums: Vec::new(), scale: 2 };
        let values: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(100), None, Some(250), Some(i128::MAX), Some(i128::MAX), Some(5)])
                .with_precision_and_scale(38, 2)
                .unwrap(),
        );
        let filter = BooleanArray::from(vec![true, true, true, true, true, false]);
        g.update_batch(&[values], &[0, 0, 1, 2, 2, 1], Some(&filter), 4).unwrap();
        let out = g.state(EmitTo::All).unwrap();
        let out = out[0].as_primitive::<Decimal256Type>();
        assert_eq!(out.value(0), i256::from_i128(100));
        assert_eq!(out.value(1), i256::from_i128(250));
        assert_eq!(out.value(2), i256::from_i128(i128::MAX).wrapping_mul(i256::from_i128(2)));
        assert!(out.is_null(3), "a group without values sums to NULL");
        // merging the states again doubles each
        let mut m = Groups { sums: Vec::new(), scale: 2 };
        let states: ArrayRef = Arc::new(out.clone());
        m.merge_batch(&[states.clone()], &[0, 1, 2, 3], None, 4).unwrap();
        m.merge_batch(&[states], &[0, 1, 2, 3], None, 4).unwrap();
        let merged = m.evaluate(EmitTo::All).unwrap();
        let merged = merged.as_primitive::<Decimal256Type>();
        assert_eq!(merged.value(2), i256::from_i128(i128::MAX).wrapping_mul(i256::from_i128(4)));
        assert_eq!(merged.value(0), i256::from_i128(200));
        assert!(merged.is_null(3));
    }
}
