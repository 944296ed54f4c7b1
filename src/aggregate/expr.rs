//! Expression arguments and group keys of aggregates: Lance SQL text planned against the
//! table's schema (DataFusion's SQL where Lance's planner stops), with integer arithmetic
//! refused, since the engine would wrap it on overflow.

use arrow_schema::{DataType, SchemaRef};
use lance::deps::datafusion::logical_expr::Expr;

use crate::error::{HostError, Result};

/// `text` parsed by DataFusion's SQL planner against `schema`, identifiers as written (Lance's
/// planner does not fold them to lower case either).
fn datafusion_expression(schema: &SchemaRef, text: &str) -> std::result::Result<Expr, String> {
    use lance::deps::datafusion::common::DFSchema;
    use lance::deps::datafusion::prelude::{SessionConfig, SessionContext};
    let config = SessionConfig::new().set_bool("datafusion.sql_parser.enable_ident_normalization", false);
    let ctx = SessionContext::new_with_config(config);
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(|e| e.to_string())?;
    crate::logging::catch_quietly(|| ctx.parse_sql_expr(text, &df_schema))
        .map_err(|_| "the SQL planner failed".to_string())?
        .map_err(|e| e.to_string())
}

/// Functions whose integer results are exact (they pick one of their arguments, or measure a
/// value or a date), allowed where integer arithmetic is refused.
const EXACT_INTEGER_FUNCTIONS: &[&str] = &[
    "date_part", "datepart", "character_length", "char_length", "length", "octet_length", "bit_length", "strpos",
    "instr", "ascii", "coalesce", "nullif", "nvl", "ifnull", "greatest", "least",
];

/// An aggregate's expression argument or group key planned against the table's `schema`: the expression
/// (types coerced as Lance's scanner coerces a filter's) and its type. Refused: SQL Lance cannot
/// plan, and integer arithmetic anywhere in it — DataFusion wraps an int64 product or sum that
/// overflows, which would be a wrong answer; a cast to DECIMAL(38, 0) or DOUBLE computes it
/// exactly or as floating point.
pub(crate) fn plan_argument(schema: &SchemaRef, text: &str, what: &str) -> Result<(Expr, DataType)> {
    use lance::deps::datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use lance::deps::datafusion::common::DFSchema;
    use lance::deps::datafusion::logical_expr::ExprSchemable;
    crate::sql_text::check_expression(what, text)?;
    let planner = lance_datafusion::planner::Planner::new(schema.clone());
    let refused = |e: &dyn std::fmt::Display| HostError::invalid(format!("{what}: Lance cannot plan the expression {text}: {e}"));
    let parsed = match crate::logging::catch_quietly(|| planner.parse_expr(text)) {
        Ok(Ok(e)) => e,
        // constructs Lance's planner does not take (CASE, EXTRACT) in DataFusion's SQL, which
        // Lance's dialect is a subset of; when that fails too, Lance's reason is the answer
        Ok(Err(e)) => datafusion_expression(schema, text).map_err(|_| refused(&e))?,
        Err(_) => return Err(HostError::invalid(format!("{what}: Lance cannot plan the expression {text}"))),
    };
    let expr = planner.optimize_expr(parsed).map_err(|e| refused(&e))?;
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(|e| HostError::internal(format!("{what}: {e}")))?;
    let integer = |t: &DataType| t.is_integer();
    let mut bad: Option<String> = None;
    expr.apply(|e| {
        let t = e.get_type(&df_schema).ok();
        let arithmetic = match e {
            Expr::Column(_) | Expr::Literal(..) | Expr::Cast(_) | Expr::TryCast(_) | Expr::Alias(_) | Expr::Case(_) => false,
            // functions that pick or measure a value and cannot overflow
            Expr::ScalarFunction(f) => !EXACT_INTEGER_FUNCTIONS.contains(&f.name()),
            _ => true,
        };
        if arithmetic && t.as_ref().is_some_and(integer) {
            bad = Some(e.to_string());
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .map_err(|e| HostError::internal(format!("{what}: {e}")))?;
    if let Some(part) = bad {
        return Err(HostError::not_supported(format!(
            "{what}: '{part}' computes integers, which the engine would wrap on overflow; cast to DECIMAL(38, 0) \
             (exact) or DOUBLE first, e.g. CAST(a AS DECIMAL(38, 0)) * b"
        )));
    }
    let t = expr.get_type(&df_schema).map_err(|e| refused(&e))?;
    Ok((expr, t))
}
