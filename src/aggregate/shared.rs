//! Expressions an aggregate computes more than once, computed once per row.
//!
//! Lance's scanner plans each aggregate's argument on its own, so TPC-H Q1's
//! `SUM(l_extendedprice * (1 - l_discount))` and `SUM(l_extendedprice * (1 - l_discount) *
//! (1 + l_tax))` evaluate the first product twice per row, and an AVG of an expression (a sum
//! and a count) its expression twice. When a spec has such a repeated expression, the library
//! plans the aggregate itself over Lance's scan (the same scan: filter, fragments, row slice,
//! memory bounds): a projection computes each repeated expression once into a column, and the
//! aggregates read that column. The aggregate is built as Lance builds its own (DataFusion's
//! `AggregateExec` in single mode, the arguments coerced the same way, Lance's physical
//! optimizer rules after it), so the states are the same values of the same types.

use std::sync::Arc;

use arrow_schema::FieldRef;
use lance::deps::datafusion::common::tree_node::{Transformed, TreeNode};
use lance::deps::datafusion::common::DFSchema;
use lance::deps::datafusion::config::ConfigOptions;
use lance::deps::datafusion::error::Result as DfResult;
use lance::deps::datafusion::logical_expr::execution_props::ExecutionProps;
use lance::deps::datafusion::logical_expr::expr::AggregateFunction;
use lance::deps::datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use lance::deps::datafusion::logical_expr::{Expr, ExprSchemable};
use lance::deps::datafusion::physical_expr::aggregate::LoweredAggregateBuilder;
use lance::deps::datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use lance::deps::datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use lance::deps::datafusion::physical_plan::expressions::Column;
use lance::deps::datafusion::physical_plan::projection::ProjectionExec;
use lance::deps::datafusion::physical_plan::ExecutionPlan;
use lance::deps::datafusion::prelude::ident;

/// The name of the projected column holding repeated expression `k`.
fn column_name(k: usize) -> String {
    format!("__lance_host_shared_{k}")
}

/// Expressions of `uses` (every argument and group-key expression, once per use) that appear
/// twice or inside another one — whole subtrees compared structurally; columns and literals
/// apart. Larger ones come first, so that rewriting replaces the largest repeated subtree.
pub fn repeated(uses: &[Expr]) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    for (i, e) in uses.iter().enumerate() {
        if matches!(e, Expr::Column(_) | Expr::Literal(..)) || out.contains(e) {
            continue;
        }
        let again = uses.iter().enumerate().any(|(j, other)| {
            j != i && (other == e || other.exists(|x| Ok(x == e)).unwrap_or(false))
        });
        if again {
            out.push(e.clone());
        }
    }
    // an expression inside another repeated one goes after it
    out.sort_by_key(|e| std::cmp::Reverse(e.to_string().len()));
    out
}

/// `e` with every subtree equal to a repeated expression replaced by its projected column.
fn rewrite(e: Expr, shared: &[Expr]) -> DfResult<Expr> {
    e.transform_down(|x| match shared.iter().position(|s| *s == x) {
        Some(k) => Ok(Transformed::yes(ident(column_name(k)))),
        None => Ok(Transformed::no(x)),
    })
    .map(|t| t.data)
}

/// `expr` (an aggregate, maybe aliased) with its arguments cast to the types its function
/// takes, as Lance's scanner does before it plans an aggregate.
fn coerce(expr: &Expr, schema: &DFSchema) -> DfResult<Expr> {
    match expr {
        Expr::Alias(alias) => Ok(coerce(&alias.expr, schema)?.alias(&alias.name)),
        Expr::AggregateFunction(f) if !f.params.args.is_empty() => {
            let fields: Vec<FieldRef> = f
                .params
                .args
                .iter()
                .enumerate()
                .map(|(i, e)| Ok(Arc::new(arrow_schema::Field::new(format!("arg_{i}"), e.get_type(schema)?, true))))
                .collect::<DfResult<_>>()?;
            let coerced = fields_with_udf(&fields, f.func.as_ref())?;
            let args = f
                .params
                .args
                .iter()
                .zip(&coerced)
                .map(|(a, t)| if a.get_type(schema)? == *t.data_type() { Ok(a.clone()) } else { a.clone().cast_to(t.data_type(), schema) })
                .collect::<DfResult<Vec<_>>>()?;
            Ok(Expr::AggregateFunction(AggregateFunction::new_udf(
                f.func.clone(),
                args,
                f.params.distinct,
                f.params.filter.clone(),
                f.params.order_by.clone(),
                f.params.null_treatment,
            )))
        }
        other => Ok(other.clone()),
    }
}

/// The aggregate of `group` keys and `aggregates` (aliased aggregate expressions) over `scan`,
/// with the `shared` expressions computed once in a projection between them.
pub fn plan(
    scan: Arc<dyn ExecutionPlan>,
    group: Vec<Expr>,
    aggregates: Vec<Expr>,
    shared: &[Expr],
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let props = ExecutionProps::default();
    let input = scan.schema();
    let input_df = DFSchema::try_from(input.as_ref().clone())?;
    let mut columns: Vec<(Arc<dyn PhysicalExpr>, String)> = input
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| (Arc::new(Column::new(f.name(), i)) as Arc<dyn PhysicalExpr>, f.name().clone()))
        .collect();
    for (k, e) in shared.iter().enumerate() {
        columns.push((create_physical_expr(e, &input_df, &props)?, column_name(k)));
    }
    let projected: Arc<dyn ExecutionPlan> = Arc::new(ProjectionExec::try_new(columns, scan)?);
    let schema = projected.schema();
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let groups = group
        .into_iter()
        .map(|g| {
            let g = rewrite(g, shared)?;
            let name = g.schema_name().to_string();
            Ok((create_physical_expr(&g, &df_schema, &props)?, name))
        })
        .collect::<DfResult<Vec<_>>>()?;
    let mut lowered = Vec::new();
    let mut filters = Vec::new();
    for a in aggregates {
        let a = coerce(&rewrite(a, shared)?, &df_schema)?;
        let (name, display) = match &a {
            Expr::Alias(alias) => (alias.name.clone(), a.human_display().to_string()),
            other => (other.schema_name().to_string(), other.human_display().to_string()),
        };
        let built = LoweredAggregateBuilder::new(&a, &df_schema, schema.as_ref(), &props)
            .with_human_display(display)
            .with_name(name)
            .build()?;
        lowered.push(built.aggregate);
        filters.push(built.filter);
    }
    let mut plan: Arc<dyn ExecutionPlan> = Arc::new(AggregateExec::try_new(
        AggregateMode::Single,
        PhysicalGroupBy::new_single(groups),
        lowered,
        filters,
        projected,
        schema,
    )?);
    let mut options = ConfigOptions::default();
    options.execution.target_partitions = lance_core::utils::tokio::get_num_compute_intensive_cpus();
    for rule in lance::io::exec::get_physical_optimizer().rules {
        plan = rule.optimize(plan, &options)?;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance::deps::datafusion::prelude::lit;

    #[test]
    fn a_subtree_used_twice_is_found_and_replaced() {
        let disc = ident("price") * (lit(1i64) - ident("discount"));
        let charge = disc.clone() * (lit(1i64) + ident("tax"));
        let found = repeated(&[disc.clone(), charge.clone(), ident("qty")]);
        assert_eq!(found, vec![disc.clone()]);
        let rewritten = rewrite(charge, &found).unwrap();
        assert_eq!(rewritten, ident(column_name(0)) * (lit(1i64) + ident("tax")));
        // an expression used by two aggregates (a SUM and an AVG's states) is repeated too
        assert_eq!(repeated(&[disc.clone(), disc.clone()]), vec![disc]);
        // nothing repeated: no projection is needed
        assert!(repeated(&[ident("a") + ident("b"), ident("a") * ident("b"), ident("a")]).is_empty());
    }

    #[test]
    fn q1_s_two_sums_share_their_product_as_planned() {
        use arrow_schema::{DataType, Field, Schema};
        let money = || DataType::Decimal128(15, 2);
        let schema = Arc::new(Schema::new(vec![
            Field::new("l_extendedprice", money(), true),
            Field::new("l_discount", money(), true),
            Field::new("l_tax", money(), true),
        ]));
        let plan = |text: &str| super::super::expr::plan_argument(&schema, text, "aggregate").unwrap().0;
        let disc = plan("l_extendedprice * (1 - l_discount)");
        let charge = plan("l_extendedprice * (1 - l_discount) * (1 + l_tax)");
        assert_eq!(repeated(&[disc.clone(), charge]), vec![disc]);
    }
}
