//! A statement's Substrait plan (`SetSubstraitPlan`): parsed when set, through the translation
//! the library shares (`lance-host-substrait`), and read again against its table's own columns
//! when it runs.

use adbc_core::error::Result;
use lance_host_substrait::PlanQuery;

use crate::api::{invalid, not_implemented};
use crate::handles;

/// A Substrait plan as set (its query as the plan declares its columns) and its bytes, read
/// again against the table's own columns when it runs (`Plan::on_table`).
pub struct Plan {
    query: PlanQuery,
    bytes: Vec<u8>,
}

impl std::ops::Deref for Plan {
    type Target = PlanQuery;
    fn deref(&self) -> &PlanQuery {
        &self.query
    }
}

fn plan_error(e: lance_host_substrait::Error) -> adbc_core::error::Error {
    let message = format!("lance-host ADBC {e}");
    match e.kind {
        lance_host_substrait::ErrorKind::Invalid => invalid(message),
        lance_host_substrait::ErrorKind::Unsupported => not_implemented(message),
    }
}

impl Plan {
    /// The plan of `bytes`, its columns' kinds as its `base_schema` declares them (checked
    /// again by `on_table` when it runs).
    pub fn parse(bytes: &[u8]) -> Result<Plan> {
        let query = lance_host_substrait::parse(bytes).map_err(plan_error)?;
        Ok(Plan { query, bytes: bytes.to_vec() })
    }

    /// The plan read against `dataset`'s own columns: a column's kind (floating point,
    /// integer) is the table's whatever type the plan declares, so a NaN compares as Substrait
    /// says and integer arithmetic stays refused; a name the table lacks is refused.
    pub fn on_table(&self, dataset: &handles::Dataset) -> Result<PlanQuery> {
        let kinds = lance_host_substrait::ColumnKind::of_schema(&dataset.schema()?);
        lance_host_substrait::parse_with(&self.bytes, Some(&kinds)).map_err(plan_error)
    }
}
