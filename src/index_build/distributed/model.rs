//! The model of a distributed vector index build: what the coordinator trains once
//! (`train_vector`: IVF centroids and, for PQ kinds, the PQ codebook) and ships to every task
//! as bytes (magic "LHVM").

use std::io::Cursor;
use std::sync::Arc;

use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, RecordBatch};
use arrow_schema::{Field, Schema};
use lance::index::vector::ivf::build_ivf_model;
use lance::index::vector::pq::build_pq_model;
use lance_index::vector::ivf::builder::recommended_num_partitions;
use lance_index::IndexType;

use crate::index_build::{check_vector, ivf_params, pq_params, vector_index_params, VectorKind, VectorOptions};
use crate::bytes::{self, Reader, Writer};
use crate::error::{HostError, Result};
use crate::index::Metric;
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};
use super::{FORMAT, MAX_FIELD, MODEL_MAGIC};

/// A trained vector model: the settings it was trained with, the column's dimension, the IVF
/// centroids and (PQ kinds) the PQ codebook's values.
pub(super) struct VectorModel {
    pub(super) column: String,
    pub(super) dim: i32,
    pub(super) options: VectorOptions,
    pub(super) centroids: FixedSizeListArray,
    pub(super) codebook: Option<ArrayRef>,
}

/// No bytes at all is a missing argument, not damaged bytes.
pub(super) fn not_empty(b: &[u8], what: &str) -> Result<()> {
    if b.is_empty() {
        return Err(HostError::invalid(format!("{what} is empty (0 bytes)")));
    }
    Ok(())
}

fn kind_code(k: VectorKind) -> u8 {
    match k {
        VectorKind::IvfFlat => 0,
        VectorKind::IvfPq => 1,
        VectorKind::IvfSq => 2,
        VectorKind::IvfHnswFlat => 3,
        VectorKind::IvfHnswPq => 4,
        VectorKind::IvfHnswSq => 5,
    }
}

fn kind_of(c: u8) -> Option<VectorKind> {
    Some(match c {
        0 => VectorKind::IvfFlat,
        1 => VectorKind::IvfPq,
        2 => VectorKind::IvfSq,
        3 => VectorKind::IvfHnswFlat,
        4 => VectorKind::IvfHnswPq,
        5 => VectorKind::IvfHnswSq,
        _ => return None,
    })
}

fn metric_code(m: Metric) -> u8 {
    match m {
        Metric::L2 => 0,
        Metric::Cosine => 1,
        Metric::Dot => 2,
        Metric::Hamming => 3,
    }
}

fn metric_of(c: u8) -> Option<Metric> {
    Some(match c {
        0 => Metric::L2,
        1 => Metric::Cosine,
        2 => Metric::Dot,
        3 => Metric::Hamming,
        _ => return None,
    })
}

/// An optional count as u64 (0 = None; every count here is at least 1).
pub(super) fn opt(v: Option<usize>) -> u64 {
    v.unwrap_or(0) as u64
}

pub(super) fn unopt(v: u64) -> Option<usize> {
    (v != 0).then_some(v as usize)
}

fn array_to_ipc(a: ArrayRef) -> Result<Vec<u8>> {
    let schema = Arc::new(Schema::new(vec![Field::new("v", a.data_type().clone(), true)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![a]).map_err(|e| HostError::internal(format!("cannot encode a model array: {e}")))?;
    let mut out = Vec::new();
    let mut w = StreamWriter::try_new(&mut out, &schema).map_err(|e| HostError::internal(format!("cannot encode a model array: {e}")))?;
    w.write(&batch).and_then(|_| w.finish()).map_err(|e| HostError::internal(format!("cannot encode a model array: {e}")))?;
    drop(w);
    Ok(out)
}

fn ipc_to_array(b: &[u8], kind: &str) -> Result<ArrayRef> {
    let bad = |e: &dyn std::fmt::Display| bytes::corrupt(kind, &format!("bad array: {e}"));
    let mut r = StreamReader::try_new(Cursor::new(b), None).map_err(|e| bad(&e))?;
    let batch = r.next().ok_or_else(|| bytes::corrupt(kind, "missing array"))?.map_err(|e| bad(&e))?;
    if batch.num_columns() != 1 || r.next().is_some() {
        return Err(bytes::corrupt(kind, "bad array layout"));
    }
    Ok(batch.column(0).clone())
}

impl VectorModel {
    pub(super) fn encode(&self, uri: &str) -> Result<Vec<u8>> {
        let o = &self.options;
        let mut w = Writer::default();
        w.blob(uri.as_bytes()).blob(self.column.as_bytes()).u64(self.dim as u64);
        w.u8(kind_code(o.kind)).u8(metric_code(o.metric.unwrap_or(Metric::L2)));
        for v in [o.num_partitions, o.num_sub_vectors, o.num_bits.map(usize::from), o.sample_rate, o.max_iterations, o.hnsw_m, o.hnsw_ef_construction] {
            w.u64(opt(v));
        }
        w.blob(&array_to_ipc(Arc::new(self.centroids.clone()))?);
        match &self.codebook {
            Some(c) => w.u8(1).blob(&array_to_ipc(c.clone())?),
            None => w.u8(0),
        };
        Ok(bytes::seal(MODEL_MAGIC, FORMAT, &w.0))
    }

    /// Decode model bytes; returns the table they were trained on too.
    pub(super) fn decode(b: &[u8]) -> Result<(String, VectorModel)> {
        const KIND: &str = "vector-model";
        not_empty(b, "the vector model")?;
        let (_, body) = bytes::open(b, MODEL_MAGIC, &[FORMAT], KIND)?;
        let bad = |what: &str| bytes::corrupt(KIND, what);
        let mut r = Reader::new(body, 0, MAX_FIELD);
        let uri = r.string().ok_or_else(|| bad("bad table uri"))?;
        let column = r.string().ok_or_else(|| bad("bad column"))?;
        let dim = r.u64().filter(|d| (1..=i32::MAX as u64).contains(d)).ok_or_else(|| bad("bad dimension"))? as i32;
        let kind = r.u8().and_then(kind_of).ok_or_else(|| bad("bad index type"))?;
        let metric = r.u8().and_then(metric_of).ok_or_else(|| bad("bad metric"))?;
        let mut counts = [0u64; 7];
        for c in counts.iter_mut() {
            *c = r.u64().ok_or_else(|| bad("truncated"))?;
        }
        let centroids = ipc_to_array(r.blob().ok_or_else(|| bad("truncated"))?, KIND)?;
        let centroids = centroids
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .filter(|c| c.value_length() == dim)
            .cloned()
            .ok_or_else(|| bad("the centroids are not vectors of the model's dimension"))?;
        let codebook = match r.u8() {
            Some(0) => None,
            Some(1) => Some(ipc_to_array(r.blob().ok_or_else(|| bad("truncated"))?, KIND)?),
            _ => return Err(bad("truncated")),
        };
        if r.remaining() != 0 {
            return Err(bad("trailing bytes"));
        }
        let options = VectorOptions {
            kind,
            metric: Some(metric),
            num_partitions: unopt(counts[0]),
            num_sub_vectors: unopt(counts[1]),
            num_bits: unopt(counts[2]).map(|b| b.min(255) as u8),
            sample_rate: unopt(counts[3]),
            max_iterations: unopt(counts[4]),
            hnsw_m: unopt(counts[5]),
            hnsw_ef_construction: unopt(counts[6]),
        };
        if options.num_partitions != Some(centroids.len()) || kind.has_pq() != codebook.is_some() {
            return Err(bad("the centroids or the codebook do not match the model's settings"));
        }
        Ok((uri, VectorModel { column, dim, options, centroids, codebook }))
    }

    /// Lance's parameters that build a segment with this model's centroids and codebook.
    pub(super) fn lance_params(&self) -> lance::index::vector::VectorIndexParams {
        let o = &self.options;
        let mut ivf = ivf_params(o);
        ivf.centroids = Some(Arc::new(self.centroids.clone()));
        ivf.num_partitions = Some(self.centroids.len());
        let mut pq = pq_params(o);
        pq.codebook = self.codebook.clone();
        vector_index_params(o, ivf, pq)
    }
}

fn lance_index_type(k: VectorKind) -> IndexType {
    match k {
        VectorKind::IvfFlat => IndexType::IvfFlat,
        VectorKind::IvfPq => IndexType::IvfPq,
        VectorKind::IvfSq => IndexType::IvfSq,
        VectorKind::IvfHnswFlat => IndexType::IvfHnswFlat,
        VectorKind::IvfHnswPq => IndexType::IvfHnswPq,
        VectorKind::IvfHnswSq => IndexType::IvfHnswSq,
    }
}

/// Train the global part of a vector index on `column` of `at`'s version: the IVF centroids
/// (`num_partitions`, default Lance's: rows / the kind's target partition size) and, for the PQ
/// kinds, the PQ codebook (trained on the residuals, as Lance does). Returns the model bytes and
/// the reads the training made (object stores).
pub fn train_vector(at: &Snapshot, column: &str, o: &VectorOptions) -> Result<(Vec<u8>, IoStats)> {
    crate::metrics::op(crate::metrics::Op::Plan);
    let (what, dim, rows) = check_vector(at, column, o)?;
    if !matches!(at.arrow_schema().field_with_name(column).map(|f| f.data_type().clone()), Ok(arrow_schema::DataType::FixedSizeList(_, _))) {
        return Err(HostError::invalid(format!("{what}: a distributed build needs a fixed-size list column (multivectors build in one process)")));
    }
    let mut options = o.clone();
    let metric = o.metric.unwrap_or(Metric::L2);
    options.metric = Some(metric);
    let partitions = o
        .num_partitions
        .unwrap_or_else(|| recommended_num_partitions(rows as usize, lance_index_type(o.kind).target_partition_size()));
    options.num_partitions = Some(partitions);
    let mut ivf = ivf_params(&options);
    ivf.num_partitions = Some(partitions);
    let pq = pq_params(&options);
    let stats = OpStats::default();
    let ds = stats.dataset(at);
    let col = column.to_string();
    let progress = super::super::progress::current();
    let lance_metric = metric.to_lance();
    let has_pq = o.kind.has_pq();
    let (centroids, codebook) = session::block_on(async move {
        let ivf_model = build_ivf_model(&ds, &col, dim as usize, lance_metric, &ivf, None, progress).await?;
        let centroids = ivf_model
            .centroids
            .clone()
            .ok_or_else(|| lance::Error::index("IVF training returned no centroids".to_string()))?;
        let codebook = if has_pq {
            // PQ is trained on the residuals to the IVF centroids for L2 and cosine, as Lance's
            // one-process build does; on the vectors themselves for dot.
            let residual = matches!(metric, Metric::L2 | Metric::Cosine).then_some(&ivf_model);
            let pq = build_pq_model(&ds, &col, dim as usize, lance_metric, &pq, residual).await?;
            Some(pq.codebook.values().clone())
        } else {
            None
        };
        Ok::<_, lance::Error>((centroids, codebook))
    })?
    .map_err(|e| HostError::from_lance(&what, e))?;
    let model = VectorModel {
        column: column.to_string(),
        dim,
        options,
        centroids,
        codebook,
    }
    .encode(at.uri())?;
    Ok((model, stats.snapshot()))
}
