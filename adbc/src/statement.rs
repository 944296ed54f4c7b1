//! Statements: a query (the SQL subset of `sql.rs`, or a table named by statement options) run
//! whole (`ExecuteQuery`) or as partitions (`ExecutePartitions`, one per lance-host split), and
//! bulk ingest (`adbc.ingest.*`) committed once, staged for another process's commit, or held
//! for the connection's transaction.
//!
//! Statement options (all strings):
//! - `lance_host.table` — the table to read (`name` or `namespace.name`), instead of SQL;
//! - `lance_host.columns` — comma-separated columns to read (default: all);
//! - `lance_host.filter` — a Lance SQL filter;
//! - `lance_host.limit` — at most this many rows (`ExecuteQuery` only);
//! - `lance_host.version` — read this table version (default: the latest);
//! - `lance_host.branch` — read this branch;
//! - `lance_host.batch_size` — rows per batch;
//! - `lance_host.partition_rows` — rows a partition holds at least (default: one fragment each);
//! - `lance_host.ingest.stage` = `true` — stage the ingest (no commit); read the share with
//!   `lance_host.ingest.share` (bytes) and commit shares of all workers in one statement that
//!   sets `lance_host.ingest.add_share` (bytes) once per share and executes with no data bound;
//! - `lance_host.statement_id`, `lance_host.commit_message` — for the commit (a retried commit
//!   with the same statement id commits once);
//! - `lance_host.vector.column` and `lance_host.vector.query` (comma-separated numbers, or
//!   little-endian float32 bytes) make the query a vector search of the table (its columns and
//!   filter, as a prefilter, apply), with `lance_host.vector.k` (default 10), `.nprobes`,
//!   `.refine`, `.metric` (`l2`, `cosine`, `dot`, `hamming`) and `.use_index` (`false`: exact);
//!   `ExecuteQuery` returns the global top k, `ExecutePartitions` one partition per index
//!   segment (and flat pieces for unindexed fragments) whose rows merge by `_distance`.
//!
//! A statement does one thing at a time: setting a SQL query drops an ingest target and
//! `lance_host.table` with its columns, filter and limit; setting either of those drops the SQL.
//! Version, branch, batch size and partition rows stay set and apply to later queries (set
//! `lance_host.version` to `0` for the latest again).

use std::sync::Arc;

use adbc_core::error::{Error, Result, Status};
use adbc_core::options::{IngestMode, OptionStatement, OptionValue};
use adbc_core::{Optionable, PartitionedResult, Statement};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::Schema;

use crate::api::{self, invalid, invalid_state, not_implemented};
use crate::handles::{self, shaped, Reader, ScanSpec, TableRef};
use crate::objects;
use crate::partition::Partition;
use crate::partition::Search;
use crate::search::{parse_vector, VectorOptions, VectorSearch};
use crate::shared::{not_found_option, option_string, Pending, Shared, UNKNOWN_OUTCOME_PENDING};
use crate::sql;
use crate::plan::Plan;
use lance_host_substrait::{PlanQuery, Shape};
use crate::text::{TextOptions, TextSearch};
use crate::writes::{self, WriteSettings};

const KNOWN: &str = "adbc.ingest.target_table, adbc.ingest.target_db_schema, adbc.ingest.target_catalog, adbc.ingest.mode, \
lance_host.table, lance_host.columns, lance_host.filter, lance_host.limit, lance_host.version, lance_host.branch, \
lance_host.batch_size, lance_host.partition_rows, lance_host.ingest.stage, lance_host.ingest.add_share, \
lance_host.statement_id, lance_host.commit_message, lance_host.vector.column, lance_host.vector.query, \
lance_host.vector.k, lance_host.vector.nprobes, lance_host.vector.refine, lance_host.vector.metric, lance_host.vector.use_index, \
lance_host.fts.column, lance_host.fts.query, lance_host.fts.k, lance_host.fts.match, lance_host.fts.slop";

pub struct LanceHostStatement {
    shared: Arc<Shared>,
    sql: Option<sql::Query>,
    plan: Option<Plan>,
    table: Option<String>,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    limit: Option<i64>,
    version: u64,
    branch: Option<String>,
    batch_size: Option<u64>,
    partition_rows: u64,
    ingest_table: Option<String>,
    ingest_schema: Option<String>,
    ingest_mode: IngestMode,
    stage: bool,
    last_share: Option<Vec<u8>>,
    shares_to_commit: Vec<Vec<u8>>,
    settings: WriteSettings,
    bound: Option<Reader>,
    vector: VectorOptions,
    text: TextOptions,
}

fn parse_u64(v: &str, key: &str) -> Result<u64> {
    v.trim().parse::<u64>().map_err(|_| {
        invalid(format!(
            "option `{key}` takes a non-negative integer, not `{v}`"
        ))
    })
}

impl LanceHostStatement {
    pub fn new(shared: Arc<Shared>) -> Self {
        LanceHostStatement {
            shared,
            sql: None,
            plan: None,
            table: None,
            columns: None,
            filter: None,
            limit: None,
            version: 0,
            branch: None,
            batch_size: None,
            partition_rows: 0,
            ingest_table: None,
            ingest_schema: None,
            ingest_mode: IngestMode::Create,
            stage: false,
            last_share: None,
            shares_to_commit: Vec::new(),
            settings: WriteSettings::default(),
            bound: None,
            vector: VectorOptions::default(),
            text: TextOptions::default(),
        }
    }

    /// The table and scan a query statement reads (a Substrait plan's scan included; its
    /// aggregate runs through `run_plan`).
    fn query(&self) -> Result<(TableRef, ScanSpec)> {
        if let Some((plan, _)) = self.plan_on_table()? {
            let Shape::Scan { columns } = &plan.shape else {
                return Err(invalid_state(
                    "lance-host ADBC: an aggregate plan is not a scan",
                ));
            };
            let spec = ScanSpec {
                columns: Some(columns.clone()),
                filter: plan.filter.clone(),
                limit: plan.limit,
                batch_size: self.batch_size,
            };
            return Ok((self.shared.resolve(TableRef::from(&plan.table)), spec));
        }
        let (table, mut spec) = match (&self.sql, &self.table) {
            (Some(_), Some(_)) => {
                return Err(invalid("lance-host ADBC: a statement has either a SQL query or `lance_host.table`, not both"))
            }
            (Some(q), None) => {
                if self.columns.is_some() || self.filter.is_some() || self.limit.is_some() {
                    return Err(invalid(
                        "lance-host ADBC: `lance_host.columns`, `.filter` and `.limit` go with `lance_host.table`; a SQL query says them itself",
                    ));
                }
                (q.table.clone(), ScanSpec { columns: q.columns.clone(), filter: q.filter.clone(), limit: q.limit, batch_size: None })
            }
            (None, Some(t)) => (
                TableRef::parse(t)?,
                ScanSpec { columns: self.columns.clone(), filter: self.filter.clone(), limit: self.limit, batch_size: None },
            ),
            (None, None) => {
                return Err(invalid_state("lance-host ADBC: no query: set a SQL query, a Substrait plan or `lance_host.table`"))
            }
        };
        spec.batch_size = self.batch_size;
        Ok((self.shared.resolve(table), spec))
    }

    /// Run the statement's query: a scan, or a Substrait plan's aggregate; the plan's output
    /// names and (for aggregates) its row limit applied.
    fn run(&self) -> Result<Reader> {
        if let Some((plan, dataset)) = self.plan_on_table()? {
            return match &plan.shape {
                Shape::Scan { columns } => {
                    let spec = ScanSpec {
                        columns: Some(columns.clone()),
                        filter: plan.filter.clone(),
                        limit: plan.limit,
                        batch_size: self.batch_size,
                    };
                    Ok(shaped(dataset.scan(&spec)?, plan.names.clone(), None)?)
                }
                Shape::Aggregate { group_by, measures } => {
                    let reader = dataset.aggregate(group_by, measures, plan.filter.as_deref())?;
                    Ok(shaped(reader, plan.names.clone(), plan.limit)?)
                }
            };
        }
        let (table, spec) = self.query()?;
        let text = self.text_search()?; // first: it refuses a vector search beside it
        if let Some(search) = self.vector_search()? {
            if spec.limit.is_some() {
                return Err(invalid("lance-host ADBC: a vector search returns `lance_host.vector.k` rows; a LIMIT does not apply"));
            }
            return self.open(&table)?.search(&search, &spec);
        }
        if let Some(search) = text {
            if spec.limit.is_some() {
                return Err(invalid("lance-host ADBC: a full-text search returns `lance_host.fts.k` rows; a LIMIT does not apply"));
            }
            return self.open(&table)?.text_search(&search, &spec);
        }
        self.open(&table)?.scan(&spec)
    }

    /// The statement's full-text search, when `lance_host.fts.column` or `.query` is set (not
    /// beside a vector search or a Substrait plan).
    fn text_search(&self) -> Result<Option<TextSearch>> {
        let Some(search) = self.text.search()? else {
            return Ok(None);
        };
        if self.plan.is_some() {
            return Err(not_implemented(
                "lance-host ADBC: a full-text search with a Substrait plan",
            ));
        }
        if self.vector.column.is_some() || self.vector.query.is_some() {
            return Err(not_implemented(
                "lance-host ADBC: a vector and a full-text search in one statement (hybrid search is not offered here)",
            ));
        }
        Ok(Some(search))
    }

    /// The statement's vector search, when `lance_host.vector.column` or `.query` is set.
    fn vector_search(&self) -> Result<Option<VectorSearch>> {
        let v = &self.vector;
        match (&v.column, &v.query) {
            (None, None) => Ok(None),
            (Some(column), Some(query)) => {
                if self.plan.is_some() {
                    return Err(not_implemented("lance-host ADBC: a vector search with a Substrait plan"));
                }
                Ok(Some(VectorSearch {
                    column: column.clone(),
                    vector: query.clone(),
                    k: v.k,
                    metric: v.metric,
                    nprobes: v.nprobes,
                    refine_factor: v.refine_factor,
                    use_index: v.use_index,
                }))
            }
            _ => Err(invalid("lance-host ADBC: a vector search needs both `lance_host.vector.column` and `lance_host.vector.query`")),
        }
    }

    /// The schema of a search's rows: the projected columns, `score` (`_distance` or
    /// `_score`), `_rowid`.
    fn search_schema(
        &self,
        dataset: &handles::Dataset,
        spec: &ScanSpec,
        score: &str,
    ) -> Result<Schema> {
        let projected = objects::project(&dataset.schema()?, spec.columns.as_ref())?;
        let mut fields: Vec<arrow_schema::Field> = projected
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(arrow_schema::Field::new(
            score,
            arrow_schema::DataType::Float32,
            true,
        ));
        fields.push(arrow_schema::Field::new(
            "_rowid",
            arrow_schema::DataType::UInt64,
            true,
        ));
        Ok(Schema::new(fields))
    }

    /// The statement's Substrait plan read against its table's own columns, and the opened
    /// table: a column's kind (floating point, integer) is the table's whatever type the plan's
    /// `base_schema` declares, so a NaN compares as Substrait says and integer arithmetic stays
    /// refused; a name the table lacks is refused. None without a plan.
    fn plan_on_table(&self) -> Result<Option<(PlanQuery, handles::Dataset)>> {
        let Some(plan) = &self.plan else {
            return Ok(None);
        };
        let dataset = self.open(&self.shared.resolve(TableRef::from(&plan.table)))?;
        Ok(Some((plan.on_table(&dataset)?, dataset)))
    }

    fn open(&self, table: &TableRef) -> Result<handles::Dataset> {
        self.shared
            .catalog
            .open_table(table, self.version, self.branch.as_deref())
    }

    fn ingest_target(&self) -> Result<Option<TableRef>> {
        match &self.ingest_table {
            None => Ok(None),
            Some(t) => {
                let table = TableRef::with_schema(self.ingest_schema.as_deref(), t)?;
                Ok(Some(if self.ingest_schema.is_some() {
                    table
                } else {
                    self.shared.resolve(table)
                }))
            }
        }
    }

    fn ingest(&mut self, target: TableRef) -> Result<Option<i64>> {
        let catalog = self.shared.catalog.clone();
        let described = match catalog.describe(&target) {
            Ok(info) => Some(info),
            Err(e) if e.status == Status::NotFound => None,
            Err(e) => return Err(e),
        };
        let Some(data) = self.bound.take() else {
            if self.shares_to_commit.is_empty() {
                return Err(invalid_state(
                    "lance-host ADBC: ingest without data: bind a batch or a stream first",
                ));
            }
            let info = described.ok_or_else(|| {
                Error::with_message_and_status(
                    format!("table `{}` does not exist", target.display()),
                    Status::NotFound,
                )
            })?;
            // the shares stay on the statement until their commit succeeds: a retry after a failed
            // or lost answer commits the same shares (with a statement id, once)
            let result = writes::commit_shares(
                &info.location,
                &self.shares_to_commit,
                &info.storage_options,
                &self.settings,
            )?;
            self.shares_to_commit.clear();
            return Ok(Some(result.rows_written as i64));
        };
        if !self.shares_to_commit.is_empty() {
            return Err(invalid("lance-host ADBC: a statement either commits shares (`lance_host.ingest.add_share`) or ingests bound data"));
        }
        let exists = described.is_some();
        let mode: Option<i32> = match (&self.ingest_mode, exists) {
            (IngestMode::Create, true) => {
                return Err(Error::with_message_and_status(
                    format!(
                        "table `{}` already exists (ingest mode create)",
                        target.display()
                    ),
                    Status::AlreadyExists,
                ))
            }
            (IngestMode::Append, false) => {
                return Err(Error::with_message_and_status(
                    format!(
                        "table `{}` does not exist (ingest mode append)",
                        target.display()
                    ),
                    Status::NotFound,
                ))
            }
            (IngestMode::Create | IngestMode::Replace | IngestMode::CreateAppend, false) => None,
            (IngestMode::Append | IngestMode::CreateAppend, true) => Some(api::WRITE_APPEND),
            (IngestMode::Replace, true) => Some(api::WRITE_OVERWRITE),
        };
        let (autocommit, unknown) = {
            let txn = self.shared.txn();
            (txn.autocommit, txn.unknown_outcome)
        };
        if unknown && !self.stage {
            return Err(invalid_state(UNKNOWN_OUTCOME_PENDING));
        }
        let (mode, info, created) = match (mode, described) {
            (Some(mode), Some(info)) => (mode, info, false),
            _ if self.stage => {
                return Err(not_implemented(format!(
                    "lance-host ADBC: table `{}` does not exist; a staged ingest writes to an existing table (create it first)",
                    target.display()
                )));
            }
            _ if autocommit => {
                let rows = catalog.create_table(&target, data, &self.settings)?;
                return Ok(Some(rows as i64));
            }
            _ => {
                // In a transaction the table is created empty and the rows are staged for the
                // commit; a rollback (or closing the connection) drops it again.
                let empty = RecordBatchIterator::new(
                    Vec::<std::result::Result<RecordBatch, arrow_schema::ArrowError>>::new(),
                    data.schema(),
                );
                catalog.create_table(&target, Box::new(empty), &WriteSettings::default())?;
                match catalog.describe(&target) {
                    Ok(info) => (api::WRITE_APPEND, info, true),
                    Err(e) => {
                        let _ = catalog.drop_table(&target);
                        return Err(e);
                    }
                }
            }
        };
        if self.stage || !autocommit {
            let staged = catalog.open_table(&target, 0, None).and_then(|at| {
                writes::stage_write(&info.location, &at, data, mode, &info.storage_options)
            });
            let (share, rows) = match staged {
                Ok(v) => v,
                Err(e) => {
                    if created {
                        let _ = catalog.drop_table(&target);
                    }
                    return Err(e);
                }
            };
            if self.stage {
                self.last_share = Some(share);
            } else {
                let mut txn = self.shared.txn();
                match txn.pending.iter_mut().find(|p| p.table == target) {
                    Some(p) => p.shares.push(share),
                    None => txn.pending.push(Pending {
                        table: target,
                        location: info.location,
                        storage_options: info.storage_options,
                        shares: vec![share],
                        created,
                        statement_id: crate::shared::new_statement_id(),
                    }),
                }
            }
            return Ok(Some(rows as i64));
        }
        let result = writes::table_write(
            &info.location,
            data,
            mode,
            &info.storage_options,
            &self.settings,
        )?;
        Ok(Some(result.rows_written as i64))
    }
}

impl Optionable for LanceHostStatement {
    type Option = OptionStatement;

    fn set_option(&mut self, key: Self::Option, value: OptionValue) -> Result<()> {
        let k = key.as_ref().to_string();
        if k == "lance_host.vector.query" {
            if let OptionValue::Bytes(b) = &value {
                if b.is_empty() || b.len() % 4 != 0 {
                    return Err(invalid("option `lance_host.vector.query` as bytes takes little-endian float32 values"));
                }
                let vector: Vec<f32> = b
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                if vector.iter().any(|v| !v.is_finite()) {
                    return Err(invalid(
                        "option `lance_host.vector.query`: the query vector must be finite numbers",
                    ));
                }
                self.vector.query = Some(vector);
                return Ok(());
            }
        }
        if k == "lance_host.ingest.add_share" {
            return match value {
                OptionValue::Bytes(b) => {
                    self.shares_to_commit.push(b);
                    Ok(())
                }
                _ => Err(invalid("option `lance_host.ingest.add_share` takes bytes (a share from `lance_host.ingest.share`)")),
            };
        }
        let v = option_string(value, &k)?;
        match key {
            OptionStatement::TargetTable => {
                // A statement does one thing: an ingest target replaces a query.
                self.sql = None;
                self.plan = None;
                self.table = None;
                self.ingest_table = Some(v);
            }
            OptionStatement::TargetDbSchema => self.ingest_schema = Some(v),
            OptionStatement::TargetCatalog => {
                if v != self.shared.catalog_name {
                    return Err(Error::with_message_and_status(format!("unknown catalog `{v}`"), Status::NotFound));
                }
            }
            OptionStatement::IngestMode => {
                self.ingest_mode = [IngestMode::Create, IngestMode::Append, IngestMode::Replace, IngestMode::CreateAppend]
                    .into_iter()
                    .find(|m| String::from(*m) == v)
                    .ok_or_else(|| {
                        invalid(format!("unknown ingest mode `{v}` (adbc.ingest.mode.create, .append, .replace, .create_append)"))
                    })?
            }
            OptionStatement::Temporary => {
                if v != "false" {
                    return Err(not_implemented("lance-host ADBC: temporary tables are not supported"));
                }
            }
            OptionStatement::Incremental => {
                if v != "false" {
                    return Err(not_implemented("lance-host ADBC: incremental execution is not supported"));
                }
            }
            _ if self.text.set(&k, v.clone())? => {}
            _ => match k.as_str() {
                "lance_host.table" => {
                    self.sql = None;
                    self.plan = None;
                    self.ingest_table = None;
                    self.table = Some(v);
                }
                "lance_host.columns" => {
                    let cols: Vec<String> = v.split(',').map(|c| c.trim().to_string()).collect();
                    if cols.iter().any(|c| c.is_empty()) {
                        return Err(invalid(format!("option `{k}`: an empty column name in `{v}`")));
                    }
                    self.columns = Some(cols);
                }
                "lance_host.filter" => self.filter = if v.trim().is_empty() { None } else { Some(v) },
                "lance_host.limit" => self.limit = Some(parse_u64(&v, &k)? as i64),
                "lance_host.version" => self.version = parse_u64(&v, &k)?,
                "lance_host.branch" => self.branch = if v.is_empty() { None } else { Some(v) },
                "lance_host.batch_size" => self.batch_size = Some(parse_u64(&v, &k)?).filter(|b| *b > 0),
                "lance_host.partition_rows" => self.partition_rows = parse_u64(&v, &k)?,
                "lance_host.ingest.stage" => {
                    self.stage = match v.as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(invalid(format!("option `{k}` takes `true` or `false`, not `{v}`"))),
                    }
                }
                "lance_host.vector.column" => self.vector.column = Some(v).filter(|c| !c.is_empty()),
                "lance_host.vector.query" => self.vector.query = Some(parse_vector(&v, &k)?),
                "lance_host.vector.k" => {
                    // a refused value leaves the option as it was
                    let value = parse_u64(&v, &k)?;
                    if value == 0 {
                        return Err(invalid(format!("option `{k}` must be at least 1")));
                    }
                    self.vector.k = value;
                }
                "lance_host.vector.nprobes" => {
                    self.vector.nprobes = u32::try_from(parse_u64(&v, &k)?).map_err(|_| invalid(format!("option `{k}` is too large")))?
                }
                "lance_host.vector.refine" => {
                    self.vector.refine_factor =
                        u32::try_from(parse_u64(&v, &k)?).map_err(|_| invalid(format!("option `{k}` is too large")))?
                }
                "lance_host.vector.metric" => {
                    self.vector.metric = match v.to_ascii_lowercase().as_str() {
                        "" | "default" => 0,
                        "l2" | "euclidean" => 1,
                        "cosine" => 2,
                        "dot" => 3,
                        "hamming" => 4,
                        _ => return Err(invalid(format!("option `{k}` takes l2, cosine, dot or hamming, not `{v}`"))),
                    }
                }
                "lance_host.vector.use_index" => {
                    self.vector.use_index = match v.as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(invalid(format!("option `{k}` takes `true` or `false`, not `{v}`"))),
                    }
                }
                "lance_host.statement_id" => self.settings.statement_id = Some(v),
                "lance_host.commit_message" => self.settings.commit_message = Some(v),
                _ => {
                    return Err(not_implemented(format!("lance-host ADBC: unknown statement option `{k}`; known: {KNOWN}")))
                }
            },
        }
        Ok(())
    }

    fn get_option_string(&self, key: Self::Option) -> Result<String> {
        let k = key.as_ref();
        let v = match k {
            "adbc.ingest.target_table" => self.ingest_table.clone(),
            "lance_host.table" => self.table.clone(),
            "lance_host.filter" => self.filter.clone(),
            "lance_host.columns" => self.columns.as_ref().map(|c| c.join(",")),
            "lance_host.version" => Some(self.version.to_string()),
            "lance_host.statement_id" => self.settings.statement_id.clone(),
            _ => self.text.get(k),
        };
        v.ok_or_else(|| not_found_option(k))
    }

    fn get_option_bytes(&self, key: Self::Option) -> Result<Vec<u8>> {
        match key.as_ref() {
            "lance_host.ingest.share" => self.last_share.clone().ok_or_else(|| {
                Error::with_message_and_status(
                    "no staged share: execute an ingest with `lance_host.ingest.stage` = true first",
                    Status::NotFound,
                )
            }),
            k => Err(not_found_option(k)),
        }
    }

    fn get_option_int(&self, key: Self::Option) -> Result<i64> {
        match key.as_ref() {
            "lance_host.version" => Ok(self.version as i64),
            k => Err(not_found_option(k)),
        }
    }

    fn get_option_double(&self, key: Self::Option) -> Result<f64> {
        Err(not_found_option(key.as_ref()))
    }
}

impl Statement for LanceHostStatement {
    fn bind(&mut self, batch: RecordBatch) -> Result<()> {
        let schema = batch.schema();
        self.bound = Some(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)));
        Ok(())
    }

    fn bind_stream(&mut self, reader: Box<dyn RecordBatchReader + Send>) -> Result<()> {
        self.bound = Some(reader);
        Ok(())
    }

    fn execute(&mut self) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        if self.ingest_table.is_some() {
            return Err(invalid_state(
                "lance-host ADBC: a bulk ingest runs with ExecuteUpdate",
            ));
        }
        if self.bound.is_some() {
            return Err(not_implemented(
                "lance-host ADBC: query parameters are not supported",
            ));
        }
        self.run()
    }

    fn execute_update(&mut self) -> Result<Option<i64>> {
        match self.ingest_target()? {
            Some(target) => self.ingest(target),
            None => Err(not_implemented(
                "lance-host ADBC: ExecuteUpdate runs bulk ingest (set adbc.ingest.target_table); SQL updates are not supported",
            )),
        }
    }

    fn execute_schema(&mut self) -> Result<Schema> {
        if self.plan.is_some() {
            // the plan's output (renamed; an aggregate's types): the schema of its stream
            return Ok(self.run()?.schema().as_ref().clone());
        }
        let (table, spec) = self.query()?;
        if self.text_search()?.is_some() {
            return self.search_schema(&self.open(&table)?, &spec, "_score");
        }
        if self.vector_search()?.is_some() {
            return self.search_schema(&self.open(&table)?, &spec, "_distance");
        }
        objects::project(&self.open(&table)?.schema()?, spec.columns.as_ref())
    }

    fn execute_partitions(&mut self) -> Result<PartitionedResult> {
        if self.bound.is_some() {
            return Err(not_implemented(
                "lance-host ADBC: query parameters are not supported",
            ));
        }
        if let Some(plan) = &self.plan {
            match &plan.shape {
                Shape::Aggregate { .. } => {
                    return Err(not_implemented(
                        "lance-host ADBC: ExecutePartitions of an aggregate plan (partitions would hold partial states); run it with ExecuteQuery",
                    ))
                }
                Shape::Scan { columns } => {
                    if plan.names.as_ref().is_some_and(|n| n != columns) {
                        return Err(not_implemented(
                            "lance-host ADBC: ExecutePartitions of a plan that renames its output columns",
                        ));
                    }
                }
            }
        }
        let (table, spec) = self.query()?;
        if spec.limit.is_some() {
            return Err(not_implemented(
                "lance-host ADBC: LIMIT with ExecutePartitions (each partition would apply it alone); read with ExecuteQuery, or limit after merging",
            ));
        }
        let dataset = self.open(&table)?;
        let text = self.text_search()?;
        let search = match (self.vector_search()?, text) {
            (Some(v), _) => Some(Search::Vector(v)),
            // the BM25 statistics of the whole snapshot, once, shipped with every partition
            (None, Some(t)) => {
                let stats = dataset.text_stats(&t, &spec)?;
                Some(Search::Text(t, stats))
            }
            (None, None) => None,
        };
        let (schema, splits) = match &search {
            Some(Search::Vector(v)) => (
                self.search_schema(&dataset, &spec, "_distance")?,
                dataset.plan_search(v, self.partition_rows)?,
            ),
            Some(Search::Text(t, _)) => (
                self.search_schema(&dataset, &spec, "_score")?,
                dataset.plan_text(t, self.partition_rows)?,
            ),
            None => (
                objects::project(&dataset.schema()?, spec.columns.as_ref())?,
                dataset.plan_scan(self.partition_rows)?,
            ),
        };
        let partitions = splits
            .into_iter()
            .map(|split| {
                // a scan split ships the manifest of its own fragments: the reader opens it
                // without reading the table's manifest, whose size grows with the table
                let token = match search {
                    None => Some(dataset.split_snapshot(&split)?),
                    Some(_) => None,
                };
                Ok(Partition {
                    table: table.clone(),
                    spec: ScanSpec {
                        columns: spec.columns.clone(),
                        filter: spec.filter.clone(),
                        limit: None,
                        batch_size: None,
                    },
                    search: search.clone(),
                    split,
                    token,
                }
                .encode())
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PartitionedResult {
            partitions,
            schema,
            rows_affected: -1,
        })
    }

    fn get_parameter_schema(&self) -> Result<Schema> {
        Err(not_implemented(
            "lance-host ADBC: query parameters are not supported",
        ))
    }

    fn prepare(&mut self) -> Result<()> {
        if self.ingest_table.is_some() || self.plan.is_some() {
            return Ok(()); // a plan was checked when it was set
        }
        self.query().map(|_| ())
    }

    fn set_sql_query(&mut self, query: impl AsRef<str>) -> Result<()> {
        let parsed = sql::parse(query.as_ref())?;
        // A statement does one thing: a query replaces an ingest target or a named table with
        // its columns, filter and limit (the SQL says those); version, branch, batch size and
        // partition rows stay and apply to the query.
        self.ingest_table = None;
        self.table = None;
        self.columns = None;
        self.filter = None;
        self.limit = None;
        self.plan = None;
        self.sql = Some(parsed);
        Ok(())
    }

    fn set_substrait_plan(&mut self, plan: impl AsRef<[u8]>) -> Result<()> {
        let parsed = Plan::parse(plan.as_ref())?;
        // a plan replaces any other query or ingest target, as SQL does
        self.ingest_table = None;
        self.table = None;
        self.columns = None;
        self.filter = None;
        self.limit = None;
        self.sql = None;
        self.plan = Some(parsed);
        Ok(())
    }

    fn cancel(&mut self) -> Result<()> {
        Err(not_implemented(
            "lance-host ADBC: cancel a query by releasing its stream",
        ))
    }
}
