//! Exactly once by statement id, across re-planning. A commit stores its statement id in the
//! version's transaction properties. Before it commits, it records the version its statement
//! was *first* planned at in a small marker object, `_lance_host/statements/<name>` under the
//! table's root (never a Lance file: Lance and pylance ignore that directory). A later commit of
//! the same statement id, even one planned again at a newer version after a coordinator
//! restart, looks for the statement in every version committed since that first plan, and
//! returns the version it finds instead of committing the rows again.
//!
//! The marker is written before the commit, so a coordinator killed at any point leaves either
//! no commit, or a commit and its marker. Its cost is one read and one write of a small object
//! per commit with a statement id. The guarantee is bounded by the table's history: once the
//! versions since the first plan are cleaned up, the lookup cannot read them and the commit is
//! refused (LANCE_ERR_FAILED_PRECONDITION) rather than guessed.

use lance::Dataset;
use lance_io::object_store::ObjectStore;
use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::STATEMENT_ID_KEY;
use crate::error::{HostError, Result};

/// The directory of the markers, under the table's root.
const DIR: &str = "_lance_host";

/// The marker's object name for statement `id`: the id's bytes in hex when short, else a
/// checksum and the length (a collision only widens the lookup: it compares the ids it finds).
fn marker(base: &Path, id: &str) -> Path {
    let name = if id.len() <= 64 {
        id.bytes().map(|b| format!("{b:02x}")).collect::<String>()
    } else {
        format!("{:08x}-{}", crc32fast::hash(id.as_bytes()), id.len())
    };
    base.clone().join(DIR).join("statements").join(name.as_str())
}

/// The version statement `id` was first planned at: the marker's, or `planned_at` when it has
/// none or a later one.
pub(crate) async fn first_planned(store: &ObjectStore, base: &Path, id: &str, planned_at: u64) -> lance::Result<u64> {
    // One GET: the object store's own call (Lance's reader retries a missing object, which
    // made an absent marker cost four requests).
    let bytes = match store.inner.get(&marker(base, id)).await {
        Ok(got) => got.bytes().await?,
        Err(object_store::Error::NotFound { .. }) => return Ok(planned_at),
        Err(e) => return Err(e.into()),
    };
    let recorded = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| t.lines().next())
        .and_then(|l| l.trim().parse::<u64>().ok());
    // An unreadable marker (not written by this library) gives no bound: look at all versions.
    Ok(recorded.map_or(0, |v| v.min(planned_at)))
}

/// Record that statement `id` was first planned at `first`.
pub(crate) async fn record(store: &ObjectStore, base: &Path, id: &str, first: u64) -> lance::Result<()> {
    store.put(&marker(base, id), format!("{first}\n{id}\n").as_bytes()).await.map(|_| ())
}

/// The version after `since` whose transaction carries statement `id`, if any, with that
/// version's transaction.
pub(crate) async fn find(
    latest: &Dataset,
    since: u64,
    id: &str,
) -> Result<Option<(u64, lance::dataset::transaction::Transaction)>> {
    let newest = latest.version().version;
    let mut version = newest;
    while version > since {
        let txn = match latest.read_transaction_by_version(version).await {
            Ok(t) => t,
            Err(lance::Error::NotFound { .. } | lance::Error::VersionNotFound { .. } | lance::Error::DatasetNotFound { .. }) => {
                return Err(HostError::precondition(format!(
                    "statement '{id}' was first planned at version {since}, and version {version} of the table is gone (cleaned up): \
                     whether the statement was committed there cannot be told, so it is not committed again"
                )));
            }
            Err(e) => return Err(HostError::from_lance(&format!("cannot look for statement '{id}' in version {version}"), e)),
        };
        if let Some(txn) = txn {
            let props = txn.transaction_properties.as_deref();
            if props.and_then(|p| p.get(STATEMENT_ID_KEY)).map(String::as_str) == Some(id) {
                return Ok(Some((version, txn)));
            }
        }
        version -= 1;
    }
    Ok(None)
}
