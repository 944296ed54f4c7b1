//! What a connection and its statements share: the catalog, the open transaction's staged
//! shares, the current namespace; and the option-value helpers both use.

use std::sync::{Arc, Mutex};

use adbc_core::error::{Error, Result, Status};
use adbc_core::options::OptionValue;

use crate::api::invalid;
use crate::handles::{Catalog, TableRef};

pub(crate) fn option_string(value: OptionValue, key: &str) -> Result<String> {
    match value {
        OptionValue::String(s) => Ok(s),
        OptionValue::Int(i) => Ok(i.to_string()),
        OptionValue::Double(d) => Ok(d.to_string()),
        _ => Err(invalid(format!("option `{key}` takes a string, not bytes"))),
    }
}

pub(crate) fn not_found_option(key: &str) -> Error {
    Error::with_message_and_status(
        format!("option `{key}` is not set or not known"),
        Status::NotFound,
    )
}

/// Why an ingest or a rollback is refused while the last commit's outcome is unknown.
pub const UNKNOWN_OUTCOME_PENDING: &str = "lance-host ADBC: the transaction's last Commit lost its answer, so its writes may have landed: Commit again to complete it (the writes commit once: a commit that landed is found by its statement ids and not repeated); neither a new ingest nor a Rollback can be taken until then";

/// A table's staged shares waiting for the connection's commit.
pub struct Pending {
    pub table: TableRef,
    pub location: String,
    pub storage_options: Vec<String>,
    pub shares: Vec<Vec<u8>>,
    /// The transaction created the table (empty) to stage into: a rollback drops it.
    pub created: bool,
    /// The statement id the table's commit carries, made with the entry: a commit tried again
    /// after a lost answer commits these shares once (the library finds the statement if it
    /// landed and commits nothing more).
    pub statement_id: String,
}

/// A statement id no other transaction takes: this process, the time, and a counter.
pub fn new_statement_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("adbc-txn/{}-{nanos}-{n}", std::process::id())
}

pub struct Txn {
    pub autocommit: bool,
    pub pending: Vec<Pending>,
    /// The last `Commit` failed without saying whether it landed (its answer was lost): the
    /// pending shares may be committed. Until a `Commit` succeeds, ingests and `Rollback` are
    /// refused, and closing the connection keeps the staged files and the tables.
    pub unknown_outcome: bool,
    /// The namespace of table names given without one.
    pub db_schema: Vec<String>,
}

pub struct Shared {
    pub catalog: Arc<Catalog>,
    pub catalog_name: String,
    pub txn: Mutex<Txn>,
}

impl Shared {
    pub fn txn(&self) -> std::sync::MutexGuard<'_, Txn> {
        self.txn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Resolve a table reference; a bare name lies in the connection's current db_schema.
    pub fn resolve(&self, table: TableRef) -> TableRef {
        if table.namespace.is_empty() {
            TableRef {
                namespace: self.txn().db_schema.clone(),
                name: table.name,
            }
        } else {
            table
        }
    }

    pub fn check_catalog(&self, catalog: Option<&str>) -> Result<bool> {
        Ok(catalog.is_none_or(|c| c == self.catalog_name))
    }
}
