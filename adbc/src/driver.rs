//! Driver, database and connection.
//!
//! - database options = catalog properties of `lance_catalog_open` (`type`, `root`, `uri`,
//!   `storage.<key>`, `auth`, `header.<Name>`, `parent`, `delimiter`, `timeout_ms`, ...), plus
//!   ADBC's `uri` (an `http(s)://` URI opens a REST catalog, anything else is a directory
//!   catalog's `root`) and `lance_host.catalog_name` (the catalog's name in `GetObjects`);
//! - a connection shares the database's catalog and the library's process-wide session; with
//!   autocommit off, its bulk ingests are staged and `Commit` makes each table's one version
//!   (`Rollback`, or closing the connection, deletes the staged files). Each table's commit
//!   carries a statement id: a `Commit` whose answer was lost keeps the transaction open with
//!   its writes, and the next `Commit` commits them once (see `commit_pending`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use adbc_core::error::{Error, Result, Status};
use adbc_core::options::{InfoCode, ObjectDepth, OptionConnection, OptionDatabase, OptionValue};
use adbc_core::{Connection, Database, Driver, Optionable};
use arrow_array::RecordBatchReader;
use arrow_schema::Schema;

use crate::api::{self, api, invalid, not_implemented};
use crate::handles::{self, Catalog, Reader, TableRef};
use crate::objects;
use crate::partition::Partition;
use crate::shared::{not_found_option, option_string, Pending, Shared, Txn};
use crate::statement::LanceHostStatement;
use crate::writes;

/// The `Optionable` getters of options the driver keeps only as strings: NOT_FOUND.
macro_rules! no_typed_options {
    () => {
        fn get_option_bytes(&self, key: Self::Option) -> Result<Vec<u8>> {
            Err(not_found_option(key.as_ref()))
        }

        fn get_option_int(&self, key: Self::Option) -> Result<i64> {
            Err(not_found_option(key.as_ref()))
        }

        fn get_option_double(&self, key: Self::Option) -> Result<f64> {
            Err(not_found_option(key.as_ref()))
        }
    };
}

#[derive(Default)]
pub struct LanceHostDriver;

impl Driver for LanceHostDriver {
    type DatabaseType = LanceHostDatabase;

    fn new_database(&mut self) -> Result<Self::DatabaseType> {
        self.new_database_with_opts(std::iter::empty())
    }

    fn new_database_with_opts(
        &mut self,
        opts: impl IntoIterator<Item = (OptionDatabase, OptionValue)>,
    ) -> Result<Self::DatabaseType> {
        let mut db = LanceHostDatabase {
            options: Vec::new(),
            catalog_name: "lance".into(),
            catalog: None,
        };
        for (k, v) in opts {
            db.set_option(k, v)?;
        }
        let properties = db.catalog_properties();
        db.catalog = Some(Arc::new(Catalog::open(&properties)?));
        Ok(db)
    }
}

pub struct LanceHostDatabase {
    options: Vec<(String, String)>,
    catalog_name: String,
    catalog: Option<Arc<Catalog>>,
}

impl LanceHostDatabase {
    fn catalog_properties(&self) -> Vec<(String, String)> {
        let explicit_type = self
            .options
            .iter()
            .find(|(k, _)| k == "type")
            .map(|(_, v)| v.clone());
        let mut out = Vec::new();
        for (k, v) in &self.options {
            if k == "uri" {
                let rest = match explicit_type.as_deref() {
                    Some(t) => t == "rest",
                    None => v.starts_with("http://") || v.starts_with("https://"),
                };
                if rest {
                    if explicit_type.is_none() {
                        out.push(("type".to_string(), "rest".to_string()));
                    }
                    out.push(("uri".to_string(), v.clone()));
                } else {
                    out.push(("root".to_string(), v.clone()));
                }
            } else {
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }
}

fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "token",
        "secret",
        "key",
        "password",
        "credential",
        "sas",
        "header.",
    ]
    .iter()
    .any(|s| k.contains(s))
}

impl Optionable for LanceHostDatabase {
    type Option = OptionDatabase;

    fn set_option(&mut self, key: Self::Option, value: OptionValue) -> Result<()> {
        if self.catalog.is_some() {
            return Err(api::invalid_state(
                "lance-host ADBC: database options are set before AdbcDatabaseInit",
            ));
        }
        let k = key.as_ref().to_string();
        let v = option_string(value, &k)?;
        if k == "lance_host.catalog_name" {
            self.catalog_name = v;
            return Ok(());
        }
        if k.starts_with("adbc.") || k == "username" || k == "password" {
            return Err(not_implemented(format!(
                "lance-host ADBC: database option `{k}` is not supported (options are catalog properties: type, root, uri, storage.<key>, auth, ...)"
            )));
        }
        self.options.retain(|(existing, _)| existing != &k);
        self.options.push((k, v));
        Ok(())
    }

    fn get_option_string(&self, key: Self::Option) -> Result<String> {
        let k = key.as_ref();
        if k == "lance_host.catalog_name" {
            return Ok(self.catalog_name.clone());
        }
        if is_secret(k) {
            return Err(not_found_option(k));
        }
        self.options
            .iter()
            .find(|(o, _)| o == k)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| not_found_option(k))
    }

    no_typed_options!();
}

impl Database for LanceHostDatabase {
    type ConnectionType = LanceHostConnection;

    fn new_connection(&self) -> Result<Self::ConnectionType> {
        self.new_connection_with_opts(std::iter::empty())
    }

    fn new_connection_with_opts(
        &self,
        opts: impl IntoIterator<Item = (OptionConnection, OptionValue)>,
    ) -> Result<Self::ConnectionType> {
        let catalog = self
            .catalog
            .clone()
            .ok_or_else(|| api::invalid_state("database not initialised"))?;
        let mut conn = LanceHostConnection {
            shared: Arc::new(Shared {
                catalog,
                catalog_name: self.catalog_name.clone(),
                txn: Mutex::new(Txn {
                    autocommit: true,
                    pending: Vec::new(),
                    unknown_outcome: false,
                    db_schema: Vec::new(),
                }),
            }),
        };
        for (k, v) in opts {
            conn.set_option(k, v)?;
        }
        Ok(conn)
    }
}

pub struct LanceHostConnection {
    shared: Arc<Shared>,
}

impl Drop for LanceHostConnection {
    fn drop(&mut self) {
        // Closing a connection with uncommitted ingests discards them (their files are deleted),
        // unless the last commit's outcome is unknown: its files may belong to a version now.
        let (pending, unknown) = {
            let mut txn = self.shared.txn();
            (std::mem::take(&mut txn.pending), txn.unknown_outcome)
        };
        if !unknown {
            let _ = discard(&self.shared, pending);
        }
    }
}

fn bool_option(v: &str, key: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(format!(
            "option `{key}` takes `true` or `false`, not `{v}`"
        ))),
    }
}

impl Optionable for LanceHostConnection {
    type Option = OptionConnection;

    fn set_option(&mut self, key: Self::Option, value: OptionValue) -> Result<()> {
        let k = key.as_ref().to_string();
        let v = option_string(value, &k)?;
        match key {
            OptionConnection::AutoCommit => {
                let on = bool_option(&v, &k)?;
                let mut txn = self.shared.txn();
                if on && !txn.autocommit && !txn.pending.is_empty() {
                    // ADBC: turning autocommit on commits the open transaction.
                    drop(txn);
                    self.commit()?;
                    txn = self.shared.txn();
                }
                txn.autocommit = on;
                Ok(())
            }
            OptionConnection::CurrentCatalog => {
                if v == self.shared.catalog_name {
                    Ok(())
                } else {
                    Err(Error::with_message_and_status(format!("unknown catalog `{v}`"), Status::NotFound))
                }
            }
            OptionConnection::CurrentSchema => {
                let parts = if v.is_empty() { Vec::new() } else { handles::split_identifier(&v)? };
                self.shared.txn().db_schema = parts;
                Ok(())
            }
            _ => Err(not_implemented(format!(
                "lance-host ADBC: connection option `{k}` is not supported (supported: adbc.connection.autocommit, adbc.connection.catalog, adbc.connection.db_schema)"
            ))),
        }
    }

    fn get_option_string(&self, key: Self::Option) -> Result<String> {
        match key {
            OptionConnection::AutoCommit => Ok(if self.shared.txn().autocommit {
                "true"
            } else {
                "false"
            }
            .into()),
            OptionConnection::CurrentCatalog => Ok(self.shared.catalog_name.clone()),
            OptionConnection::CurrentSchema => {
                Ok(objects::schema_name(&self.shared.txn().db_schema))
            }
            other => Err(not_found_option(other.as_ref())),
        }
    }

    no_typed_options!();
}

impl Connection for LanceHostConnection {
    type StatementType = LanceHostStatement;

    fn new_statement(&mut self) -> Result<Self::StatementType> {
        Ok(LanceHostStatement::new(self.shared.clone()))
    }

    fn cancel(&mut self) -> Result<()> {
        Err(not_implemented(
            "lance-host ADBC: cancel a connection by releasing its statements' streams",
        ))
    }

    fn get_info(
        &self,
        codes: Option<HashSet<InfoCode>>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        let api = api()?;
        // SAFETY: static string of the library.
        let version = unsafe { api::cstr((api.lance_host_version)()) };
        objects::info_reader(codes, &version)
    }

    fn get_objects(
        &self,
        depth: ObjectDepth,
        catalog: Option<&str>,
        db_schema: Option<&str>,
        table_name: Option<&str>,
        table_type: Option<Vec<&str>>,
        column_name: Option<&str>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        let entries = objects::collect(
            &self.shared.catalog,
            &self.shared.catalog_name,
            depth,
            catalog,
            db_schema,
            table_name,
            table_type,
            column_name,
        )?;
        objects::objects_reader(&self.shared.catalog_name, entries, depth)
    }

    fn get_table_schema(
        &self,
        catalog: Option<&str>,
        db_schema: Option<&str>,
        table_name: &str,
    ) -> Result<Schema> {
        if !self.shared.check_catalog(catalog)? {
            return Err(Error::with_message_and_status(
                format!("unknown catalog `{}`", catalog.unwrap_or("")),
                Status::NotFound,
            ));
        }
        let table = match db_schema {
            Some(s) => TableRef::with_schema(Some(s), table_name)?,
            None => self
                .shared
                .resolve(TableRef::with_schema(None, table_name)?),
        };
        self.shared.catalog.open_table(&table, 0, None)?.schema()
    }

    fn get_table_types(&self) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        objects::table_types_reader()
    }

    fn get_statistic_names(&self) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        // only ADBC's standard statistics: no names of the driver's own
        let schema = adbc_core::schemas::GET_STATISTIC_NAMES_SCHEMA.clone();
        let batch = arrow_array::RecordBatch::new_empty(schema.clone());
        Ok(Box::new(arrow_array::RecordBatchIterator::new(
            vec![Ok(batch)],
            schema,
        )))
    }

    fn get_statistics(
        &self,
        catalog: Option<&str>,
        db_schema: Option<&str>,
        table_name: Option<&str>,
        approximate: bool,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        // The row count of each table's latest version (exact, from the manifest) and, when
        // approximate values are allowed, each column's average encoded bytes per row.
        let entries = objects::collect(
            &self.shared.catalog,
            &self.shared.catalog_name,
            ObjectDepth::Tables,
            catalog,
            db_schema,
            table_name,
            None,
            None,
        )?;
        let Some(entries) = entries else {
            // the catalog filter excludes the one catalog
            let schema = adbc_core::schemas::GET_STATISTICS_SCHEMA.clone();
            let batch = arrow_array::RecordBatch::new_empty(schema.clone());
            return Ok(Box::new(arrow_array::RecordBatchIterator::new(
                vec![Ok(batch)],
                schema,
            )));
        };
        let mut per_schema = Vec::new();
        for s in entries {
            let namespace = if s.name.is_empty() {
                Vec::new()
            } else {
                handles::split_identifier(&s.name)?
            };
            let mut stats = Vec::new();
            for t in s.tables.unwrap_or_default() {
                let table = TableRef {
                    namespace: namespace.clone(),
                    name: t.name.clone(),
                };
                let figures = self
                    .shared
                    .catalog
                    .open_table(&table, 0, None)?
                    .statistics()?;
                stats.push(objects::Statistic {
                    table: t.name.clone(),
                    column: None,
                    key: objects::STAT_ROW_COUNT,
                    value: objects::StatValue::Int(figures.rows as i64),
                    approximate: false,
                });
                if approximate && figures.rows > 0 {
                    for (column, bytes) in figures.columns {
                        if let Some(bytes) = bytes {
                            stats.push(objects::Statistic {
                                table: t.name.clone(),
                                column: Some(column),
                                key: objects::STAT_AVERAGE_BYTE_WIDTH,
                                value: objects::StatValue::Float(
                                    bytes as f64 / figures.rows as f64,
                                ),
                                approximate: true,
                            });
                        }
                    }
                }
            }
            per_schema.push((s.name, stats));
        }
        objects::statistics_reader(&self.shared.catalog_name, per_schema)
    }

    fn commit(&mut self) -> Result<()> {
        let mut txn = self.shared.txn();
        if txn.autocommit {
            return Err(api::invalid_state(
                "lance-host ADBC: commit with autocommit on (nothing to commit)",
            ));
        }
        let pending = std::mem::take(&mut txn.pending);
        let retry = txn.unknown_outcome;
        drop(txn);
        match commit_pending(&self.shared, pending, retry) {
            Ok(()) => {
                self.shared.txn().unknown_outcome = false;
                Ok(())
            }
            Err(Failure::Definite(e)) => Err(e),
            Err(Failure::Unknown(e, pending)) => {
                // the transaction stays open with the same shares and statement ids
                let mut txn = self.shared.txn();
                txn.pending = pending;
                txn.unknown_outcome = true;
                Err(e)
            }
        }
    }

    fn rollback(&mut self) -> Result<()> {
        let mut txn = self.shared.txn();
        if txn.autocommit {
            return Err(api::invalid_state(
                "lance-host ADBC: rollback with autocommit on",
            ));
        }
        if txn.unknown_outcome {
            return Err(api::invalid_state(crate::shared::UNKNOWN_OUTCOME_PENDING));
        }
        let pending = std::mem::take(&mut txn.pending);
        drop(txn);
        discard(&self.shared, pending)
    }

    fn read_partition(
        &self,
        partition: impl AsRef<[u8]>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        read_partition(&self.shared, partition.as_ref())
    }
}

/// Delete a transaction's staged files and drop the tables it created; the first error is
/// returned after everything was tried.
fn discard(shared: &Shared, pending: Vec<Pending>) -> Result<()> {
    let mut first = Ok(());
    for p in pending {
        let r = writes::abort_shares(&p.shares, &p.storage_options);
        let r = r.and_then(|_| {
            if p.created {
                shared.catalog.drop_table(&p.table)
            } else {
                Ok(())
            }
        });
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// How a transaction's commit failed.
enum Failure {
    /// Nothing was committed; the staged files were deleted and created tables dropped.
    Definite(Error),
    /// The commit may have landed (its answer was lost): the shares are given back, kept.
    Unknown(Error, Vec<Pending>),
}

/// Library codes after which a commit surely committed nothing (lance_host.h: a refused share,
/// a conflict, a check that failed, a namespace that cannot commit the tables together).
/// Any other failure (I/O, a lost answer, a timeout, an internal error) may have landed.
const DEFINITE: [i32; 6] = [
    1,  // INVALID_ARGUMENT
    2,  // NOT_FOUND
    4,  // NOT_SUPPORTED
    7,  // FAILED_PRECONDITION
    10, // CORRUPT
    13, // CONFLICT
];

/// Whether `e` says that nothing was committed. An error the driver made itself before calling
/// the library (it carries no library code) committed nothing either.
fn nothing_committed(e: &Error) -> bool {
    match api::library_code(e) {
        Some(code) => DEFINITE.contains(&code),
        None => true,
    }
}

/// Commit the staged shares of a transaction: one version per table, each table's commit
/// carrying its statement id. Several tables commit together through the library's multi-table
/// commit (their namespace must commit several tables at once), never one after another: that
/// could leave the transaction half-committed. A definite failure deletes the staged files; a
/// failure that may have landed keeps them and gives the shares back. `retry`: an earlier commit
/// of these shares lost its answer; whatever this one says, its files are never deleted.
fn commit_pending(
    shared: &Shared,
    pending: Vec<Pending>,
    retry: bool,
) -> std::result::Result<(), Failure> {
    if pending.is_empty() {
        return Ok(());
    }
    let outcome = if pending.len() > 1 {
        let tables: Vec<(&str, &[Vec<u8>], &[String], &str)> = pending
            .iter()
            .map(|p| {
                (
                    p.location.as_str(),
                    p.shares.as_slice(),
                    p.storage_options.as_slice(),
                    p.statement_id.as_str(),
                )
            })
            .collect();
        writes::commit_tables(&tables)
    } else {
        let p = &pending[0];
        let settings = writes::WriteSettings {
            statement_id: Some(p.statement_id.clone()),
            ..Default::default()
        };
        writes::commit_shares(&p.location, &p.shares, &p.storage_options, &settings).map(|_| ())
    };
    let Err(e) = outcome else { return Ok(()) };
    let names: Vec<String> = pending.iter().map(|p| p.table.display()).collect();
    let names = names.join(", ");
    if retry || !nothing_committed(&e) {
        let message = format!(
            "{} (the transaction wrote {names}; the outcome is unknown: the commit may have landed. The transaction stays open with its writes: Commit again, which commits them once)",
            e.message
        );
        return Err(Failure::Unknown(Error { message, ..e }, pending));
    }
    if let Err(d) = discard(shared, pending) {
        return Err(Failure::Definite(d));
    }
    Err(Failure::Definite(Error {
        message: format!(
            "{} (the transaction wrote {names}: nothing was committed, the staged files were deleted)",
            e.message
        ),
        ..e
    }))
}

pub(crate) fn read_partition(shared: &Shared, bytes: &[u8]) -> Result<Reader> {
    let partition = Partition::decode(bytes)?;
    let info = shared.catalog.describe(&partition.table)?;
    crate::search::run_split(
        &partition.split,
        &info.location,
        &info.storage_options,
        &partition.spec,
        partition.search.as_ref(),
        partition.token.as_deref(),
    )
}
