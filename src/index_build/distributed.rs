//! Distributed index builds: the protocol of a distributed write, for an index.
//!
//! 1. The coordinator trains what must be global (`train_vector`: IVF centroids and, for PQ
//!    indexes, the PQ codebook) and gets *model bytes* (magic "LHVM"). Full-text and scalar
//!    indexes need no training.
//! 2. It plans the build (`plan`): the table's fragments at the handle's version, cut into build
//!    splits balanced by rows; each split is a *task* (magic "LHIT") carrying the table, the
//!    version, the index's name and column, what to build (the model, the full-text settings or
//!    the scalar kind) and its fragment ids.
//! 3. Each worker builds one index segment from its task (`execute_task`), writing the segment's
//!    files under the table's `_indices/` and committing nothing, and ships back *segment bytes*
//!    (magic "LHIR": the segment's Lance metadata).
//! 4. The coordinator commits every segment as one index in one version (`commit`), optionally
//!    merging them into one segment first.
//!
//! A worker that dies leaves only unreferenced files under `_indices/`, which a cleanup with
//! `delete_unverified` removes. SQ bounds are not part of the model: Lance 14 trains them per
//! segment from the segment's rows (its distributed builder takes no precomputed bounds).
//!
//! All four formats use the [`crate::bytes`] envelope, format 1.

use std::collections::HashSet;
use std::sync::Arc;

use lance::index::DatasetIndexExt;
use lance::Dataset;
use lance_index::{IndexParams, IndexType};
use lance_table::format::{pb, IndexMetadata};
use prost::Message;
use roaring::RoaringBitmap;

use super::{check_inverted, check_scalar, check_vector};
use super::{InvertedOptions, ScalarKind, Target, VectorOptions};
use crate::bytes::{self, Reader, Writer};
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};

mod model;

pub use model::train_vector;
use model::{not_empty, opt, unopt, VectorModel};

const MODEL_MAGIC: &[u8; 4] = b"LHVM";
const TASK_MAGIC: &[u8; 4] = b"LHIT";
const RESULT_MAGIC: &[u8; 4] = b"LHIR";
const FORMAT: u8 = 1;
/// Longest field inside the bytes (a model's centroids are the largest: 4096 × 4096 × 8 fits).
const MAX_FIELD: usize = 1 << 30;

// ---------------------------------------------------------------------------------------------
// Plans and tasks

/// What a distributed build builds.
#[derive(Debug, Clone)]
pub enum Spec<'a> {
    /// A vector index from model bytes (`train_vector`).
    Vector(&'a [u8]),
    Inverted(InvertedOptions),
    Scalar(ScalarKind),
}

/// How a build is cut.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanOptions {
    /// Build splits to cut the fragments into, balanced by rows (0 = one per fragment).
    pub num_splits: usize,
    /// Index only the fragments no segment of the index covers yet (after appends); an index
    /// of that name is kept and grows by the new segments.
    pub unindexed_only: bool,
}

const FAMILY_VECTOR: u8 = 0;
const FAMILY_INVERTED: u8 = 1;
const FAMILY_SCALAR: u8 = 2;

/// What a task and its segment both carry: the table, the plan, the planned version, the index.
#[derive(Debug, Clone)]
struct Header {
    uri: String,
    plan_id: u64,
    version: u64,
    name: String,
    column: String,
}

impl Header {
    fn write(&self, w: &mut Writer) {
        w.blob(self.uri.as_bytes()).u64(self.plan_id).u64(self.version);
        w.blob(self.name.as_bytes()).blob(self.column.as_bytes());
    }

    fn read(r: &mut Reader) -> Option<Header> {
        Some(Header {
            uri: r.string()?,
            plan_id: r.u64()?,
            version: r.u64()?,
            name: r.string()?,
            column: r.string()?,
        })
    }
}

struct Task {
    h: Header,
    family: u8,
    spec: Vec<u8>,
    fragments: Vec<u32>,
}

impl Task {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        self.h.write(&mut w);
        w.u8(self.family).blob(&self.spec);
        w.u64(self.fragments.len() as u64);
        for f in &self.fragments {
            w.u64(*f as u64);
        }
        bytes::seal(TASK_MAGIC, FORMAT, &w.0)
    }

    fn decode(b: &[u8]) -> Result<Task> {
        const KIND: &str = "index-build-task";
        not_empty(b, "the index build task")?;
        let (_, body) = bytes::open(b, TASK_MAGIC, &[FORMAT], KIND)?;
        let bad = || bytes::corrupt(KIND, "truncated or malformed");
        let mut r = Reader::new(body, 0, MAX_FIELD);
        let h = Header::read(&mut r).ok_or_else(bad)?;
        let family = r.u8().filter(|f| *f <= FAMILY_SCALAR).ok_or_else(bad)?;
        let spec = r.blob().ok_or_else(bad)?.to_vec();
        let n = r.u64().ok_or_else(bad)?;
        if n == 0 || n > (r.remaining() / 8) as u64 {
            return Err(bad());
        }
        let fragments = (0..n)
            .map(|_| r.u64().filter(|f| *f <= u32::MAX as u64).map(|f| f as u32))
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(bad)?;
        if r.remaining() != 0 {
            return Err(bytes::corrupt(KIND, "trailing bytes"));
        }
        Ok(Task { h, family, spec, fragments })
    }
}

fn encode_inverted(o: &InvertedOptions) -> Vec<u8> {
    let mut w = Writer::default();
    w.blob(o.base_tokenizer.as_bytes()).blob(o.language.as_bytes());
    w.u8(o.with_position as u8).u64(opt(o.max_token_length));
    w.u8(o.lower_case as u8).u8(o.stem as u8).u8(o.remove_stop_words as u8).u8(o.ascii_folding as u8);
    w.0
}

fn decode_inverted(b: &[u8]) -> Option<InvertedOptions> {
    let mut r = Reader::new(b, 0, MAX_FIELD);
    let base_tokenizer = r.string()?;
    let language = r.string()?;
    let with_position = r.u8()? != 0;
    let max_token_length = unopt(r.u64()?);
    let mut flags = [false; 4];
    for f in flags.iter_mut() {
        *f = r.u8()? != 0;
    }
    (r.remaining() == 0).then_some(InvertedOptions {
        base_tokenizer,
        language,
        with_position,
        max_token_length,
        lower_case: flags[0],
        stem: flags[1],
        remove_stop_words: flags[2],
        ascii_folding: flags[3],
    })
}

fn scalar_code(k: ScalarKind) -> u8 {
    match k {
        ScalarKind::BTree => 0,
        ScalarKind::Bitmap => 1,
        ScalarKind::LabelList => 2,
    }
}

fn scalar_of(c: u8) -> Option<ScalarKind> {
    Some(match c {
        0 => ScalarKind::BTree,
        1 => ScalarKind::Bitmap,
        2 => ScalarKind::LabelList,
        _ => return None,
    })
}

/// Cut `fragments` (id, rows), in table order, into at most `n` runs of about equal rows
/// (`n` 0 = one per fragment). No run is empty.
fn cut(fragments: &[(u32, u64)], n: usize) -> Vec<Vec<u32>> {
    if n == 0 || n >= fragments.len() {
        return fragments.iter().map(|(id, _)| vec![*id]).collect();
    }
    let total: u64 = fragments.iter().map(|(_, r)| *r).sum();
    let mut out: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut current = Vec::new();
    let mut seen = 0u64;
    for (i, (id, rows)) in fragments.iter().enumerate() {
        current.push(*id);
        seen += rows;
        let left_fragments = fragments.len() - i - 1;
        let left_runs = n - out.len() - 1;
        // Close the run once it reaches its share of the rows, or when every remaining
        // fragment must start a run of its own.
        let share = total * (out.len() as u64 + 1) / n as u64;
        if left_runs > 0 && (seen >= share || left_fragments == left_runs) {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Plan a distributed build of an index on `target.column` at `at`'s version: one task (bytes)
/// per build split; none when `unindexed_only` finds every fragment indexed (or the table has
/// no fragments).
pub fn plan(at: &Snapshot, target: &Target, spec: &Spec, o: &PlanOptions) -> Result<Vec<Vec<u8>>> {
    let column = target.column;
    let (family, spec_bytes, index_type) = match spec {
        Spec::Vector(model) => {
            let (uri, m) = VectorModel::decode(model)?;
            if uri.trim_end_matches('/') != at.uri().trim_end_matches('/') {
                return Err(HostError::invalid(format!("the vector model was trained on table '{uri}', not on '{}'", at.uri())));
            }
            if m.column != column {
                return Err(HostError::invalid(format!("the vector model was trained on column '{}', not on '{column}'", m.column)));
            }
            let (what, dim, _) = check_vector(at, column, &VectorOptions { num_partitions: None, ..m.options.clone() })?;
            if dim != m.dim {
                return Err(HostError::invalid(format!("{what}: the model has dimension {}, the column {dim}", m.dim)));
            }
            (FAMILY_VECTOR, model.to_vec(), m.options.kind.name())
        }
        Spec::Inverted(io) => {
            check_inverted(at, column, io)?;
            (FAMILY_INVERTED, encode_inverted(io), "INVERTED")
        }
        Spec::Scalar(kind) => {
            check_scalar(at, column, *kind)?;
            (FAMILY_SCALAR, vec![scalar_code(*kind)], kind.label())
        }
    };
    let name = match target.name {
        Some("") => return Err(HostError::invalid("the index name is empty (pass NULL for Lance's default name)")),
        Some(n) => n.to_string(),
        None => format!("{column}_idx"),
    };
    let existing = crate::index::list_indexes(at)?;
    let exists = existing.iter().any(|i| i.name == name);
    if exists && !target.replace && !o.unindexed_only {
        return Err(HostError::invalid(format!(
            "an index named '{name}' already exists on table '{}' (build with replace to rebuild it, or index only the unindexed fragments)",
            at.uri()
        )));
    }
    // Segments join an existing index only when they are of its kind and column.
    if let Some(old) = existing.iter().find(|i| i.name == name).filter(|_| o.unindexed_only && !target.replace) {
        if old.column != column || !old.index_type.eq_ignore_ascii_case(index_type) {
            return Err(HostError::invalid(format!(
                "index '{name}' of table '{}' is {} index on column '{}': {index_type} segments on column \
                 '{column}' cannot join it (choose another name, or build with replace to rebuild it)",
                at.uri(),
                crate::error::with_article(&old.index_type),
                old.column
            )));
        }
    }
    let covered: RoaringBitmap = if o.unindexed_only && exists {
        let ds = at.dataset.clone();
        let n = name.clone();
        session::block_on(async move { ds.load_indices_by_name(&n).await })?
            .map_err(|e| HostError::from_lance(&format!("cannot read index '{name}' of table '{}'", at.uri()), e))?
            .iter()
            .filter_map(|s| s.fragment_bitmap.clone())
            .fold(RoaringBitmap::new(), |a, b| a | b)
    } else {
        RoaringBitmap::new()
    };
    let fragments: Vec<(u32, u64)> = at
        .dataset
        .get_fragments()
        .iter()
        .map(|f| (f.id() as u32, f.metadata().num_rows().unwrap_or(0) as u64))
        .filter(|(id, _)| !covered.contains(*id))
        .collect();
    let plan_id = uuid::Uuid::new_v4().as_u64_pair().0;
    Ok(cut(&fragments, o.num_splits)
        .into_iter()
        .map(|fragments| {
            Task {
                h: Header {
                    uri: at.uri().to_string(),
                    plan_id,
                    version: at.version(),
                    name: name.clone(),
                    column: column.to_string(),
                },
                family,
                spec: spec_bytes.clone(),
                fragments,
            }
            .encode()
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// Segments

struct Segment {
    h: Header,
    meta: IndexMetadata,
}

impl Segment {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        self.h.write(&mut w);
        w.blob(&pb::IndexMetadata::from(&self.meta).encode_to_vec());
        bytes::seal(RESULT_MAGIC, FORMAT, &w.0)
    }

    fn decode(b: &[u8]) -> Result<Segment> {
        const KIND: &str = "index-segment";
        not_empty(b, "the index segment")?;
        let (_, body) = bytes::open(b, RESULT_MAGIC, &[FORMAT], KIND)?;
        let bad = || bytes::corrupt(KIND, "truncated or malformed");
        let mut r = Reader::new(body, 0, MAX_FIELD);
        let h = Header::read(&mut r).ok_or_else(bad)?;
        let meta = r.blob().ok_or_else(bad)?;
        if r.remaining() != 0 {
            return Err(bytes::corrupt(KIND, "trailing bytes"));
        }
        let meta = pb::IndexMetadata::decode(meta).map_err(|e| bytes::corrupt(KIND, &format!("bad segment metadata: {e}")))?;
        let meta = IndexMetadata::try_from(meta).map_err(|e| bytes::corrupt(KIND, &format!("bad segment metadata: {e}")))?;
        Ok(Segment { h, meta })
    }
}

fn same_table(uri: &str, at: &Snapshot, kind: &str) -> Result<()> {
    if uri.trim_end_matches('/') != at.uri().trim_end_matches('/') {
        return Err(HostError::invalid(format!("the {kind} is of table '{uri}', not of '{}'", at.uri())));
    }
    Ok(())
}

/// Build the segment of one task on a worker: the index over the task's fragments, written
/// under the table's `_indices/`, nothing committed. `at` is the table opened on the worker
/// (at the planned version, or any later one: the task reads the version it was planned at).
/// Returns the segment bytes and the reads the build made (object stores).
pub fn execute_task(at: &Snapshot, task: &[u8]) -> Result<(Vec<u8>, IoStats)> {
    crate::metrics::op(crate::metrics::Op::Write);
    const KIND: &str = "index-build-task";
    let t = Task::decode(task)?;
    let h = t.h.clone();
    same_table(&h.uri, at, "index build task")?;
    let what = format!(
        "cannot build a segment of index '{}' on column '{}' of table '{}' (fragments {:?})",
        h.name, h.column, h.uri, t.fragments
    );
    let (index_type, params): (IndexType, Box<dyn IndexParams>) = match t.family {
        FAMILY_VECTOR => {
            let (_, m) = VectorModel::decode(&t.spec)?;
            (IndexType::Vector, Box::new(m.lance_params()))
        }
        FAMILY_INVERTED => {
            let o = decode_inverted(&t.spec).ok_or_else(|| bytes::corrupt(KIND, "bad full-text settings"))?;
            let (_, p) = check_inverted(at, &h.column, &o)?;
            (IndexType::Inverted, Box::new(p))
        }
        _ => {
            let kind = t.spec.first().copied().and_then(scalar_of).filter(|_| t.spec.len() == 1);
            let kind = kind.ok_or_else(|| bytes::corrupt(KIND, "bad scalar index type"))?;
            // The kind's own type (not IndexType::Scalar) selects Lance's canonical segment
            // builders; the generic path writes shards that only a merge makes readable.
            let ty = match kind {
                ScalarKind::BTree => IndexType::BTree,
                ScalarKind::Bitmap => IndexType::Bitmap,
                ScalarKind::LabelList => IndexType::LabelList,
            };
            (ty, Box::new(kind.params()))
        }
    };
    let planned = h.version;
    let stats = OpStats::default();
    let ds = stats.dataset(at);
    let progress = super::progress::current();
    let (name, column, fragments) = (h.name.clone(), h.column.clone(), t.fragments.clone());
    let meta = session::block_on(async move {
        let mut ds: Dataset = if ds.version().version == planned {
            (*ds).clone()
        } else {
            ds.checkout_version(planned).await?
        };
        ds.create_index_builder(&[column.as_str()], index_type, params.as_ref())
            .name(name)
            // The plan checked the name; a segment of an index that exists (replace, or
            // unindexed fragments only) is built beside it.
            .replace(true)
            .fragments(fragments)
            .progress(progress)
            .execute_uncommitted()
            .await
    })?
    .map_err(|e| HostError::from_lance(&what, e).with_local_paths(&h.uri))?;
    let segment = Segment { h, meta }.encode();
    Ok((segment, stats.snapshot()))
}

/// Commit the segments of one plan (from any workers) as one index in one new version of
/// `at`'s table (any version since the plan), merged into one segment first when `merge`.
/// Segments of failed tasks may be left out: their fragments stay unindexed (flat splits)
/// until an `unindexed_only` build or an optimize.
pub fn commit(at: &Snapshot, segments: &[&[u8]], merge: bool) -> Result<Snapshot> {
    crate::metrics::op(crate::metrics::Op::Commit);
    if segments.is_empty() {
        return Err(HostError::invalid("no index segments to commit"));
    }
    let mut decoded = Vec::with_capacity(segments.len());
    for (i, b) in segments.iter().enumerate() {
        let s = Segment::decode(b).map_err(|e| HostError::new(e.code, format!("segments[{i}]: {}", e.message)))?;
        same_table(&s.h.uri, at, "index segment")?;
        decoded.push(s);
    }
    let first = decoded[0].h.clone();
    let mut seen_fragments = RoaringBitmap::new();
    let mut seen_uuids = HashSet::new();
    for (i, s) in decoded.iter().enumerate() {
        if s.h.plan_id != first.plan_id || s.h.name != first.name || s.h.column != first.column {
            return Err(HostError::invalid(format!(
                "segments[{i}] belongs to another build plan (index '{}' on '{}') than segments[0] (index '{}' on '{}'): commit the segments of one plan",
                s.h.name, s.h.column, first.name, first.column
            )));
        }
        if !seen_uuids.insert(s.meta.uuid) {
            return Err(HostError::invalid(format!("segments[{i}] is given twice (segment {})", s.meta.uuid)));
        }
        let fragments = s.meta.fragment_bitmap.clone().unwrap_or_default();
        if !(&seen_fragments & &fragments).is_empty() {
            return Err(HostError::invalid(format!("segments[{i}] covers fragments another segment covers")));
        }
        seen_fragments |= fragments;
    }
    let (name, column, planned_at) = (first.name, first.column, first.version);
    if planned_at > at.version() {
        return Err(HostError::invalid(format!(
            "the segments were planned at version {planned_at}, after the handle's version {}: commit on a handle at the planned version or later",
            at.version()
        )));
    }
    let metas: Vec<IndexMetadata> = decoded.into_iter().map(|s| s.meta).collect();
    let uri = at.uri().to_string();
    let what = format!("cannot commit {} segment(s) of index '{name}' to table '{uri}'", metas.len());
    check_segment_files(at, &metas)?;
    let mut ds = (*at.dataset).clone();
    let ds = session::block_on(async move {
        let metas = if merge && metas.len() > 1 {
            vec![ds.merge_existing_index_segments(metas).await?]
        } else {
            metas
        };
        ds.commit_existing_index_segments(&name, &column, metas).await?;
        Ok::<_, lance::Error>(ds)
    })?
    .map_err(|e| crate::write::commit_error(&what, planned_at, e).with_local_paths(&uri))?;
    Ok(Snapshot {
        dataset: Arc::new(ds),
        storage_options: at.storage_options.clone(),
    })
}

/// Segment bytes are what a host shipped: before Lance commits them, each segment must cover
/// only fragments of the table at the handle's version, be stored in this table's `_indices/`
/// (no other base), not be an index the table already has, and its directory must hold the
/// files (with the sizes) the segment names — one listing per segment. A segment that fails is
/// LANCE_ERR_INVALID_ARGUMENT naming its index, nothing committed.
fn check_segment_files(at: &Snapshot, metas: &[IndexMetadata]) -> Result<()> {
    use futures::TryStreamExt;
    use object_store::ObjectStore as _;
    let ds = at.dataset.clone();
    let fragments: RoaringBitmap = ds.manifest.fragments.iter().filter_map(|f| u32::try_from(f.id).ok()).collect();
    let metas = metas.to_vec();
    let uri = at.uri().to_string();
    session::block_on(async move {
        let what = format!("cannot check the index segments of table '{uri}'");
        let existing: HashSet<uuid::Uuid> = ds
            .load_indices()
            .await
            .map_err(|e| HostError::from_lance(&what, e))?
            .iter()
            .map(|i| i.uuid)
            .collect();
        let store = ds.object_store(None).await.map_err(|e| HostError::from_lance(&what, e))?;
        for (i, m) in metas.iter().enumerate() {
            let refuse = |why: String| HostError::invalid(format!("segments[{i}] is refused: {why}; nothing was committed"));
            if m.base_id.is_some() {
                return Err(refuse(format!("segment {} is stored under another base path", m.uuid)));
            }
            if existing.contains(&m.uuid) {
                return Err(refuse(format!("segment {} is already an index of the table", m.uuid)));
            }
            if let Some(covered) = &m.fragment_bitmap {
                let unknown = covered - &fragments;
                if let Some(id) = unknown.iter().next() {
                    return Err(refuse(format!("it covers fragment {id}, which version {} of the table does not have", ds.version().version)));
                }
            }
            let dir = ds.indices_dir().join(m.uuid.to_string());
            let listed: Vec<object_store::ObjectMeta> = store
                .inner
                .list(Some(&dir))
                .try_collect()
                .await
                .map_err(|e| HostError::from_lance(&what, e.into()))?;
            if listed.is_empty() {
                return Err(refuse(format!("segment {} has no files in the table's _indices/ directory", m.uuid)));
            }
            for f in m.files.iter().flatten() {
                let path = f.path.split('/').fold(dir.clone(), |p, part| p.join(part));
                match listed.iter().find(|o| o.location == path) {
                    None => return Err(refuse(format!("its file '{}' of segment {} does not exist", f.path, m.uuid))),
                    Some(o) if o.size != f.size_bytes => {
                        return Err(refuse(format!(
                            "its file '{}' of segment {} has {} bytes, the segment says {}",
                            f.path, m.uuid, o.size, f.size_bytes
                        )))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_balances_rows_and_never_leaves_a_run_empty() {
        let f: Vec<(u32, u64)> = (0..10).map(|i| (i, 100)).collect();
        let runs = cut(&f, 3);
        assert_eq!(runs.len(), 3);
        assert_eq!(runs.iter().map(Vec::len).sum::<usize>(), 10);
        assert!(runs.iter().all(|r| r.len() >= 3 && r.len() <= 4), "{runs:?}");
        assert_eq!(cut(&f, 0).len(), 10);
        assert_eq!(cut(&f, 20).len(), 10);
        // One huge fragment first: the rest still get runs of their own.
        let skewed = vec![(0, 10_000), (1, 1), (2, 1), (3, 1)];
        let runs = cut(&skewed, 3);
        assert_eq!(runs, vec![vec![0], vec![1], vec![2, 3]]);
        assert!(cut(&[], 4).is_empty());
    }

    #[test]
    fn inverted_settings_round_trip() {
        let o = InvertedOptions { with_position: true, max_token_length: None, stem: false, ..Default::default() };
        assert_eq!(decode_inverted(&encode_inverted(&o)), Some(o));
        assert_eq!(decode_inverted(b"\x01"), None);
    }
}
