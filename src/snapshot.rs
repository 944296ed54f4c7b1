//! Pinned snapshots: a table opened at one version for the whole life of a handle.

use std::collections::HashMap;
use std::sync::Arc;

use lance::dataset::builder::DatasetBuilder;
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
    pub timestamp_ms: i64,
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
        let mut builder = DatasetBuilder::from_uri(uri)
            .with_session(lance_session)
            .with_storage_options(storage_options.clone());
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

/// Open the latest version of `uri` committed at or before `timestamp_ms` (Unix epoch, ms).
pub fn open_at_timestamp(
    uri: &str,
    storage_options: HashMap<String, String>,
    timestamp_ms: i64,
) -> Result<Snapshot> {
    let latest = open(uri, storage_options.clone(), 0)?;
    let versions = latest.versions()?;
    let chosen = versions
        .iter()
        .filter(|v| v.timestamp_ms <= timestamp_ms)
        .max_by_key(|v| v.version)
        .ok_or_else(|| {
            HostError::not_found(format!(
                "table '{uri}' has no version committed at or before timestamp {timestamp_ms} ms"
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
            })
            .collect())
    }
}

// ---- Shipped snapshots ---------------------------------------------------------------------
//
// A coordinator ships its pinned manifest to workers so they need not read it from storage.
// Layout (little endian): magic "LHSN" | format u8 (=2) | version u64 | uri: u32 len + bytes |
// manifest: u32 len + protobuf bytes (Lance's own manifest message) | index section: u32 len +
// protobuf bytes (Lance's index metadata of that version; format 2 only) | crc32 of all before.
// Storage options (credentials) are never part of it. Format 1 (no index section) is read too.

const SNAPSHOT_MAGIC: &[u8; 4] = b"LHSN";
/// Current snapshot token format.
pub const SNAPSHOT_FORMAT: u8 = 2;

impl Snapshot {
    /// The snapshot token: table URI, pinned version and the pinned manifest, checksummed.
    pub fn export_token(&self) -> Result<Vec<u8>> {
        use lance::index::DatasetIndexExt;
        use prost::Message;
        let manifest = lance_table::format::pb::Manifest::from(self.dataset.manifest()).encode_to_vec();
        let ds = self.dataset.clone();
        let indices = session::block_on(async move { ds.load_indices().await })?
            .map_err(|e| HostError::from_lance("cannot read the index metadata", e))?;
        let section = lance_table::format::pb::IndexSection {
            indices: indices.iter().map(lance_table::format::pb::IndexMetadata::from).collect(),
        }
        .encode_to_vec();
        let uri = self.uri().as_bytes();
        let mut b = Vec::with_capacity(32 + uri.len() + manifest.len());
        b.extend_from_slice(SNAPSHOT_MAGIC);
        b.push(SNAPSHOT_FORMAT);
        b.extend_from_slice(&self.version().to_le_bytes());
        b.extend_from_slice(&(uri.len() as u32).to_le_bytes());
        b.extend_from_slice(uri);
        b.extend_from_slice(&(manifest.len() as u32).to_le_bytes());
        b.extend_from_slice(&manifest);
        b.extend_from_slice(&(section.len() as u32).to_le_bytes());
        b.extend_from_slice(&section);
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        Ok(b)
    }
}

/// Open the table of a snapshot token at its pinned version from the shipped manifest,
/// without reading the manifest from storage. Damaged bytes are CORRUPT.
pub fn open_token(bytes: &[u8], storage_options: HashMap<String, String>) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Open);
    use crate::error::LanceErrorCode;
    let corrupt = |what: &str| {
        HostError::new(LanceErrorCode::LANCE_ERR_CORRUPT, format!("invalid snapshot token: {what}"))
    };
    crate::datacache::table_uses_cache(&storage_options)?;
    if bytes.len() < 5 || &bytes[..4] != SNAPSHOT_MAGIC {
        return Err(corrupt("not a lance-host snapshot token (bad magic)"));
    }
    let format = bytes[4];
    if format != 1 && format != SNAPSHOT_FORMAT {
        return Err(HostError::not_supported(format!(
            "snapshot token format {} is not supported (this library reads format {SNAPSHOT_FORMAT})",
            bytes[4]
        )));
    }
    if bytes.len() < 5 + 8 + 4 + 4 + 4 {
        return Err(corrupt("truncated"));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(tail.try_into().expect("4 bytes")) {
        return Err(corrupt("checksum mismatch (truncated or corrupted)"));
    }
    let mut pos = 5;
    let mut take = |n: usize| -> Result<&[u8]> {
        let out = body.get(pos..pos + n).ok_or_else(|| corrupt("truncated"))?;
        pos += n;
        Ok(out)
    };
    let version = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
    let uri_len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    let uri = std::str::from_utf8(take(uri_len)?).map_err(|_| corrupt("table uri is not UTF-8"))?.to_string();
    let manifest_len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    let manifest = take(manifest_len)?.to_vec();
    let section = if format >= 2 {
        let len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        Some(take(len)?.to_vec())
    } else {
        None
    };
    if pos != body.len() {
        return Err(corrupt("trailing bytes"));
    }
    validate_uri(&uri)?;
    let secrets = crate::redact::Secrets::from_storage_options(&storage_options);
    let lance_session = session::global()?.lance.clone();
    let opts = storage_options.clone();
    let what = format!("cannot open table '{uri}' at version {version} from its snapshot token");
    let dataset = session::block_on(async move {
        DatasetBuilder::from_uri(&uri)
            .with_session(lance_session)
            .with_storage_options(opts)
            .with_version(version)
            .with_serialized_manifest(&manifest)?
            .load()
            .await
    })?
    .map_err(|e| secrets.scrub(HostError::from_lance(&what, e)))?;
    if dataset.version_id() != version {
        return Err(corrupt("the shipped manifest is not the token's version"));
    }
    if let Some(section) = section {
        seed_index_metadata(&dataset, &section).map_err(|e| corrupt(&e.message))?;
    }
    Ok(Snapshot {
        dataset: Arc::new(dataset),
        storage_options,
    })
}

/// Put the shipped index metadata where Lance looks for it (the index cache entry it would
/// otherwise fill by reading the manifest file's index section), so a worker's vector planning
/// reads no manifest either.
fn seed_index_metadata(dataset: &Dataset, section: &[u8]) -> Result<()> {
    use lance::session::index_caches::IndexMetadataKey;
    use lance_table::format::IndexMetadata;
    use prost::Message;
    let decoded = lance_table::format::pb::IndexSection::decode(section)
        .map_err(|e| HostError::invalid(format!("bad index section: {e}")))?;
    let indices: Vec<IndexMetadata> = decoded
        .indices
        .into_iter()
        .map(IndexMetadata::try_from)
        .collect::<lance::Result<_>>()
        .map_err(|e| HostError::invalid(format!("bad index metadata: {e}")))?;
    let cache = session::global()?.index_cache.with_key_prefix(dataset.uri());
    let ds = dataset.clone();
    session::block_on(async move {
        let store = ds.object_store(None).await?;
        let key = IndexMetadataKey {
            version: ds.manifest().version,
            store_identity: &store.store_prefix,
            e_tag: ds.manifest_location().e_tag.as_deref(),
        };
        cache.insert_with_key(&key, Arc::new(indices)).await;
        Ok::<_, lance::Error>(())
    })?
    .map_err(|e| HostError::from_lance("cannot cache the shipped index metadata", e))
}
