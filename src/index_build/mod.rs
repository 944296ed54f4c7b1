//! Index builds in one process: vector indexes (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_FLAT,
//! IVF_HNSW_PQ, IVF_HNSW_SQ), scalar indexes (BTREE, BITMAP, LABEL_LIST) and INVERTED
//! full-text indexes, created (or replaced) as one new version planned at the handle's
//! version, and dropped. Distributed builds (train once, build segments on workers, commit
//! once) are in `distributed`. The read side (`index`, `plan`, `prewarm`) knows nothing of this.

pub mod distributed;
mod progress;

use std::sync::Arc;

use arrow_schema::DataType;
use lance::index::vector::VectorIndexParams;
use lance::index::DatasetIndexExt;
use lance_index::scalar::inverted::InvertedIndexParams;
use lance_index::scalar::{BuiltinIndexType, ScalarIndexParams};
use lance_index::vector::hnsw::builder::HnswBuildParams;
use lance_index::vector::ivf::IvfBuildParams;
use lance_index::vector::pq::PQBuildParams;
use lance_index::vector::sq::builder::SQBuildParams;
use lance_index::{IndexParams, IndexType};

use crate::error::{HostError, Result};
use crate::index::Metric;
use crate::session;
use crate::snapshot::Snapshot;

/// The vector index types Lance 14 builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorKind {
    IvfFlat,
    IvfPq,
    IvfSq,
    IvfHnswFlat,
    IvfHnswPq,
    IvfHnswSq,
}

impl VectorKind {
    pub fn name(self) -> &'static str {
        match self {
            VectorKind::IvfFlat => "IVF_FLAT",
            VectorKind::IvfPq => "IVF_PQ",
            VectorKind::IvfSq => "IVF_SQ",
            VectorKind::IvfHnswFlat => "IVF_HNSW_FLAT",
            VectorKind::IvfHnswPq => "IVF_HNSW_PQ",
            VectorKind::IvfHnswSq => "IVF_HNSW_SQ",
        }
    }
    fn has_pq(self) -> bool {
        matches!(self, VectorKind::IvfPq | VectorKind::IvfHnswPq)
    }
}

/// Settings of a vector index; None = Lance's default (given beside each field).
#[derive(Debug, Clone)]
pub struct VectorOptions {
    pub kind: VectorKind,
    /// Distance (L2).
    pub metric: Option<Metric>,
    /// IVF partitions (about sqrt(rows)).
    pub num_partitions: Option<usize>,
    /// PQ sub-vectors (16); must divide the dimension.
    pub num_sub_vectors: Option<usize>,
    /// Bits per PQ code or SQ value (8).
    pub num_bits: Option<u8>,
    /// Training rows per centroid (256).
    pub sample_rate: Option<usize>,
    /// k-means iterations (50).
    pub max_iterations: Option<usize>,
    /// HNSW neighbours per node (20).
    pub hnsw_m: Option<usize>,
    /// HNSW candidate list while building (150).
    pub hnsw_ef_construction: Option<usize>,
}

/// The scalar index types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    BTree,
    Bitmap,
    LabelList,
}

/// Settings of an INVERTED index; the defaults (`Default`) are Lance's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvertedOptions {
    /// "simple" (Lance's default), "whitespace", "raw", "ngram", ...
    pub base_tokenizer: String,
    /// Stemming and stop-word language ("English").
    pub language: String,
    /// Keep token positions (phrase queries need them; false).
    pub with_position: bool,
    /// Longer tokens are dropped (40; None = no limit).
    pub max_token_length: Option<usize>,
    pub lower_case: bool,
    pub stem: bool,
    pub remove_stop_words: bool,
    pub ascii_folding: bool,
}

impl Default for InvertedOptions {
    fn default() -> Self {
        Self {
            base_tokenizer: "simple".into(),
            language: "English".into(),
            with_position: false,
            max_token_length: Some(40),
            lower_case: true,
            stem: true,
            remove_stop_words: true,
            ascii_folding: true,
        }
    }
}

/// Which index to build on which column.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub column: &'a str,
    /// Index name (None = Lance's: "<column>_idx").
    pub name: Option<&'a str>,
    /// Replace an index of that name (else an existing name is LANCE_ERR_INVALID_ARGUMENT).
    pub replace: bool,
}

fn column_type(at: &Snapshot, column: &str) -> Result<DataType> {
    let schema = at.arrow_schema();
    match schema.field_with_name(column) {
        Ok(f) => Ok(f.data_type().clone()),
        Err(_) => {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            Err(HostError::invalid(format!(
                "column '{column}' is not a column of table '{}' (columns: {})",
                at.uri(),
                names.join(", ")
            )))
        }
    }
}

fn check_name(at: &Snapshot, target: &Target) -> Result<()> {
    let Some(name) = target.name else { return Ok(()) };
    if name.is_empty() {
        return Err(HostError::invalid("the index name is empty (pass NULL for Lance's default name)"));
    }
    if !target.replace {
        let indexes = crate::index::list_indexes(at)?;
        if indexes.iter().any(|i| i.name == name) {
            return Err(HostError::invalid(format!(
                "an index named '{name}' already exists on table '{}' (build with replace to rebuild it)",
                at.uri()
            )));
        }
    }
    Ok(())
}

fn build(at: &Snapshot, target: &Target, kind: IndexType, params: Box<dyn IndexParams>, what: String) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    check_name(at, target)?;
    let mut ds = (*at.dataset).clone();
    let column = target.column.to_string();
    let name = target.name.map(str::to_string);
    let replace = target.replace;
    let uri = at.uri().to_string();
    // Lance's stage reports (training, shuffling, writing) go to the call context bound to this
    // thread, as the distributed build's do (taken here: the build runs on a worker thread)
    let progress = progress::current();
    let ds = session::block_on(async move {
        {
            let columns = [column.as_str()];
            let mut builder = ds.create_index_builder(&columns, kind, params.as_ref()).replace(replace).progress(progress);
            if let Some(name) = name {
                builder = builder.name(name);
            }
            builder.await?;
        }
        Ok::<_, lance::Error>(ds)
    })?
    .map_err(|e| super::write::commit_error(&what, at.version(), e).with_local_paths(&uri))?;
    Ok(Snapshot {
        dataset: Arc::new(ds),
        storage_options: at.storage_options.clone(),
    })
}

/// Check a vector index request against the column and the table: returns the message prefix
/// of its errors, the vector dimension and the table's rows.
fn check_vector(at: &Snapshot, column: &str, o: &VectorOptions) -> Result<(String, i32, u64)> {
    let what = format!("cannot build {} index on column '{column}' of table '{}'", crate::error::with_article(o.kind.name()), at.uri());
    let dim = match column_type(at, column)? {
        DataType::FixedSizeList(item, dim) if item.data_type().is_floating() || item.data_type() == &DataType::UInt8 => dim,
        DataType::List(inner) | DataType::LargeList(inner) => match inner.data_type() {
            DataType::FixedSizeList(item, dim) if item.data_type().is_floating() => *dim,
            other => return Err(HostError::invalid(format!("{what}: its type is a list of {other}, not of vectors"))),
        },
        other => {
            return Err(HostError::invalid(format!(
                "{what}: its type is {other}; a vector index needs a fixed-size list of floats"
            )))
        }
    };
    let rows = at.count_rows()?;
    if let Some(p) = o.num_partitions {
        if p == 0 || p as u64 > rows {
            return Err(HostError::invalid(format!(
                "{what}: num_partitions {p} must be between 1 and the table's {rows} rows"
            )));
        }
    }
    if rows == 0 {
        return Err(HostError::invalid(format!("{what}: the table has no rows to train on")));
    }
    if o.kind.has_pq() {
        let m = o.num_sub_vectors.unwrap_or(16);
        if m == 0 || dim as usize % m != 0 {
            return Err(HostError::invalid(format!(
                "{what}: num_sub_vectors {m} must divide the dimension {dim}"
            )));
        }
    }
    if let Some(b) = o.num_bits {
        if o.kind.has_pq() && !matches!(b, 4 | 8) || !o.kind.has_pq() && !matches!(b, 1..=8) {
            return Err(HostError::invalid(format!("{what}: num_bits {b} is not supported (PQ: 4 or 8; SQ: 1..8)")));
        }
    }
    for (name, v) in [("sample_rate", o.sample_rate), ("max_iterations", o.max_iterations), ("hnsw_m", o.hnsw_m), ("hnsw_ef_construction", o.hnsw_ef_construction)] {
        if v == Some(0) {
            return Err(HostError::invalid(format!("{what}: {name} must be at least 1")));
        }
    }
    Ok((what, dim, rows))
}

fn ivf_params(o: &VectorOptions) -> IvfBuildParams {
    let mut ivf = IvfBuildParams::default();
    ivf.num_partitions = o.num_partitions;
    if let Some(n) = o.sample_rate {
        ivf.sample_rate = n;
    }
    if let Some(n) = o.max_iterations {
        ivf.max_iters = n;
    }
    ivf
}

fn pq_params(o: &VectorOptions) -> PQBuildParams {
    let mut pq = PQBuildParams::default();
    if let Some(m) = o.num_sub_vectors {
        pq.num_sub_vectors = m;
    }
    if let Some(b) = o.num_bits {
        pq.num_bits = b as usize;
    }
    if let Some(n) = o.sample_rate {
        pq.sample_rate = n;
    }
    if let Some(n) = o.max_iterations {
        pq.max_iters = n;
    }
    pq
}

/// Lance's parameters for `o`, with the IVF and PQ stages given (a distributed build passes
/// them with the trained centroids and codebook).
fn vector_index_params(o: &VectorOptions, ivf: IvfBuildParams, pq: PQBuildParams) -> VectorIndexParams {
    let metric = o.metric.unwrap_or(Metric::L2).to_lance();
    let mut sq = SQBuildParams::default();
    if let Some(b) = o.num_bits {
        sq.num_bits = b as u16;
    }
    if let Some(n) = o.sample_rate {
        sq.sample_rate = n;
    }
    let mut hnsw = HnswBuildParams::default();
    if let Some(m) = o.hnsw_m {
        hnsw.m = m;
    }
    if let Some(ef) = o.hnsw_ef_construction {
        hnsw.ef_construction = ef;
    }
    match o.kind {
        VectorKind::IvfFlat => VectorIndexParams::with_ivf_flat_params(metric, ivf),
        VectorKind::IvfPq => VectorIndexParams::with_ivf_pq_params(metric, ivf, pq),
        VectorKind::IvfSq => VectorIndexParams::with_ivf_sq_params(metric, ivf, sq),
        VectorKind::IvfHnswFlat => VectorIndexParams::ivf_hnsw(metric, ivf, hnsw),
        VectorKind::IvfHnswPq => VectorIndexParams::with_ivf_hnsw_pq_params(metric, ivf, hnsw, pq),
        VectorKind::IvfHnswSq => VectorIndexParams::with_ivf_hnsw_sq_params(metric, ivf, hnsw, sq),
    }
}

/// Build (or replace) a vector index on `target.column` (a fixed-size list of floats; a list of
/// them for multivectors) as one new version planned at `at`'s version.
pub fn create_vector_index(at: &Snapshot, target: &Target, o: &VectorOptions) -> Result<Snapshot> {
    let (what, _, _) = check_vector(at, target.column, o)?;
    let params = vector_index_params(o, ivf_params(o), pq_params(o));
    build(at, target, IndexType::Vector, Box::new(params), what)
}

impl ScalarKind {
    fn label(self) -> &'static str {
        match self {
            ScalarKind::BTree => "BTREE",
            ScalarKind::Bitmap => "BITMAP",
            ScalarKind::LabelList => "LABEL_LIST",
        }
    }
    fn params(self) -> ScalarIndexParams {
        ScalarIndexParams::for_builtin(match self {
            ScalarKind::BTree => BuiltinIndexType::BTree,
            ScalarKind::Bitmap => BuiltinIndexType::Bitmap,
            ScalarKind::LabelList => BuiltinIndexType::LabelList,
        })
    }
}

/// Check a scalar index request against the column's type; returns the message prefix.
fn check_scalar(at: &Snapshot, column: &str, kind: ScalarKind) -> Result<String> {
    let label = kind.label();
    let what = format!("cannot build a {label} index on column '{column}' of table '{}'", at.uri());
    let ty = column_type(at, column)?;
    let fits = match kind {
        ScalarKind::LabelList => matches!(ty, DataType::List(_) | DataType::LargeList(_)),
        _ => !matches!(
            ty,
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) | DataType::Struct(_) | DataType::Map(_, _)
        ),
    };
    if !fits {
        let need = if kind == ScalarKind::LabelList { "a list column" } else { "a column of single values (numbers, strings, dates, booleans)" };
        return Err(HostError::invalid(format!("{what}: its type is {ty}; {label} needs {need}")));
    }
    Ok(what)
}

/// Build (or replace) a scalar index on `target.column` as one new version.
pub fn create_scalar_index(at: &Snapshot, target: &Target, kind: ScalarKind) -> Result<Snapshot> {
    let what = check_scalar(at, target.column, kind)?;
    build(at, target, IndexType::Scalar, Box::new(kind.params()), what)
}

/// Check an INVERTED index request against the column's type; returns the message prefix and
/// Lance's parameters.
fn check_inverted(at: &Snapshot, column: &str, o: &InvertedOptions) -> Result<(String, InvertedIndexParams)> {
    let what = format!("cannot build an INVERTED index on column '{column}' of table '{}'", at.uri());
    let ty = column_type(at, column)?;
    if !matches!(ty, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
        let list_of_strings = matches!(&ty, DataType::List(f) | DataType::LargeList(f) if matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8));
        if !list_of_strings {
            return Err(HostError::invalid(format!("{what}: its type is {ty}; INVERTED needs a string column")));
        }
    }
    if o.max_token_length == Some(0) {
        return Err(HostError::invalid(format!("{what}: max_token_length must be at least 1 (or unlimited)")));
    }
    let params = InvertedIndexParams::default()
        .base_tokenizer(o.base_tokenizer.clone())
        .language(&o.language)
        .map_err(|e| HostError::invalid(format!("{what}: {e}")))?
        .with_position(o.with_position)
        .max_token_length(o.max_token_length)
        .lower_case(o.lower_case)
        .stem(o.stem)
        .remove_stop_words(o.remove_stop_words)
        .ascii_folding(o.ascii_folding);
    Ok((what, params))
}

/// Build (or replace) an INVERTED (full-text) index on `target.column` (a string column).
pub fn create_inverted_index(at: &Snapshot, target: &Target, o: &InvertedOptions) -> Result<Snapshot> {
    let (what, params) = check_inverted(at, target.column, o)?;
    build(at, target, IndexType::Inverted, Box::new(params), what)
}

/// Drop the index `name` (every segment) as one new version; its files go with cleanup.
pub fn drop_index(at: &Snapshot, name: &str) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    if name.is_empty() {
        return Err(HostError::invalid("the index name is empty"));
    }
    if !crate::index::list_indexes(at)?.iter().any(|i| i.name == name) {
        return Err(HostError::not_found(format!(
            "table '{}' at version {} has no index named '{name}'",
            at.uri(),
            at.version()
        )));
    }
    let mut ds = (*at.dataset).clone();
    let owned = name.to_string();
    let uri = at.uri().to_string();
    let ds = session::block_on(async move {
        ds.drop_index(&owned).await?;
        Ok::<_, lance::Error>(ds)
    })?
    .map_err(|e| super::write::commit_error(&format!("cannot drop index '{name}' of table '{uri}'"), at.version(), e))?;
    Ok(Snapshot {
        dataset: Arc::new(ds),
        storage_options: at.storage_options.clone(),
    })
}

/// Bring indexes up to date after appends, as one new version: the fragments no segment covers
/// are indexed as a new segment (`merge` 0), or the newest `merge` segments are merged with
/// them into one. `name` None = every index. The vector and full-text plans then have no flat
/// split for those fragments. Nothing to do commits nothing (the handle's version is returned).
pub fn optimize_indexes(at: &Snapshot, name: Option<&str>, merge: usize) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    if let Some(n) = name {
        if !crate::index::list_indexes(at)?.iter().any(|i| i.name == n) {
            return Err(HostError::not_found(format!(
                "table '{}' at version {} has no index named '{n}'",
                at.uri(),
                at.version()
            )));
        }
    }
    let mut options = if merge == 0 {
        lance_index::optimize::OptimizeOptions::append()
    } else {
        lance_index::optimize::OptimizeOptions::merge(merge)
    };
    options.index_names = name.map(|n| vec![n.to_string()]);
    let mut ds = (*at.dataset).clone();
    let uri = at.uri().to_string();
    let ds = session::block_on(async move {
        ds.optimize_indices(&options).await?;
        Ok::<_, lance::Error>(ds)
    })?
    .map_err(|e| super::write::commit_error(&format!("cannot optimize the indexes of table '{uri}'"), at.version(), e))?;
    Ok(Snapshot {
        dataset: Arc::new(ds),
        storage_options: at.storage_options.clone(),
    })
}
