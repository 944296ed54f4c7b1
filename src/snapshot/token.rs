//! Shipped snapshots: a coordinator ships its pinned manifest to workers so they need not read
//! it from storage, nor ask storage where it is.
//!
//! Body of the `crate::bytes` envelope (magic "LHSN", little endian): version u64 | uri: u32
//! len + bytes | manifest: u32 len + protobuf bytes (Lance's own manifest message) | index
//! section: u32 len + protobuf bytes (Lance's index metadata of that version; format 2 on) |
//! manifest location (format 3 on): naming scheme u8 (1 = V1, 2 = V2) | size: u8 present + u64 |
//! e-tag: u8 present + u32 len + bytes | identity: u8 present + u32 len + bytes | scope (format 4
//! on, split-scoped tokens only): u32 count + that many u64 fragment ids, sorted, which are
//! exactly the fragments of the cut-down manifest.
//! Storage options (credentials) are never part of it. Formats 1 (no index section) and 2 (no
//! manifest location) are read too. Full tokens are written at format 3, so a worker of an
//! earlier library still opens them; a split-scoped token is format 4, which such a worker
//! refuses (NOT_SUPPORTED) rather than mistaking it for the whole table.

use std::collections::HashMap;
use std::sync::Arc;

use lance::Dataset;
use lance_table::format::IndexMetadata;
use lance_table::io::commit::{CommitHandler, ManifestLocation, ManifestNamingScheme};

use super::{validate_uri, Snapshot};
use crate::bytes::{Reader, Writer};
use crate::error::{HostError, Result};
use crate::session;

const MAGIC: &[u8; 4] = b"LHSN";
/// Format of full snapshot tokens.
pub const SNAPSHOT_FORMAT: u8 = 3;
/// Format of split-scoped snapshot tokens.
pub const SCOPED_FORMAT: u8 = 4;
const KIND: &str = "snapshot token";
/// Longest uri, manifest, index section or e-tag a token may carry.
const MAX_LEN: usize = 1 << 30;

fn corrupt(what: &str) -> HostError {
    crate::bytes::corrupt(KIND, what)
}

impl Snapshot {
    /// The snapshot token: table URI, pinned version, the pinned manifest, its index metadata
    /// and where the manifest lives, checksummed.
    pub fn export_token(&self) -> Result<Vec<u8>> {
        self.token(None)
    }

    /// A split-scoped snapshot token (`crate::split::scope`): the token of `export_token` with
    /// the manifest cut down to fragments `ids` (sorted, distinct), whose size follows theirs,
    /// not the table's.
    pub fn export_fragments_token(&self, ids: &[u64]) -> Result<Vec<u8>> {
        if ids.is_empty() || ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(HostError::invalid("a split-scoped token needs fragment ids, sorted and distinct"));
        }
        self.token(Some(ids))
    }

    /// Token bytes; `only` = the sorted fragment ids of a split-scoped token.
    fn token(&self, only: Option<&[u64]>) -> Result<Vec<u8>> {
        use lance::index::DatasetIndexExt;
        use prost::Message;
        let pinned = self.dataset.manifest();
        let manifest = match only {
            None => lance_table::format::pb::Manifest::from(pinned),
            Some(ids) => {
                // Lance keeps a manifest's fragments sorted by id: each is found by bisection,
                // so a planner exporting one token per split never walks the whole list.
                let fragments = &pinned.fragments;
                let picked = ids
                    .iter()
                    .map(|id| match fragments.binary_search_by_key(id, |f| f.id) {
                        Ok(at) => Ok(fragments[at].clone()),
                        Err(_) => Err(HostError::invalid(format!("the split names fragment {id}, which its snapshot does not have"))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut cut = pinned.clone();
                cut.fragments = Arc::new(picked);
                lance_table::format::pb::Manifest::from(&cut)
            }
        };
        let manifest = manifest.encode_to_vec();
        let ds = self.dataset.clone();
        let indices = session::block_on(async move { ds.load_indices().await })?
            .map_err(|e| HostError::from_lance("cannot read the index metadata", e))?;
        let section = lance_table::format::pb::IndexSection {
            indices: indices.iter().map(lance_table::format::pb::IndexMetadata::from).collect(),
        }
        .encode_to_vec();
        let mut w = Writer::default();
        w.u64(self.version()).blob(self.uri().as_bytes()).blob(&manifest).blob(&section);
        encode_location(&mut w, self.dataset.manifest_location());
        let Some(ids) = only else {
            return Ok(crate::bytes::seal(MAGIC, SNAPSHOT_FORMAT, &w.0));
        };
        w.u32(ids.len() as u32);
        for id in ids {
            w.u64(*id);
        }
        Ok(crate::bytes::seal(MAGIC, SCOPED_FORMAT, &w.0))
    }
}

fn encode_location(w: &mut Writer, location: &ManifestLocation) {
    w.u8(match location.naming_scheme {
        ManifestNamingScheme::V1 => 1,
        ManifestNamingScheme::V2 => 2,
    });
    match location.size {
        Some(size) => w.u8(1).u64(size),
        None => w.u8(0),
    };
    for text in [&location.e_tag, &location.identity] {
        match text {
            Some(t) => w.u8(1).blob(t.as_bytes()),
            None => w.u8(0),
        };
    }
}

/// Where the token's manifest lives, as the coordinator resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ShippedManifest {
    naming_scheme: ManifestNamingScheme,
    size: Option<u64>,
    e_tag: Option<String>,
    identity: Option<String>,
}

fn decode_location(r: &mut Reader<'_>) -> Result<ShippedManifest> {
    let truncated = || corrupt("truncated");
    let naming_scheme = match r.u8().ok_or_else(truncated)? {
        1 => ManifestNamingScheme::V1,
        2 => ManifestNamingScheme::V2,
        n => return Err(corrupt(&format!("unknown manifest naming scheme {n}"))),
    };
    let size = match r.u8().ok_or_else(truncated)? {
        0 => None,
        1 => Some(r.u64().ok_or_else(truncated)?),
        n => return Err(corrupt(&format!("bad presence flag {n}"))),
    };
    let mut text = || -> Result<Option<String>> {
        match r.u8().ok_or_else(truncated)? {
            0 => Ok(None),
            1 => r.string().map(Some).ok_or_else(|| corrupt("truncated, or a manifest e-tag that is not UTF-8")),
            n => Err(corrupt(&format!("bad presence flag {n}"))),
        }
    };
    let e_tag = text()?;
    let identity = text()?;
    Ok(ShippedManifest {
        naming_scheme,
        size,
        e_tag,
        identity,
    })
}

/// A decoded token.
struct Token {
    version: u64,
    uri: String,
    manifest: Vec<u8>,
    section: Option<Vec<u8>>,
    location: Option<ShippedManifest>,
    /// The fragments of a split-scoped token (None: a full token).
    scope: Option<Vec<u64>>,
}

fn decode(bytes: &[u8]) -> Result<Token> {
    let (format, body) = crate::bytes::open(bytes, MAGIC, &[1, 2, SNAPSHOT_FORMAT, SCOPED_FORMAT], KIND)?;
    let truncated = || corrupt("truncated");
    let mut r = Reader::new(body, 0, MAX_LEN);
    let version = r.u64().ok_or_else(truncated)?;
    let uri = std::str::from_utf8(r.blob().ok_or_else(truncated)?)
        .map_err(|_| corrupt("table uri is not UTF-8"))?
        .to_string();
    let manifest = r.blob().ok_or_else(truncated)?.to_vec();
    let section = if format >= 2 {
        Some(r.blob().ok_or_else(truncated)?.to_vec())
    } else {
        None
    };
    let location = if format >= 3 { Some(decode_location(&mut r)?) } else { None };
    let scope = if format >= SCOPED_FORMAT {
        let n = r.u32().ok_or_else(truncated)? as usize;
        if n == 0 || n > r.remaining() / 8 {
            return Err(corrupt("bad fragment count of a split scope"));
        }
        let ids = (0..n).map(|_| r.u64().ok_or_else(truncated)).collect::<Result<Vec<_>>>()?;
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(corrupt("the fragments of a split scope are not sorted"));
        }
        Some(ids)
    } else {
        None
    };
    if r.remaining() != 0 {
        return Err(corrupt("trailing bytes"));
    }
    Ok(Token {
        version,
        uri,
        manifest,
        section,
        location,
        scope,
    })
}

/// Open the table of a snapshot token at its pinned version from the shipped manifest and its
/// shipped location, without reading the manifest from storage or asking where it is. Returns
/// the fragments a split-scoped token carries beside it (None for a full token): the handle may
/// read only those (`crate::split::scope`). Damaged bytes are CORRUPT.
pub fn open_token(bytes: &[u8], storage_options: HashMap<String, String>) -> Result<(Snapshot, Option<Vec<u64>>)> {
    crate::metrics::op(crate::metrics::Op::Open);
    crate::datacache::table_uses_cache(&storage_options)?;
    let Token {
        version,
        uri,
        manifest,
        section,
        location,
        scope,
    } = decode(bytes)?;
    validate_uri(&uri)?;
    let secrets = crate::redact::Secrets::from_storage_options(&storage_options);
    let lance_session = session::global()?.lance.clone();
    let opts = storage_options.clone();
    let what = format!("cannot open table '{uri}' at version {version} from its snapshot token");
    let dataset = session::block_on(async move {
        let builder = crate::snapshot::managed::builder(&uri)?.with_session(lance_session);
        let mut builder = crate::snapshot::credentials::with_options(builder, &uri, opts)
            .with_version(version)
            .with_serialized_manifest(&manifest)?;
        if let Some(location) = location {
            if let Some(handler) = known_location(&uri, version, location).await? {
                builder = builder.with_commit_handler(handler);
            }
        }
        builder.load().await
    })?
    .map_err(|e| secrets.scrub(HostError::from_lance(&what, e)))?;
    if dataset.version_id() != version {
        return Err(corrupt("the shipped manifest is not the token's version"));
    }
    if let Some(ids) = &scope {
        let mut carried: Vec<u64> = dataset.manifest().fragments.iter().map(|f| f.id).collect();
        carried.sort_unstable();
        if &carried != ids {
            return Err(corrupt("the manifest of a split-scoped token is not its scope's fragments"));
        }
    }
    if let Some(section) = section {
        seed_index_metadata(&dataset, &section).map_err(|e| corrupt(&e.message))?;
    }
    let snapshot = Snapshot {
        dataset: Arc::new(dataset),
        storage_options,
    };
    Ok((snapshot, scope))
}

/// The commit handler Lance would pick for the table, except that the token's version resolves
/// to the shipped location instead of a request to storage (a HEAD on object storage). Every
/// other call, writes included, goes to that handler unchanged. None where Lance's choice of
/// handler depends on storage options (`s3+ddb://`: its manifests live in DynamoDB): such a
/// table resolves its location as Lance does.
async fn known_location(uri: &str, version: u64, l: ShippedManifest) -> lance::Result<Option<Arc<dyn CommitHandler>>> {
    if uri.starts_with("s3+ddb:") {
        return Ok(None);
    }
    let inner = crate::snapshot::managed::commit_handler(uri, &Default::default()).await?;
    let known = crate::snapshot::pipeline::KnownLocation {
        version,
        naming_scheme: l.naming_scheme,
        size: l.size,
        e_tag: l.e_tag,
        identity: l.identity,
    };
    Ok(Some(Arc::new(crate::snapshot::pipeline::Pipeline::new(inner).with_known_location(known))))
}

/// Put the shipped index metadata where Lance looks for it (the index cache entry it would
/// otherwise fill by reading the manifest file's index section), so a worker's vector planning
/// reads no manifest either.
fn seed_index_metadata(dataset: &Dataset, section: &[u8]) -> Result<()> {
    use lance::session::index_caches::IndexMetadataKey;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn location(scheme: ManifestNamingScheme, size: Option<u64>, e_tag: Option<&str>, identity: Option<&str>) -> ShippedManifest {
        ShippedManifest {
            naming_scheme: scheme,
            size,
            e_tag: e_tag.map(str::to_string),
            identity: identity.map(str::to_string),
        }
    }

    fn body(format: u8, loc: Option<&ShippedManifest>) -> Vec<u8> {
        let mut w = Writer::default();
        w.u64(7).blob(b"s3://bucket/t.lance").blob(b"manifest-bytes");
        if format >= 2 {
            w.blob(b"section");
        }
        if let Some(l) = loc {
            let ml = ManifestLocation {
                version: 7,
                path: l.naming_scheme.manifest_path(&object_store::path::Path::from("t.lance"), 7),
                size: l.size,
                naming_scheme: l.naming_scheme,
                e_tag: l.e_tag.clone(),
                identity: l.identity.clone(),
            };
            encode_location(&mut w, &ml);
        }
        if format >= SCOPED_FORMAT {
            w.u32(2).u64(3).u64(8);
        }
        crate::bytes::seal(MAGIC, format, &w.0)
    }

    #[test]
    fn scoped_tokens_carry_their_fragments_and_refuse_bad_scopes() {
        use crate::error::LanceErrorCode::LANCE_ERR_CORRUPT;
        let loc = location(ManifestNamingScheme::V2, Some(5), None, None);
        assert_eq!(decode(&body(3, Some(&loc))).unwrap().scope, None);
        let good = body(SCOPED_FORMAT, Some(&loc));
        assert_eq!(decode(&good).unwrap().scope, Some(vec![3, 8]));
        let (_, b) = crate::bytes::open(&good, MAGIC, &[SCOPED_FORMAT], KIND).unwrap();
        let scope_at = b.len() - (4 + 16);
        for (ids, what) in [(vec![8u64, 3], "not sorted"), (vec![3, 3], "not sorted"), (vec![], "fragment count")] {
            let mut body = b[..scope_at].to_vec();
            let mut w = Writer::default();
            w.u32(ids.len() as u32);
            ids.iter().for_each(|i| {
                w.u64(*i);
            });
            body.extend_from_slice(&w.0);
            let err = decode(&crate::bytes::seal(MAGIC, SCOPED_FORMAT, &body)).err().unwrap();
            assert_eq!(err.code, LANCE_ERR_CORRUPT);
            assert!(err.message.contains(what), "{what}: {}", err.message);
        }
        // a count larger than the bytes that follow
        let mut body = b[..scope_at].to_vec();
        body.extend_from_slice(&1000u32.to_le_bytes());
        body.extend_from_slice(&3u64.to_le_bytes());
        assert_eq!(decode(&crate::bytes::seal(MAGIC, SCOPED_FORMAT, &body)).err().unwrap().code, LANCE_ERR_CORRUPT);
    }

    #[test]
    fn every_format_decodes_and_the_location_round_trips() {
        for loc in [
            location(ManifestNamingScheme::V2, Some(1234), Some("\"etag-1\""), None),
            location(ManifestNamingScheme::V1, None, None, Some("id-9")),
        ] {
            let t = decode(&body(3, Some(&loc))).unwrap();
            assert_eq!((t.version, t.uri.as_str(), t.manifest.as_slice()), (7, "s3://bucket/t.lance", &b"manifest-bytes"[..]));
            assert_eq!(t.section.as_deref(), Some(&b"section"[..]));
            assert_eq!(t.location, Some(loc));
        }
        let t = decode(&body(2, None)).unwrap();
        assert!(t.section.is_some() && t.location.is_none());
        let t = decode(&body(1, None)).unwrap();
        assert!(t.section.is_none() && t.location.is_none());
    }

    /// A handle opened from a token resolves its own version from the token and every other
    /// version through Lance's handler: checking out a later version of it reads that version.
    #[test]
    fn other_versions_of_a_token_handle_resolve_from_storage() {
        use arrow_array::{Int64Array, RecordBatch, RecordBatchIterator};
        use lance::dataset::{WriteMode, WriteParams};
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().join("t.lance").to_str().unwrap().to_string();
        for (rows, mode) in [(10i64, WriteMode::Create), (5, WriteMode::Append)] {
            let batch = RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from_iter_values(0..rows)) as _)]).unwrap();
            let schema = batch.schema();
            let params = WriteParams { mode, ..Default::default() };
            let u = uri.clone();
            session::block_on(async move {
                Dataset::write(RecordBatchIterator::new(vec![Ok(batch)], schema), &u, Some(params)).await
            })
            .unwrap()
            .unwrap();
        }
        let v1 = super::super::open(&uri, HashMap::new(), 1).unwrap();
        let (at, _) = open_token(&v1.export_token().unwrap(), HashMap::new()).unwrap();
        assert_eq!(at.version(), 1);
        let ds = at.dataset.clone();
        let (v2, rows, location) = session::block_on(async move {
            let v2 = ds.checkout_version(2).await?;
            let rows = v2.count_rows(None).await?;
            lance::Result::Ok((v2.version_id(), rows, v2.manifest_location().clone()))
        })
        .unwrap()
        .unwrap();
        assert_eq!((v2, rows), (2, 15));
        // Version 2's own manifest, not the token's location with another version's figures.
        let on_disk = std::fs::metadata(std::path::Path::new("/").join(location.path.as_ref())).unwrap().len();
        assert_eq!(location.size, Some(on_disk));
        assert_ne!(Some(on_disk), at.dataset.manifest_location().size, "the two manifests differ in size");
        assert_eq!(at.latest_version().unwrap(), 2);
    }

    #[test]
    fn damaged_locations_are_corrupt() {
        use crate::error::LanceErrorCode::LANCE_ERR_CORRUPT;
        let loc = location(ManifestNamingScheme::V2, Some(1), Some("e"), Some("i"));
        let good = body(3, Some(&loc));
        // The location starts after the envelope's 5 bytes and the fields before it.
        let at = 5 + 8 + (4 + 19) + (4 + 14) + (4 + 7);
        for (offset, value, what) in [(0, 9u8, "naming scheme 9"), (1, 5, "presence flag 5")] {
            let (_, b) = crate::bytes::open(&good, MAGIC, &[3], KIND).unwrap();
            let mut body = b.to_vec();
            body[at - 5 + offset] = value;
            let err = decode(&crate::bytes::seal(MAGIC, 3, &body)).err().unwrap();
            assert_eq!(err.code, LANCE_ERR_CORRUPT);
            assert!(err.message.contains(what), "{}", err.message);
        }
        let (_, b) = crate::bytes::open(&good, MAGIC, &[3], KIND).unwrap();
        for cut in 0..(b.len() - at + 5) {
            let short = crate::bytes::seal(MAGIC, 3, &b[..b.len() - 1 - cut]);
            assert_eq!(decode(&short).err().unwrap().code, LANCE_ERR_CORRUPT, "cut {cut}");
        }
        let mut long = b.to_vec();
        long.push(0);
        assert!(decode(&crate::bytes::seal(MAGIC, 3, &long)).err().unwrap().message.contains("trailing"));
    }
}
