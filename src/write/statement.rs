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

/// Remove the records of statements that a cleanup has put out of reach: written before
/// `cutoff` (the cleanup's age bound) and first planned before `oldest_kept`, the oldest version
/// the cleanup left. A retry of such a statement could no longer be recognised anyway (the
/// versions to look in are gone); the docs bound exactly once by the cleanup's age. Returns how
/// many records were removed and their bytes.
pub(crate) async fn forget_before(
    store: &ObjectStore,
    base: &Path,
    cutoff: chrono::DateTime<chrono::Utc>,
    oldest_kept: u64,
) -> lance::Result<(u64, u64)> {
    use futures::TryStreamExt;
    let dir = base.clone().join(DIR).join("statements");
    let listed: Vec<object_store::ObjectMeta> = store.inner.list(Some(&dir)).try_collect().await?;
    let (mut count, mut bytes) = (0u64, 0u64);
    for meta in listed {
        if meta.last_modified >= cutoff {
            continue;
        }
        let body = match store.inner.get(&meta.location).await {
            Ok(got) => got.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => continue, // another cleanup took it
            Err(e) => return Err(e.into()),
        };
        let first = std::str::from_utf8(&body).ok().and_then(|t| t.lines().next()).and_then(|l| l.trim().parse::<u64>().ok());
        // a record this library did not write is left alone
        let Some(first) = first else { continue };
        if first >= oldest_kept {
            continue;
        }
        match store.inner.delete(&meta.location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                count += 1;
                bytes += meta.size;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((count, bytes))
}

/// Whether a version's transaction carries statement `id`.
fn holds(txn: &lance::dataset::transaction::Transaction, id: &str) -> bool {
    let props = txn.transaction_properties.as_deref();
    props.and_then(|p| p.get(STATEMENT_ID_KEY)).map(String::as_str) == Some(id)
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
        if let Some(txn) = txn.filter(|t| holds(t, id)) {
            return Ok(Some((version, txn)));
        }
        version -= 1;
    }
    Ok(None)
}

/// The statement-id check of the commit pipeline, before every attempt to write a version.
/// `find` looked for the statement up to the latest version when the commit began; another
/// coordinator committing the same statement at the same instant lands a version after that,
/// which Lance's commit would rebase over and commit the rows again. Lance picks each
/// attempt's version as the latest it loaded plus one, so every version below the attempt's
/// already exists: the guard reads the ones it has not read yet, and when one holds the
/// statement it stops the commit and remembers that version (the commit then reports it, as
/// when `find` found it). Two coordinators racing for one version are settled by the store's
/// atomic write: the loser's next attempt reads the winner's version. Costs nothing when no
/// version landed since `find` (the usual case).
pub(crate) struct Guard {
    latest: std::sync::Arc<Dataset>,
    id: String,
    /// Versions up to this one are known not to hold the statement (since its first plan).
    checked: std::sync::Mutex<u64>,
    found: std::sync::Mutex<Option<u64>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("id", &self.id).finish()
    }
}

impl Guard {
    pub(crate) fn new(latest: std::sync::Arc<Dataset>, id: &str) -> Self {
        let checked = latest.version().version;
        Guard {
            latest,
            id: id.to_string(),
            checked: std::sync::Mutex::new(checked),
            found: std::sync::Mutex::new(None),
        }
    }

    /// The version another commit of the statement landed in while this one was committing.
    pub(crate) fn found(&self) -> Option<u64> {
        *self.found.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first version in `(checked, before)` that holds the statement.
    async fn look(&self, before: u64) -> lance::Result<Option<u64>> {
        let from = *self.checked.lock().unwrap_or_else(|p| p.into_inner()) + 1;
        for version in from..before {
            let txn = self.latest.read_transaction_by_version(version).await?;
            if txn.is_some_and(|t| holds(&t, &self.id)) {
                return Ok(Some(version));
            }
            *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = version;
        }
        Ok(None)
    }
}

#[async_trait::async_trait]
impl crate::snapshot::pipeline::Check for Guard {
    async fn before_attempt(
        &self,
        target: u64,
        _base: &Path,
        _store: &ObjectStore,
        _inner: &dyn lance_table::io::commit::CommitHandler,
    ) -> std::result::Result<(), HostError> {
        match self.look(target).await {
            Ok(None) => Ok(()),
            Ok(Some(version)) => {
                *self.found.lock().unwrap_or_else(|p| p.into_inner()) = Some(version);
                Err(HostError::precondition(format!(
                    "statement '{}' was committed in version {version} by another commit while this one was committing",
                    self.id
                )))
            }
            Err(e) => Err(HostError::from_lance(&format!("cannot look for statement '{}' in the versions since this commit began", self.id), e)),
        }
    }
}
