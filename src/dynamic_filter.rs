//! Dynamic filters: a predicate a host tightens while its scans run — a hash join's build side
//! that grows, a top-n whose threshold rises — and that every running scan given the filter
//! re-reads before each batch it hands over.
//!
//! - A filter is made for one table and a fixed set of its top-level columns (the only columns
//!   its predicates may name). A scan given the filter reads those columns too, and drops the
//!   ones the host did not ask for before the batch leaves the library.
//! - Its predicate is SQL text (Lance's dialect, planned as a scan's `filter_sql` is, so NaN,
//!   signed zeros and NULLs compare exactly as in a static filter) or a key set (`column IN
//!   (values)`), replaced whole by each update; none at first (every row passes). An update
//!   that does not parse, names another column, or does not fit the column types is refused
//!   and leaves the predicate as it was.
//! - Every batch a stream returns after an update returned is filtered with that predicate (or
//!   a newer one); batches returned before it are not revisited. The predicate is applied to
//!   the batches the scan produces (after its static filter, limit and offset, which is why a
//!   scan with a dynamic filter takes no limit or offset); a batch it empties is skipped.
//! - Updates and reads are thread-safe: a host may update from its join thread while streams
//!   are read on others; each stream compiles a predicate once per update it sees.

use std::sync::{Arc, RwLock};

use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use lance::deps::datafusion::logical_expr::Expr;
use lance::deps::datafusion::physical_expr::PhysicalExpr;

use crate::error::{HostError, Result};
use crate::key_filter::KeyFilter;
use crate::snapshot::Snapshot;

/// A shared, updatable predicate for running scans (see the module docs). Cloning shares it.
#[derive(Clone)]
pub struct DynamicFilter {
    shared: Arc<FilterShared>,
}

struct FilterShared {
    /// The table's name in messages.
    table: String,
    /// The declared columns, as the table types them: what predicates are parsed against.
    schema: SchemaRef,
    state: RwLock<PredicateState>,
}

#[derive(Clone)]
struct PredicateState {
    /// Bumped by every accepted update.
    generation: u64,
    /// None: every row passes. Shared, so a stream's per-batch look at the state copies a
    /// pointer, not a key set of a million values.
    expr: Option<Arc<Expr>>,
}

impl std::fmt::Debug for DynamicFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DynamicFilter({:?})", self.columns())
    }
}

impl PartialEq for DynamicFilter {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl DynamicFilter {
    /// A filter over `columns` (top-level columns of the snapshot's table, at least one, no
    /// duplicates), passing every row until its first update.
    pub fn new(snapshot: &Snapshot, columns: &[String]) -> Result<Self> {
        let table = snapshot.arrow_schema();
        if columns.is_empty() {
            return Err(HostError::invalid("a dynamic filter needs at least one column"));
        }
        let mut fields = Vec::with_capacity(columns.len());
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].contains(c) {
                return Err(HostError::invalid(format!("dynamic filter column '{c}' is given twice")));
            }
            let field = table.field_with_name(c).map_err(|_| {
                HostError::invalid(format!(
                    "dynamic filter column '{c}' is not a top-level column of table '{}' (columns: {})",
                    snapshot.uri(),
                    table.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                ))
            })?;
            fields.push(field.clone());
        }
        Ok(Self {
            shared: Arc::new(FilterShared {
                table: snapshot.uri().to_string(),
                schema: Arc::new(Schema::new(fields)),
                state: RwLock::new(PredicateState { generation: 0, expr: None }),
            }),
        })
    }

    /// The URI of the table it was made for.
    pub fn table(&self) -> &str {
        &self.shared.table
    }

    /// The columns its predicates may name, in the order given.
    pub fn columns(&self) -> Vec<String> {
        self.shared.schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    /// Replace the predicate with SQL text over the filter's columns; `None` or blank text lets
    /// every row pass again.
    pub fn set_sql(&self, sql: Option<&str>) -> Result<()> {
        let expr = match sql.map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(text) => {
                crate::sql_text::check_expression("the dynamic filter", text)?;
                let planner = lance_datafusion::planner::Planner::new(self.shared.schema.clone());
                let parsed = crate::logging::catch_quietly(|| planner.parse_filter(text))
                    .map_err(|_| HostError::invalid(format!("dynamic filter uses SQL that Lance cannot plan: {text}")))?
                    .map_err(|e| self.refused(text, e))?;
                Some(planner.optimize_expr(parsed).map_err(|e| self.refused(text, e))?)
            }
        };
        self.install(expr)
    }

    /// Replace the predicate with `column IN (values)` (NULL keys match nothing; no keys,
    /// nothing).
    pub fn set_keys(&self, keys: &KeyFilter) -> Result<()> {
        let expr = crate::key_filter::expr_in(&self.shared.schema, "the dynamic filter's columns", keys)?;
        let planner = lance_datafusion::planner::Planner::new(self.shared.schema.clone());
        let expr = planner
            .optimize_expr(expr)
            .map_err(|e| HostError::from_lance("cannot use the dynamic filter's keys", e))?;
        self.install(Some(expr))
    }

    /// How many updates were accepted.
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// An update the planner refused: the caller's input, whatever Lance's error kind.
    fn refused(&self, text: &str, e: lance::Error) -> HostError {
        let context = format!(
            "dynamic filter '{text}' on table '{}' (it may name only the columns {:?})",
            self.shared.table,
            self.columns()
        );
        HostError::invalid(HostError::from_lance(&context, e).message)
    }

    fn install(&self, expr: Option<Expr>) -> Result<()> {
        let mut state = self.shared.state.write().map_err(|_| HostError::internal("dynamic filter lock poisoned"))?;
        state.generation += 1;
        state.expr = expr.map(Arc::new);
        Ok(())
    }

    fn read(&self) -> PredicateState {
        match self.shared.state.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// A dynamic filter as one stream applies it: the predicate compiled for the stream's batches
/// (once per update), and the columns the scan read only for the filter, dropped afterwards.
pub struct Applied {
    filter: DynamicFilter,
    /// The generation `compiled` belongs to (None: nothing compiled yet).
    seen: Option<u64>,
    compiled: Option<Arc<dyn PhysicalExpr>>,
    /// Indices of the batch columns the host asked for (None: all of them).
    keep: Option<Vec<usize>>,
    output: SchemaRef,
}

impl Applied {
    /// Apply `filter` to batches of `schema` (what the scan produces), returning only the
    /// columns of `schema` not in `added` (the ones the scan read for the filter alone).
    pub fn new(filter: DynamicFilter, schema: &SchemaRef, added: &[String]) -> Result<Self> {
        let (keep, output) = if added.is_empty() {
            (None, schema.clone())
        } else {
            let keep: Vec<usize> = (0..schema.fields().len())
                .filter(|&i| !added.iter().any(|a| a == schema.field(i).name()))
                .collect();
            let output = Arc::new(schema.project(&keep).map_err(|e| HostError::internal(format!("dynamic filter projection: {e}")))?);
            (Some(keep), output)
        };
        Ok(Self { filter, seen: None, compiled: None, keep, output })
    }

    /// The schema of the batches the host receives.
    pub fn output_schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// Filter one batch with the predicate current now, then drop the added columns.
    pub fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        // Per batch: compare the generation under the read lock; the expression is looked at
        // (an Arc copied) only when an update came.
        if self.seen != Some(self.filter.generation()) {
            let state = self.filter.read();
            self.compiled = match &state.expr {
                None => None,
                Some(expr) => {
                    let planner = lance_datafusion::planner::Planner::new(batch.schema());
                    Some(planner.create_physical_expr(expr).map_err(|e| HostError::from_lance("cannot apply the dynamic filter", e))?)
                }
            };
            self.seen = Some(state.generation);
        }
        let batch = match &self.compiled {
            None => batch,
            Some(predicate) => {
                let value = predicate
                    .evaluate(&batch)
                    .and_then(|v| v.into_array(batch.num_rows()))
                    .map_err(|e| HostError::from_engine("cannot apply the dynamic filter", e))?;
                let mask = value
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| HostError::invalid(format!("the dynamic filter is not a condition (it gives {})", value.data_type())))?;
                // NULL is not true: the row is dropped, as a WHERE clause drops it
                let mask = if mask.null_count() > 0 { arrow::compute::prep_null_mask_filter(mask) } else { mask.clone() };
                arrow::compute::filter_record_batch(&batch, &mask).map_err(|e| HostError::internal(format!("dynamic filter: {e}")))?
            }
        };
        match &self.keep {
            None => Ok(batch),
            Some(keep) => batch.project(keep).map_err(|e| HostError::internal(format!("dynamic filter projection: {e}"))),
        }
    }
}
