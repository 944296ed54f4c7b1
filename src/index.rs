//! Index metadata of a pinned snapshot: logical indexes and their physical segments.

use std::collections::BTreeSet;

use lance::index::{DatasetIndexExt, DatasetIndexInternalExt};
use uuid::Uuid;

use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// Distance metrics (the C values of `LanceMetric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    L2,
    Cosine,
    Dot,
    Hamming,
}

impl Metric {
    pub fn name(&self) -> &'static str {
        match self {
            Metric::L2 => "L2",
            Metric::Cosine => "COSINE",
            Metric::Dot => "DOT",
            Metric::Hamming => "HAMMING",
        }
    }

    pub fn from_name(name: &str) -> Option<Metric> {
        match name.to_ascii_uppercase().as_str() {
            "L2" | "EUCLIDEAN" => Some(Metric::L2),
            "COSINE" => Some(Metric::Cosine),
            "DOT" => Some(Metric::Dot),
            "HAMMING" => Some(Metric::Hamming),
            _ => None,
        }
    }

    pub fn to_lance(self) -> lance_linalg::distance::MetricType {
        use lance_linalg::distance::MetricType as M;
        match self {
            Metric::L2 => M::L2,
            Metric::Cosine => M::Cosine,
            Metric::Dot => M::Dot,
            Metric::Hamming => M::Hamming,
        }
    }
}

/// One physical segment of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    pub uuid: Uuid,
    /// Fragment ids the segment covers that are visible in the snapshot, ascending.
    pub fragment_ids: Vec<u64>,
    /// Physical rows of those fragments (rows the segment holds for the snapshot).
    pub indexed_rows: u64,
    /// IVF partitions of a vector segment (what `nprobes` counts; probing all of them searches
    /// the whole segment). None for other indexes, and from [`list_indexes`], which does not
    /// open segments; [`describe_indexes`] fills it.
    pub num_partitions: Option<u64>,
}

/// One logical index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    pub name: String,
    pub column: String,
    /// e.g. "IVF_PQ", "IVF_HNSW_SQ", "BTREE".
    pub index_type: String,
    /// Metric of a vector index; None for other indexes.
    pub metric: Option<Metric>,
    pub segments: Vec<SegmentInfo>,
}

impl IndexInfo {
    pub fn is_vector(&self) -> bool {
        self.metric.is_some()
    }
}

fn metric_from_details(details: &str) -> Option<Metric> {
    let v: serde_json::Value = serde_json::from_str(details).ok()?;
    v.get("metric_type")?.as_str().and_then(Metric::from_name)
}

/// The logical indexes of the snapshot, sorted by name.
pub fn list_indexes(snapshot: &Snapshot) -> Result<Vec<IndexInfo>> {
    let ds = snapshot.dataset.clone();
    let descriptions = session::block_on(async move { ds.describe_indices(None).await })?
        .map_err(|e| HostError::from_lance("cannot read index metadata", e))?;
    let visible: std::collections::HashMap<u64, u64> = snapshot
        .dataset
        .fragments()
        .iter()
        .map(|f| (f.id, f.physical_rows.unwrap_or(0) as u64))
        .collect();
    let schema = snapshot.dataset.schema();
    let mut out = Vec::new();
    for d in descriptions {
        let column = d
            .field_ids()
            .first()
            .and_then(|id| schema.field_by_id(*id as i32))
            .map(|f| f.name.clone())
            .unwrap_or_default();
        let index_type = d.index_type().to_string();
        let metric = if index_type.starts_with("IVF") || d.type_url().contains("VectorIndex") {
            d.details().ok().and_then(|j| metric_from_details(&j))
        } else {
            None
        };
        let mut segments = Vec::new();
        for seg in d.segments() {
            let covered: BTreeSet<u64> = seg
                .fragment_bitmap
                .as_ref()
                .map(|b| b.iter().map(u64::from).collect())
                .unwrap_or_default();
            let fragment_ids: Vec<u64> = covered
                .into_iter()
                .filter(|id| visible.contains_key(id))
                .collect();
            let indexed_rows = fragment_ids.iter().map(|id| visible[id]).sum();
            segments.push(SegmentInfo {
                uuid: seg.uuid,
                fragment_ids,
                indexed_rows,
                num_partitions: None,
            });
        }
        segments.sort_by_key(|s| (s.fragment_ids.first().copied(), s.uuid));
        out.push(IndexInfo {
            name: d.name().to_string(),
            column,
            index_type,
            metric,
            segments,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Find a logical index by name (NOT_FOUND naming it otherwise).
pub fn find_index(snapshot: &Snapshot, name: &str) -> Result<IndexInfo> {
    list_indexes(snapshot)?
        .into_iter()
        .find(|i| i.name == name)
        .ok_or_else(|| {
            HostError::not_found(format!(
                "index '{name}' does not exist in table '{}' at version {}",
                snapshot.uri(),
                snapshot.version()
            ))
        })
}

/// No figures wanted from an index open.
struct Quiet;

impl lance_index::metrics::MetricsCollector for Quiet {
    fn record_parts_loaded(&self, _: usize) {}
    fn record_index_loads(&self, _: usize) {}
    fn record_comparisons(&self, _: usize) {}
}

/// [`list_indexes`] with what only an opened segment tells: the IVF partition count of every
/// vector segment. Opening a segment reads its IVF model (centroids, quantizer metadata) once;
/// the process-wide index cache keeps it for later opens and searches. No query runs.
pub fn describe_indexes(snapshot: &Snapshot) -> Result<Vec<IndexInfo>> {
    let mut infos = list_indexes(snapshot)?;
    for info in infos.iter_mut().filter(|i| i.is_vector()) {
        let ds = snapshot.dataset.clone();
        let column = info.column.clone();
        let uuids: Vec<Uuid> = info.segments.iter().map(|s| s.uuid).collect();
        let counts = session::block_on(async move {
            let mut counts = Vec::with_capacity(uuids.len());
            for uuid in uuids {
                let opened = ds.open_vector_index(&column, &uuid, &Quiet).await?;
                counts.push(opened.ivf_model().num_partitions() as u64);
            }
            Ok::<_, lance::Error>(counts)
        })?
        .map_err(|e| HostError::from_lance(&format!("cannot open index '{}'", info.name), e))?;
        for (segment, n) in info.segments.iter_mut().zip(counts) {
            segment.num_partitions = Some(n);
        }
    }
    Ok(infos)
}
