//! Runtime key-set filters: the keys a join's build side hands a scan that runs after the plan,
//! as values instead of SQL text, turned into `column IN (values)` for Lance to plan (a scalar
//! index on the column answers it).

use crate::error::{HostError, Result};
use crate::snapshot::Snapshot;

/// Keep only the rows whose `column` holds one of `values` (NULLs among them match nothing):
/// the filter a join's build side gives the probe side's scan, as values instead of SQL text.
#[derive(Debug, Clone)]
pub struct KeyFilter {
    pub column: String,
    pub values: arrow::array::ArrayRef,
}

impl PartialEq for KeyFilter {
    fn eq(&self, other: &Self) -> bool {
        self.column == other.column && self.values.to_data() == other.values.to_data()
    }
}

/// Most keys a key-set filter takes (each becomes a value of an IN list Lance plans, and an
/// index lookup where the column has a scalar index).
pub const MAX_FILTER_KEYS: usize = 4_000_000;

/// The key-set filter as an expression over the table: `column IN (values)`, the values cast
/// exactly to the column's type; no value (or only NULLs) matches no row.
pub fn expr(snapshot: &Snapshot, k: &KeyFilter) -> Result<lance::deps::datafusion::logical_expr::Expr> {
    expr_in(&snapshot.arrow_schema(), &format!("table '{}'", snapshot.uri()), k)
}

/// [`expr`] over `schema` (the columns a key filter may name; `what` names them in messages).
pub fn expr_in(schema: &arrow_schema::Schema, what: &str, k: &KeyFilter) -> Result<lance::deps::datafusion::logical_expr::Expr> {
    use arrow::array::Array;
    use lance::deps::datafusion::logical_expr::{lit, Expr};
    let field = schema.field_with_name(&k.column).map_err(|_| {
        HostError::invalid(format!(
            "key filter column '{}' is not a top-level column of {what} (columns: {})",
            k.column,
            schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let target = field.data_type();
    let supported = target.is_integer()
        || target.is_floating()
        || matches!(
            target,
            arrow_schema::DataType::Utf8
                | arrow_schema::DataType::LargeUtf8
                | arrow_schema::DataType::Utf8View
                | arrow_schema::DataType::Binary
                | arrow_schema::DataType::LargeBinary
                | arrow_schema::DataType::Boolean
                | arrow_schema::DataType::Date32
                | arrow_schema::DataType::Date64
                | arrow_schema::DataType::Timestamp(_, _)
                | arrow_schema::DataType::Decimal128(_, _)
        );
    if !supported {
        return Err(HostError::not_supported(format!(
            "key filter on column '{}' of type {target}: keys filter numbers, strings, binary, booleans, dates, timestamps and decimals",
            k.column
        )));
    }
    if k.values.len() > MAX_FILTER_KEYS {
        return Err(HostError::invalid(format!(
            "key filter holds {} keys; at most {MAX_FILTER_KEYS} (filter a wider key set after the scan)",
            k.values.len()
        )));
    }
    let options = arrow::compute::CastOptions { safe: false, ..Default::default() };
    let values = arrow::compute::cast_with_options(&k.values, target, &options).map_err(|e| {
        HostError::invalid(format!(
            "key filter values of type {} do not fit column '{}' of type {target}: {e}",
            k.values.data_type(),
            k.column
        ))
    })?;
    let mut list = Vec::new();
    for i in 0..values.len() {
        if values.is_valid(i) {
            let v = lance::deps::datafusion::common::ScalarValue::try_from_array(&values, i)
                .map_err(|e| HostError::internal(format!("key filter value {i}: {e}")))?;
            list.push(lit(v));
        }
    }
    if list.is_empty() {
        return Ok(lit(false));
    }
    let column = Expr::Column(lance::deps::datafusion::common::Column::new_unqualified(k.column.clone()));
    Ok(column.in_list(list, false))
}
