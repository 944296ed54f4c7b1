//! Schema changes: add columns (computed from SQL expressions over the row, or all null) and
//! drop columns, each as one new version planned at the handle's version.

use std::sync::Arc;

use lance::dataset::NewColumnTransform;

use super::commit_error;
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

fn check_new_names<'a>(at: &Snapshot, names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for name in names {
        if name.is_empty() {
            return Err(HostError::invalid("a new column needs a name"));
        }
        if at.dataset.schema().field(name).is_some() {
            return Err(HostError::invalid(format!("column '{name}' already exists in table '{}'", at.uri())));
        }
        if !seen.insert(name) {
            return Err(HostError::invalid(format!("column '{name}' is named twice")));
        }
    }
    Ok(())
}

fn evolve(at: &Snapshot, what: String, transform: NewColumnTransform) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    let mut ds = (*at.dataset).clone();
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let ds = session::block_on(async move {
        ds.add_columns(transform, None, None).await?;
        Ok::<_, lance::Error>(ds)
    })?
    .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    Ok(Snapshot {
        dataset: Arc::new(ds),
        storage_options: at.storage_options.clone(),
    })
}

/// Add columns whose values are Lance SQL expressions over each row (`("total", "price *
/// qty")`), written for every existing row.
pub fn add_columns(at: &Snapshot, columns: &[(String, String)]) -> Result<Snapshot> {
    if columns.is_empty() {
        return Err(HostError::invalid("no columns to add"));
    }
    check_new_names(at, columns.iter().map(|(n, _)| n.as_str()))?;
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    let what = format!("cannot add columns {} to table '{}'", names.join(", "), at.uri());
    // an expression that does not parse is refused before anything is written
    for (name, expr) in columns {
        at.dataset
            .scan()
            .project_with_transform(&[(name.as_str(), expr.as_str())])
            .map_err(|e| HostError::from_lance(&format!("{what}: bad expression for '{name}': {expr}"), e))?;
    }
    evolve(at, what, NewColumnTransform::SqlExpressions(columns.to_vec()))
}

/// Add columns of `schema`'s fields, null in every existing row (metadata only: no data is
/// written). The fields must be nullable.
pub fn add_null_columns(at: &Snapshot, schema: arrow_schema::Schema) -> Result<Snapshot> {
    if schema.fields().is_empty() {
        return Err(HostError::invalid("no columns to add"));
    }
    check_new_names(at, schema.fields().iter().map(|f| f.name().as_str()))?;
    if let Some(f) = schema.fields().iter().find(|f| !f.is_nullable()) {
        return Err(HostError::invalid(format!(
            "column '{}' is not nullable: columns added as nulls must be nullable",
            f.name()
        )));
    }
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let what = format!("cannot add columns {} to table '{}'", names.join(", "), at.uri());
    super::encoding::check(&schema).map_err(|e| e.context(&what))?;
    evolve(at, what, NewColumnTransform::AllNulls(Arc::new(schema)))
}

/// Drop columns (metadata only; compaction and cleanup reclaim the space).
pub fn drop_columns(at: &Snapshot, columns: &[String]) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    if columns.is_empty() {
        return Err(HostError::invalid("no columns to drop"));
    }
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let what = format!("cannot drop columns {} of table '{}'", names.join(", "), at.uri());
    for name in &names {
        if at.dataset.schema().field(name).is_none() {
            return Err(HostError::invalid(format!("{what}: column '{name}' does not exist")));
        }
    }
    at.dataset.plan_drop_columns(&names).map_err(|e| HostError::from_lance(&what, e))?;
    let mut ds = (*at.dataset).clone();
    let planned_at = at.version();
    let uri = at.uri().to_string();
    let owned = columns.to_vec();
    let ds = session::block_on(async move {
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        ds.drop_columns(&names).await?;
        Ok::<_, lance::Error>(ds)
    })?
    .map_err(|e| commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    Ok(Snapshot {
        dataset: Arc::new(ds),
        storage_options: at.storage_options.clone(),
    })
}
