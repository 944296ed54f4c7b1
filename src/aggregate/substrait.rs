//! An aggregate spec given as a Substrait plan: an `AggregateRel` (one grouping set) over
//! `ProjectRel`s and `FilterRel`s over one `ReadRel`, turned into the `AggregateSpec` a host
//! would have written (Lance SQL filter, column or expression keys and arguments) by the
//! translation the ADBC driver uses (`lance-host-substrait`). The table is the dataset the call
//! runs on: the `ReadRel`'s named table is not looked up, its `base_schema` names columns of
//! that table, and each column's kind (floating point, integer) is the table's, not the type the
//! plan declares, so a plan cannot change what a comparison or a sum means.

use arrow_schema::Schema;
use lance_host_substrait::{ColumnKind, ErrorKind, PlanQuery, Shape};

use super::spec::{Aggregate, AggregateSpec, Function};
use crate::error::{HostError, Result};

fn plan_error(e: lance_host_substrait::Error) -> HostError {
    match e.kind {
        ErrorKind::Invalid => HostError::invalid(e.message),
        ErrorKind::Unsupported => HostError::not_supported(e.message),
    }
}

/// The spec a serialized Substrait `Plan` asks for, over a table of `schema`.
///
/// INVALID_ARGUMENT: bytes that are not a plan, a plan without an `AggregateRel` (a scan), a
/// `base_schema` naming a column the table lacks, a reference out of range, output names of
/// another number than the aggregate's columns. NOT_SUPPORTED: what the translation does not
/// take (joins, sorts, `HAVING`, several grouping sets, functions without a Lance SQL
/// equivalent of the same meaning, integer arithmetic) and a `FetchRel` (a limit applies to
/// merged results; the host applies it).
pub fn spec_from_plan(plan: &[u8], schema: &Schema) -> Result<AggregateSpec> {
    if plan.is_empty() {
        return Err(HostError::invalid("the Substrait plan is empty"));
    }
    let kinds = ColumnKind::of_schema(schema);
    let PlanQuery { shape, filter, limit, names, .. } =
        lance_host_substrait::parse_with(plan, Some(&kinds)).map_err(plan_error)?;
    let Shape::Aggregate { group_by, measures } = shape else {
        return Err(HostError::invalid(
            "the Substrait plan has no AggregateRel (it is a scan); an aggregate spec takes an aggregate plan",
        ));
    };
    if measures.is_empty() {
        return Err(HostError::not_supported(
            "an AggregateRel without measures (GROUP BY alone, SELECT DISTINCT): an aggregate spec computes at least one aggregate; add a count",
        ));
    }
    if limit.is_some() {
        return Err(HostError::not_supported(
            "a FetchRel (LIMIT) in an aggregate's Substrait plan: partial states cannot be limited; limit the merged results",
        ));
    }
    let name_at = |i: usize| names.as_ref().map(|n| n[i].clone());
    let mut spec = AggregateSpec { filter, ..AggregateSpec::default() };
    let expression_keys = group_by.iter().enumerate().any(|(i, k)| {
        k.expression.is_some() || name_at(i).is_some_and(|n| n != k.name)
    });
    for (i, key) in group_by.into_iter().enumerate() {
        let name = name_at(i).unwrap_or_else(|| key.name.clone());
        let expression = match key.expression {
            Some(e) => Some(e),
            // a column key the plan renames is grouped as the expression of that column
            None if name != key.name => Some(lance_host_substrait::quote(&key.name)),
            None => None,
        };
        if expression_keys {
            spec.group_expressions.push(expression);
        }
        spec.group_by.push(name);
    }
    let keys = spec.group_by.len();
    for (j, m) in measures.into_iter().enumerate() {
        let function = Function::from_i32(m.function)
            .ok_or_else(|| HostError::internal(format!("Substrait measure function {}", m.function)))?;
        spec.aggregates.push(Aggregate {
            function,
            column: m.column,
            alias: name_at(keys + j),
            expression: m.expression,
        });
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    #[test]
    fn kinds_follow_the_table() {
        let schema = Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("u", DataType::UInt64, true),
            Field::new("f", DataType::Float32, true),
            Field::new("d", DataType::Decimal128(15, 2), true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let k = ColumnKind::of_schema(&schema);
        assert_eq!(k["i"], ColumnKind { float: false, integer: true });
        assert_eq!(k["u"], ColumnKind { float: false, integer: true });
        assert_eq!(k["f"], ColumnKind { float: true, integer: false });
        assert_eq!(k["d"], ColumnKind { float: false, integer: false });
        assert_eq!(k["s"], ColumnKind { float: false, integer: false });
    }

    #[test]
    fn bytes_that_are_no_plan_are_invalid() {
        let schema = Schema::new(vec![Field::new("i", DataType::Int32, true)]);
        for bytes in [&b""[..], b"\xff\xff\xff"] {
            let e = spec_from_plan(bytes, &schema).unwrap_err();
            assert_eq!(e.code, crate::error::LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT, "{e:?}");
        }
    }
}
