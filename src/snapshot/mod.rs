//! Pinned snapshots: a table opened at one version for the whole life of a handle.

use std::collections::HashMap;
use std::sync::Arc;

use lance::Dataset;

use crate::error::{HostError, Result};
use crate::session;

/// A table pinned at one version, opened through the global session.
#[derive(Clone)]
pub struct Snapshot {
    pub dataset: Arc<Dataset>,
    pub storage_options: HashMap<String, String>,
}

/// Facts about one fragment of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentInfo {
    pub id: u64,
    pub logical_rows: u64,
    pub physical_rows: u64,
    pub deleted_rows: u64,
    pub data_file_count: u32,
}

/// One entry of a table's version history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionInfo {
    pub version: u64,
    /// The commit's time, milliseconds since the epoch, rounded down.
    pub timestamp_ms: i64,
    /// The commit's time, microseconds since the epoch, rounded down.
    pub timestamp_us: i64,
}

pub(crate) fn validate_uri(uri: &str) -> Result<()> {
    if uri.is_empty() {
        return Err(HostError::invalid("table uri is empty"));
    }
    Ok(())
}

/// Open `uri` at `version` (0 = the latest version at open time).
pub fn open(uri: &str, storage_options: HashMap<String, String>, version: u64) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Open);
    validate_uri(uri)?;
    crate::datacache::table_uses_cache(&storage_options)?;
    let secrets = crate::redact::Secrets::from_storage_options(&storage_options);
    let lance_session = session::global()?.lance.clone();
    let dataset = session::block_on(async {
        let builder = crate::snapshot::managed::builder(uri)?.with_session(lance_session);
        let mut builder = credentials::with_options(builder, uri, storage_options.clone());
        if version != 0 {
            builder = builder.with_version(version);
        }
        builder.load().await
    })?
    .map_err(|e| {
        if version != 0 {
            HostError::from_lance(&format!("cannot open table '{uri}' at version {version}"), e)
        } else {
            HostError::from_lance(&format!("cannot open table '{uri}'"), e)
        }
    })
    .map_err(|e| secrets.scrub(e).with_local_paths(uri))?;
    Ok(Snapshot {
        dataset: Arc::new(dataset),
        storage_options,
    })
}

/// Open the latest version of `uri` committed at or before `timestamp_ms` (Unix epoch, ms):
/// the instant `timestamp_ms`.000, so a version committed within that millisecond is after it.
pub fn open_at_timestamp(
    uri: &str,
    storage_options: HashMap<String, String>,
    timestamp_ms: i64,
) -> Result<Snapshot> {
    open_at_timestamp_us(uri, storage_options, timestamp_ms.saturating_mul(1000))
}

/// Open the latest version of `uri` committed at or before `timestamp_us` (Unix epoch, µs):
/// `TIMESTAMP AS OF` in engines whose timestamps have microseconds. Versions are compared at
/// the microsecond (the commit time's nanoseconds cut off, as pylance shows them), never at
/// the millisecond, which returned a version committed after the requested time.
pub fn open_at_timestamp_us(
    uri: &str,
    storage_options: HashMap<String, String>,
    timestamp_us: i64,
) -> Result<Snapshot> {
    let latest = open(uri, storage_options.clone(), 0)?;
    let versions = latest.versions()?;
    let chosen = versions
        .iter()
        .filter(|v| v.timestamp_us <= timestamp_us)
        .max_by_key(|v| v.version)
        .ok_or_else(|| {
            HostError::not_found(format!(
                "table '{uri}' has no version committed at or before timestamp {timestamp_us} µs"
            ))
        })?;
    if chosen.version == latest.version() {
        return Ok(latest);
    }
    open(uri, storage_options, chosen.version)
}

impl Snapshot {
    pub fn version(&self) -> u64 {
        self.dataset.version_id()
    }

    pub fn uri(&self) -> &str {
        self.dataset.uri()
    }

    /// Whether the table lives on the local file system (a path or `file://`), which Lance reads
    /// directly rather than through an object store.
    pub fn is_local(&self) -> bool {
        let uri = self.uri();
        !uri.contains("://") || uri.starts_with("file://")
    }

    /// Storage format version string such as "2.1".
    pub fn storage_format(&self) -> String {
        self.dataset.manifest().data_storage_format.version.to_string()
    }

    pub fn arrow_schema(&self) -> arrow_schema::Schema {
        arrow_schema::Schema::from(self.dataset.schema())
    }

    /// Logical (visible) rows of the snapshot.
    pub fn count_rows(&self) -> Result<u64> {
        self.count_rows_on(self.dataset.clone())
    }

    /// `count_rows` through another view of the same dataset (e.g. one that counts its I/O).
    pub(crate) fn count_rows_on(&self, ds: Arc<Dataset>) -> Result<u64> {
        session::block_on(async move { ds.count_rows(None).await })?
            .map(|n| n as u64)
            .map_err(|e| HostError::from_lance("cannot count rows", e))
    }

    pub fn fragments(&self) -> Result<Vec<FragmentInfo>> {
        self.fragments_on(self.dataset.clone())
    }

    /// `fragments` through another view of the same dataset.
    pub(crate) fn fragments_on(&self, ds: Arc<Dataset>) -> Result<Vec<FragmentInfo>> {
        session::block_on(async move {
            let mut out = Vec::new();
            for frag in ds.get_fragments() {
                let physical = frag.physical_rows().await?;
                let deleted = frag.count_deletions().await?;
                out.push(FragmentInfo {
                    id: frag.id() as u64,
                    logical_rows: physical.saturating_sub(deleted) as u64,
                    physical_rows: physical as u64,
                    deleted_rows: deleted as u64,
                    data_file_count: frag.num_data_files() as u32,
                });
            }
            Ok::<_, lance::Error>(out)
        })?
        .map_err(|e| HostError::from_lance("cannot list fragments", e))
    }

    /// The latest version of the table in storage; the snapshot itself does not move.
    pub fn latest_version(&self) -> Result<u64> {
        let ds = self.dataset.clone();
        session::block_on(async move { ds.latest_version_id().await })?
            .map_err(|e| HostError::from_lance("cannot read the latest version", e))
    }

    pub fn versions(&self) -> Result<Vec<VersionInfo>> {
        let ds = self.dataset.clone();
        let versions = session::block_on(async move { ds.versions().await })?
            .map_err(|e| HostError::from_lance("cannot list versions", e))?;
        Ok(versions
            .into_iter()
            .map(|v| VersionInfo {
                version: v.version,
                timestamp_ms: v.timestamp.timestamp_millis(),
                timestamp_us: v.timestamp.timestamp_micros(),
            })
            .collect())
    }
}

pub mod credentials;
pub mod managed;
pub mod pipeline;
mod token;
pub use token::open_token;
