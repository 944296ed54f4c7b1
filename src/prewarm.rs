//! Loading a named index — all its segments, or the segments a worker will serve — into the
//! process-wide index cache, without running any query.
//!
//! For each selected segment:
//! 1. the segment is opened through Lance's index-opening API (its model, quantizer and file
//!    metadata enter the index cache) and Lance's own `prewarm` loads its content (for IVF
//!    indexes every partition, read in Lance's bounded byte windows; for INVERTED indexes every
//!    posting list, with positions when the index stores them, for phrase queries);
//! 2. for vector indexes, the one entry a search would still build — the segment's ownership
//!    mask at the snapshot's version: which rows of its fragments it may return, deletions
//!    applied, built from the manifest and deletion files, never from index files — is built
//!    with Lance's own function and stored under Lance's own cache key.
//!
//! A later search of a warmed segment at the same version, through any handle of the process,
//! then finds every index-cache entry it looks up (tested) and reads no index file.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::{try_join_all, OptionFuture};
use lance::index::prefilter::DatasetPreFilter;
use lance::index::{DatasetIndexExt, DatasetIndexInternalExt};
use lance::session::index_caches::SegmentOwnershipMaskKey;
use lance::Dataset;
use lance_index::metrics::MetricsCollector;
use lance_index::scalar::inverted::InvertedIndex;
use lance_index::traits::FtsPrewarmOptions;
use lance_table::format::IndexMetadata;
use uuid::Uuid;

use crate::error::{HostError, Result};
use crate::index::{self, IndexInfo};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};

/// Warm every segment of index `name`; returns the I/O the prewarm caused.
pub fn prewarm_index(snapshot: &Snapshot, name: &str) -> Result<IoStats> {
    prewarm_index_inner(snapshot, name).map_err(|e| e.with_local_paths(snapshot.uri()))
}

fn prewarm_index_inner(snapshot: &Snapshot, name: &str) -> Result<IoStats> {
    let info = named_index(snapshot, name)?;
    let all: Vec<Uuid> = info.segments.iter().map(|s| s.uuid).collect();
    prewarm(snapshot, &info, &all)
}

/// Warm only the given segments of index `name` (the UUIDs of the INDEX_SEGMENT splits a worker
/// serves). An empty list is INVALID_ARGUMENT; a UUID that is not a segment of the index at the
/// snapshot's version is NOT_FOUND naming it. Repeated UUIDs are warmed once.
pub fn prewarm_index_segments(snapshot: &Snapshot, name: &str, segments: &[Uuid]) -> Result<IoStats> {
    prewarm_index_segments_inner(snapshot, name, segments).map_err(|e| e.with_local_paths(snapshot.uri()))
}

fn prewarm_index_segments_inner(snapshot: &Snapshot, name: &str, segments: &[Uuid]) -> Result<IoStats> {
    let info = named_index(snapshot, name)?;
    if segments.is_empty() {
        return Err(HostError::invalid("the list of segments to prewarm is empty"));
    }
    let mut selected: Vec<Uuid> = Vec::with_capacity(segments.len());
    for uuid in segments {
        if !info.segments.iter().any(|s| s.uuid == *uuid) {
            return Err(HostError::not_found(format!(
                "index '{name}' of table '{}' has no segment {uuid} at version {}",
                snapshot.uri(),
                snapshot.version()
            )));
        }
        if !selected.contains(uuid) {
            selected.push(*uuid);
        }
    }
    prewarm(snapshot, &info, &selected)
}

fn named_index(snapshot: &Snapshot, name: &str) -> Result<IndexInfo> {
    if name.is_empty() {
        return Err(HostError::invalid("index name is empty"));
    }
    index::find_index(snapshot, name)
}

/// Counts the index structures a segment open had to load from storage (cache misses).
#[derive(Default)]
struct LoadCounter(AtomicUsize);

impl MetricsCollector for LoadCounter {
    fn record_parts_loaded(&self, num_parts: usize) {
        self.0.fetch_add(num_parts, Ordering::Relaxed);
    }
    fn record_index_loads(&self, num_indexes: usize) {
        self.0.fetch_add(num_indexes, Ordering::Relaxed);
    }
    fn record_comparisons(&self, _num_comparisons: usize) {}
}

fn prewarm(snapshot: &Snapshot, info: &IndexInfo, selected: &[Uuid]) -> Result<IoStats> {
    crate::metrics::op(crate::metrics::Op::Prewarm);
    let what = format!("cannot prewarm index '{}'", info.name);
    let lance_err = |e| HostError::from_lance(&what, e);
    let name = info.name.clone();
    let ds = snapshot.dataset.clone();
    let metas: Vec<IndexMetadata> = session::block_on(async move { ds.load_indices_by_name(&name).await })?
        .map_err(lance_err)?
        .into_iter()
        .filter(|m| selected.contains(&m.uuid))
        .collect();
    let is_vector = info.is_vector();
    let column = info.column.clone();
    let cache = session::global()?.index_cache.clone();
    // One counter per segment, so a segment that read index files (or had to be opened from
    // storage) counts as a miss and one served from the cache as a hit.
    let per_segment: Vec<(OpStats, Arc<Dataset>, IndexMetadata)> = metas
        .into_iter()
        .map(|m| {
            let stats = OpStats::default();
            let ds = stats.dataset(snapshot);
            (stats, ds, m)
        })
        .collect();
    let jobs: Vec<_> = per_segment
        .iter()
        .map(|(_, ds, meta)| {
            let (ds, meta, column, cache) = (ds.clone(), meta.clone(), column.clone(), cache.clone());
            async move {
                let loads = LoadCounter::default();
                let opened = ds.open_generic_index(&column, &meta.uuid, &loads).await?;
                match opened.as_any().downcast_ref::<InvertedIndex>() {
                    // An INVERTED index with positions also warms them: phrase queries read them.
                    Some(inverted) => {
                        let with_position = inverted.params().has_positions();
                        inverted
                            .prewarm_with_options(&FtsPrewarmOptions::new().with_position(with_position))
                            .await?
                    }
                    None => opened.prewarm().await?,
                }
                if is_vector {
                    warm_ownership_mask(&cache, &ds, &meta).await?;
                }
                Ok::<_, lance::Error>(loads.0.load(Ordering::Relaxed))
            }
        })
        .collect();
    let loads = session::block_on(try_join_all(jobs))?.map_err(lance_err)?;
    let mut total = IoStats::default();
    for ((stats, _, _), loaded) in per_segment.iter().zip(loads) {
        let s = stats.snapshot();
        total.read_requests += s.read_requests;
        total.read_bytes += s.read_bytes;
        total.index_read_requests += s.index_read_requests;
        total.index_read_bytes += s.index_read_bytes;
        if loaded > 0 || s.index_read_requests > 0 {
            total.index_cache_misses += 1;
        } else {
            total.index_cache_hits += 1;
        }
    }
    Ok(total)
}

/// Build the segment's ownership mask at the dataset's version with Lance's function and store
/// it under the key Lance's vector search looks it up by (same dataset namespace, same fields).
/// Nothing is built when the entry is already cached.
async fn warm_ownership_mask(
    cache: &lance_core::cache::LanceCache,
    ds: &Arc<Dataset>,
    meta: &IndexMetadata,
) -> lance::Result<()> {
    let Some(owned) = meta.fragment_bitmap.clone() else {
        return Ok(());
    };
    let store = ds.object_store(None).await?;
    let key = SegmentOwnershipMaskKey {
        uuid: &meta.uuid,
        version: ds.manifest().version,
        store_identity: &store.store_prefix,
        e_tag: ds.manifest_location().e_tag.as_deref(),
    };
    let loader = ds.clone();
    cache
        .with_key_prefix(ds.uri())
        .get_or_insert_with_key(key, || async move {
            OptionFuture::from(DatasetPreFilter::create_restricted_deletion_mask(loader, owned))
                .await
                .transpose()
        })
        .await?;
    Ok(())
}
