//! Planning: cut a pinned snapshot into scan splits (whole fragments or row slices) and
//! vector-search splits (index segments and flat fragments).

use std::collections::BTreeSet;

use crate::error::{HostError, Result};
use crate::index::{self, IndexInfo, Metric};
use crate::snapshot::Snapshot;

use super::{RowSlice, Split, SplitKind, SplitPlan};

fn visible_fragments(snapshot: &Snapshot) -> Result<Vec<(u64, u64)>> {
    Ok(snapshot
        .fragments()?
        .into_iter()
        .map(|f| (f.id, f.logical_rows))
        .collect())
}

/// Scan splits: fragments grouped in order until a split reaches `target_rows` (0 = one
/// fragment per split); with `slices`, a fragment of more than `target_rows` visible rows is cut
/// into slices of about `target_rows` visible rows each (by physical rows, the visible count of
/// each exact: the fragment's deletion vector is read for that).
pub fn plan_scan(snapshot: &Snapshot, target_rows: u64, slices: bool) -> Result<SplitPlan> {
    crate::metrics::op(crate::metrics::Op::Plan);
    let mut splits = Vec::new();
    let mut current: Vec<u64> = Vec::new();
    let mut rows = 0u64;
    let new_split = |frags: Vec<u64>, rows: u64, slice: Option<RowSlice>| Split {
        uri: snapshot.uri().to_string(),
        version: snapshot.version(),
        kind: SplitKind::Scan,
        fragment_ids: frags,
        segments: Vec::new(),
        column: String::new(),
        index_name: String::new(),
        metric: None,
        row_count: rows,
        rows: slice,
        changes: None,
    };
    for f in snapshot.fragments()? {
        if slices && target_rows > 0 && f.logical_rows > target_rows {
            if !current.is_empty() {
                splits.push(new_split(std::mem::take(&mut current), rows, None));
                rows = 0;
            }
            for (slice, visible) in slices_of(snapshot, &f, target_rows)? {
                splits.push(new_split(vec![f.id], visible, Some(slice)));
            }
            continue;
        }
        current.push(f.id);
        rows += f.logical_rows;
        if target_rows == 0 || rows >= target_rows {
            splits.push(new_split(std::mem::take(&mut current), rows, None));
            rows = 0;
        }
    }
    if !current.is_empty() {
        splits.push(new_split(current, rows, None));
    }
    Ok(SplitPlan {
        splits,
        index_name: None,
        reason: format!(
            "scan plan with target {target_rows} rows per split{}",
            if slices { ", larger fragments cut into row slices" } else { "" }
        ),
        metric: None,
    })
}

/// A fragment cut into `ceil(visible / target)` slices of equal physical length, each with its
/// exact visible row count.
fn slices_of(snapshot: &Snapshot, f: &crate::snapshot::FragmentInfo, target: u64) -> Result<Vec<(RowSlice, u64)>> {
    let pieces = f.logical_rows.div_ceil(target).max(1);
    let step = f.physical_rows.div_ceil(pieces).max(1);
    let deleted = if f.deleted_rows == 0 { Vec::new() } else { deleted_offsets(snapshot, f.id)? };
    let mut out = Vec::new();
    let mut offset = 0u64;
    while offset < f.physical_rows {
        let count = step.min(f.physical_rows - offset);
        let slice = RowSlice { offset, count };
        out.push((slice, visible_of(&deleted, slice)));
        offset += count;
    }
    Ok(out)
}

/// The deleted physical offsets of a fragment, sorted (its deletion vector, read once).
fn deleted_offsets(snapshot: &Snapshot, fragment: u64) -> Result<Vec<u32>> {
    let frag = usize::try_from(fragment)
        .ok()
        .and_then(|id| snapshot.dataset.get_fragment(id))
        .ok_or_else(|| HostError::not_found(format!("fragment id {fragment} is not in the snapshot")))?;
    let dv = crate::session::block_on(async move { frag.get_deletion_vector().await })?
        .map_err(|e| HostError::from_lance("cannot read a deletion vector", e))?;
    let mut d: Vec<u32> = dv.map(|d| d.iter().collect()).unwrap_or_default();
    d.sort_unstable();
    Ok(d)
}

fn visible_of(deleted: &[u32], slice: RowSlice) -> u64 {
    let lo = deleted.partition_point(|d| u64::from(*d) < slice.offset);
    let hi = deleted.partition_point(|d| u64::from(*d) < slice.offset + slice.count);
    slice.count - (hi - lo) as u64
}

/// The visible rows of physical rows `slice` of `fragment` (its deletion vector read when the
/// fragment has deletions).
pub fn visible_in_slice(snapshot: &Snapshot, fragment: u64, slice: RowSlice) -> Result<u64> {
    let f = snapshot
        .fragments()?
        .into_iter()
        .find(|f| f.id == fragment)
        .ok_or_else(|| HostError::not_found(format!("fragment id {fragment} is not in the snapshot")))?;
    let deleted = if f.deleted_rows == 0 { Vec::new() } else { deleted_offsets(snapshot, fragment)? };
    Ok(visible_of(&deleted, slice))
}

/// Check that `column` is a vector column; return its dimension and element type. Reads the
/// snapshot's schema only (no conversion of the whole schema).
pub fn vector_column(snapshot: &Snapshot, column: &str) -> Result<(i32, arrow_schema::DataType)> {
    let field = snapshot.dataset.schema().field(column).ok_or_else(|| {
        HostError::invalid(format!(
            "unknown column '{column}' (table '{}' at version {})",
            snapshot.uri(),
            snapshot.version()
        ))
    })?;
    match field.data_type() {
        arrow_schema::DataType::FixedSizeList(item, dim) => Ok((dim, item.data_type().clone())),
        // A multivector column: a list of vectors per row, searched by Lance's multivector
        // (late-interaction) distance with a query of several vectors.
        arrow_schema::DataType::List(inner) | arrow_schema::DataType::LargeList(inner) => match inner.data_type() {
            arrow_schema::DataType::FixedSizeList(item, dim) => Ok((*dim, item.data_type().clone())),
            other => Err(HostError::invalid(format!(
                "column '{column}' is not a vector column (a list of {other}, not of fixed-size vectors)"
            ))),
        },
        other => Err(HostError::invalid(format!(
            "column '{column}' is not a vector column (type {other})"
        ))),
    }
}

/// Whether `column` holds several vectors per row (a multivector column).
pub fn is_multivector(snapshot: &Snapshot, column: &str) -> bool {
    snapshot.dataset.schema().field(column).is_some_and(|f| {
        matches!(f.data_type(), arrow_schema::DataType::List(_) | arrow_schema::DataType::LargeList(_))
    })
}

/// The index a plan without a requested metric uses: Lance's default metric is L2, so an L2
/// index, else the first by name.
fn preferred_index(candidates: &[IndexInfo]) -> Option<&IndexInfo> {
    candidates
        .iter()
        .find(|c| c.metric == Some(Metric::L2))
        .or(candidates.first())
}

/// The metric a vector plan of `column` uses when the query names none: that of the index the
/// planner would choose, else L2 (flat search).
pub fn default_metric(snapshot: &Snapshot, column: &str) -> Result<Metric> {
    let candidates: Vec<IndexInfo> = index::list_indexes(snapshot)?
        .into_iter()
        .filter(|i| i.is_vector() && i.column == column)
        .collect();
    Ok(preferred_index(&candidates)
        .and_then(|c| c.metric)
        .unwrap_or(Metric::L2))
}

/// Vector-search splits for `column`: one INDEX_SEGMENT split per physical segment of the
/// chosen index (with the visible fragments it covers) plus FLAT splits over the visible
/// fragments no segment covers: one per fragment when `flat_target_rows` is 0, else
/// consecutive uncovered fragments grouped until a split reaches `flat_target_rows` rows.
/// Every visible fragment lies in exactly one split.
pub fn plan_vector(
    snapshot: &Snapshot,
    column: &str,
    metric: Option<Metric>,
    use_index: bool,
    flat_target_rows: u64,
) -> Result<SplitPlan> {
    crate::metrics::op(crate::metrics::Op::Plan);
    vector_column(snapshot, column)?;
    let candidates: Vec<IndexInfo> = index::list_indexes(snapshot)?
        .into_iter()
        .filter(|i| i.is_vector() && i.column == column)
        .collect();
    let (chosen, reason) = if !use_index {
        (None, "use_index is false: every fragment is searched flat".to_string())
    } else if candidates.is_empty() {
        (None, format!("no vector index on column '{column}': every fragment is searched flat"))
    } else {
        match metric {
            None => {
                let c = preferred_index(&candidates)
                    .expect("candidates is not empty")
                    .clone();
                let why = format!(
                    "using index '{}' ({}, {})",
                    c.name,
                    c.index_type,
                    c.metric.map(|m| m.name()).unwrap_or("?")
                );
                (Some(c), why)
            }
            Some(m) => match candidates.iter().find(|c| c.metric == Some(m)) {
                Some(c) => (
                    Some(c.clone()),
                    format!("using index '{}' ({}, {})", c.name, c.index_type, m.name()),
                ),
                None => {
                    let available: Vec<String> = candidates
                        .iter()
                        .map(|c| format!("{}={}", c.name, c.metric.map(|m| m.name()).unwrap_or("?")))
                        .collect();
                    (
                        None,
                        format!(
                            "no index on column '{column}' uses metric {} (available: {}): every fragment is searched flat",
                            m.name(),
                            available.join(", ")
                        ),
                    )
                }
            },
        }
    };
    let plan_metric = chosen.as_ref().and_then(|c| c.metric).or(metric);
    let splits = segment_and_flat_splits(
        snapshot,
        column,
        chosen.as_ref(),
        plan_metric,
        flat_target_rows,
        (SplitKind::IndexSegment, SplitKind::Flat),
    )?;
    Ok(SplitPlan {
        splits,
        index_name: chosen.map(|c| c.name),
        reason,
        metric: plan_metric,
    })
}

/// One `kinds.0` split per physical segment of `chosen` (the visible fragments it covers that
/// no earlier segment covers) plus `kinds.1` splits over the visible fragments no segment
/// covers: one per fragment when `flat_target_rows` is 0, else consecutive uncovered fragments
/// grouped until a split reaches `flat_target_rows` rows. Every visible fragment lies in
/// exactly one split.
pub(crate) fn segment_and_flat_splits(
    snapshot: &Snapshot,
    column: &str,
    chosen: Option<&IndexInfo>,
    metric: Option<Metric>,
    flat_target_rows: u64,
    kinds: (SplitKind, SplitKind),
) -> Result<Vec<Split>> {
    let fragments = visible_fragments(snapshot)?;
    let base = |kind, frags: Vec<u64>, segments, index_name: String, rows| Split {
        uri: snapshot.uri().to_string(),
        version: snapshot.version(),
        kind,
        fragment_ids: frags,
        segments,
        column: column.to_string(),
        index_name,
        metric,
        row_count: rows,
        rows: None,
        changes: None,
    };
    let rows_of = |id: u64| fragments.iter().find(|f| f.0 == id).map(|f| f.1).unwrap_or(0);
    let mut splits = Vec::new();
    let mut covered: BTreeSet<u64> = BTreeSet::new();
    if let Some(index) = chosen {
        for seg in &index.segments {
            // A fragment belongs to exactly one split: the first segment that covers it.
            let frags: Vec<u64> = seg
                .fragment_ids
                .iter()
                .copied()
                .filter(|f| !covered.contains(f))
                .collect();
            if frags.is_empty() {
                continue;
            }
            covered.extend(frags.iter().copied());
            let rows = frags.iter().map(|f| rows_of(*f)).sum();
            splits.push(base(kinds.0, frags, vec![seg.uuid], index.name.clone(), rows));
        }
    }
    let mut group: Vec<u64> = Vec::new();
    let mut group_rows = 0u64;
    for (id, rows) in fragments.iter().filter(|(id, _)| !covered.contains(id)) {
        group.push(*id);
        group_rows += rows;
        if flat_target_rows == 0 || group_rows >= flat_target_rows {
            let frags = std::mem::take(&mut group);
            splits.push(base(kinds.1, frags, Vec::new(), String::new(), group_rows));
            group_rows = 0;
        }
    }
    if !group.is_empty() {
        splits.push(base(kinds.1, group, Vec::new(), String::new(), group_rows));
    }
    Ok(splits)
}
