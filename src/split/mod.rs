//! Split planning: cut a pinned snapshot into splits for scans and vector searches, and
//! carry splits between processes as compact, versioned, checksummed bytes.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::bytes::{Reader, Writer};
use crate::error::{HostError, Result};
use crate::index::Metric;
use crate::snapshot::Snapshot;

mod plan;
pub mod scope;

pub(crate) use plan::segment_and_flat_splits;
pub use plan::{default_metric, is_multivector, plan_scan, plan_vector, vector_column, visible_in_slice};

/// What a split does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitKind {
    /// Scan its fragments.
    Scan = 1,
    /// Search one physical index segment over the visible fragments it covers.
    IndexSegment = 2,
    /// Brute-force search one fragment no index segment covers.
    Flat = 3,
    /// Full-text search one physical segment of an INVERTED index over the visible fragments
    /// it covers.
    TextSegment = 4,
    /// Full-text search (tokenize and score) fragments no INVERTED segment covers.
    TextFlat = 5,
    /// Read the rows its fragments changed since a version (`crate::changes`), or, without
    /// fragments, the rows deleted since then.
    Changes = 6,
}

impl SplitKind {
    fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(SplitKind::Scan),
            2 => Some(SplitKind::IndexSegment),
            3 => Some(SplitKind::Flat),
            4 => Some(SplitKind::TextSegment),
            5 => Some(SplitKind::TextFlat),
            6 => Some(SplitKind::Changes),
            _ => None,
        }
    }
}

/// A unit of work on one pinned snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub uri: String,
    pub version: u64,
    pub kind: SplitKind,
    pub fragment_ids: Vec<u64>,
    /// The physical index segments an INDEX_SEGMENT or TEXT_SEGMENT split searches: one as
    /// planned, several after `combine`; empty for the other kinds.
    pub segments: Vec<Uuid>,
    /// Vector column of a search split ("" for scan splits).
    pub column: String,
    /// Index the segment belongs to ("" unless INDEX_SEGMENT).
    pub index_name: String,
    /// Metric the plan chose (index metric, or the requested one for flat plans).
    pub metric: Option<Metric>,
    /// Visible rows the split covers (exact for scan splits; a weight for scheduling).
    pub row_count: u64,
    /// A scan split of part of one fragment: the physical rows it covers (deleted rows inside
    /// keep their slots). None: its fragments whole.
    pub rows: Option<RowSlice>,
    /// The changes a CHANGES split reads (None for the other kinds).
    pub changes: Option<Changes>,
}

/// Physical rows `offset .. offset + count` of a fragment (deletions do not shift offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSlice {
    pub offset: u64,
    pub count: u64,
}

/// A planned set of splits.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPlan {
    pub splits: Vec<Split>,
    /// The logical index a vector plan uses, if any.
    pub index_name: Option<String>,
    /// Why the plan uses (or does not use) an index.
    pub reason: String,
    pub metric: Option<Metric>,
}

// ---- Combining -----------------------------------------------------------------------------

/// One split that does the work of `splits` (planned on one snapshot, of one kind, column,
/// index and metric) in a single search or scan, so a worker that runs several splits of a
/// plan pays for opening and planning once: their fragments and segments, in the given order,
/// and the sum of their rows. Refused: no splits, splits of different snapshots, kinds,
/// columns, indexes or metrics, a segment split with a flat one, and a fragment or segment in
/// two of them (a split given twice would count its rows twice).
pub fn combine(splits: &[Split]) -> Result<Split> {
    let first = splits.first().ok_or_else(|| HostError::invalid("no splits to combine"))?;
    let mut out = Split { fragment_ids: Vec::new(), segments: Vec::new(), row_count: 0, ..first.clone() };
    let mut fragments = BTreeSet::new();
    let mut segments = BTreeSet::new();
    for (i, s) in splits.iter().enumerate() {
        let differs = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
            HostError::invalid(format!(
                "split {i} cannot be combined with split 0: its {what} is {a:?}, split 0's is {b:?}"
            ))
        };
        if (s.uri.as_str(), s.version) != (first.uri.as_str(), first.version) {
            return Err(differs("snapshot", &(&s.uri, s.version), &(&first.uri, first.version)));
        }
        if s.kind != first.kind {
            return Err(differs("kind", &s.kind, &first.kind));
        }
        if s.column != first.column {
            return Err(differs("column", &s.column, &first.column));
        }
        if s.index_name != first.index_name {
            return Err(differs("index", &s.index_name, &first.index_name));
        }
        if s.metric != first.metric {
            return Err(differs("metric", &s.metric, &first.metric));
        }
        if s.changes != first.changes {
            return Err(differs("changes", &s.changes, &first.changes));
        }
        if s.kind == SplitKind::Changes && s.fragment_ids.is_empty() {
            return Err(HostError::invalid(format!(
                "split {i} reads the deleted rows of the whole table: it is one unit, not combined"
            )));
        }
        if let Some(r) = s.rows {
            return Err(HostError::invalid(format!(
                "split {i} covers rows {}..{} of fragment {:?}, not whole fragments: scan it on its own",
                r.offset,
                r.offset + r.count,
                s.fragment_ids
            )));
        }
        for f in &s.fragment_ids {
            if !fragments.insert(*f) {
                return Err(HostError::invalid(format!(
                    "split {i} repeats fragment {f} of an earlier split: each split may be combined once"
                )));
            }
        }
        for u in &s.segments {
            if !segments.insert(*u) {
                return Err(HostError::invalid(format!(
                    "split {i} repeats index segment {u} of an earlier split: each split may be combined once"
                )));
            }
        }
        out.fragment_ids.extend_from_slice(&s.fragment_ids);
        out.segments.extend_from_slice(&s.segments);
        out.row_count = out.row_count.saturating_add(s.row_count);
    }
    if out.fragment_ids.len() > MAX_LEN || out.segments.len() > MAX_LEN {
        return Err(HostError::invalid("the combined split is too large"));
    }
    out.validate()?;
    Ok(out)
}

// ---- Serialization -------------------------------------------------------------------------
//
// The shared envelope (`crate::bytes`): magic "LHSP" | format u8 | body | crc32. Body, little
// endian: kind u8 | metric u8 (0 none, 1 L2, 2 cosine, 3 dot, 4 hamming) | flags u8 (bit 0:
// segments present) | version u64 | row_count u64 | uri, column, index: u32 len + bytes each |
// segments | fragments: u32 count + u64 each.
// Segments: format 1 holds exactly one (16 bytes); format 2, written only for a split of
// several segments (`combine`), holds a u32 count (at least 2) and 16 bytes each. A split of
// one segment is written as format 1, which every earlier library reads.

const MAGIC: &[u8; 4] = b"LHSP";
/// Split format of a split with at most one segment.
pub const SPLIT_FORMAT: u8 = 1;
/// Split format of a split with several segments.
pub const SPLIT_FORMAT_SEGMENTS: u8 = 2;
/// A CHANGES split: format 1's body, then the version the changes are since (u64) and the
/// change types (u8). Written only for that kind: earlier libraries refuse it.
pub const SPLIT_FORMAT_CHANGES: u8 = 3;
/// Upper bound on decoded string and list sizes (defends against corrupt lengths).
const MAX_LEN: usize = 1 << 20;

fn metric_code(m: Option<Metric>) -> u8 {
    match m {
        None => 0,
        Some(Metric::L2) => 1,
        Some(Metric::Cosine) => 2,
        Some(Metric::Dot) => 3,
        Some(Metric::Hamming) => 4,
    }
}

fn metric_from_code(c: u8) -> Option<Option<Metric>> {
    Some(match c {
        0 => None,
        1 => Some(Metric::L2),
        2 => Some(Metric::Cosine),
        3 => Some(Metric::Dot),
        4 => Some(Metric::Hamming),
        _ => return None,
    })
}

impl Split {
    pub fn to_bytes(&self) -> Vec<u8> {
        let several = self.segments.len() > 1;
        let mut w = Writer(Vec::with_capacity(64 + self.uri.len() + 8 * self.fragment_ids.len()));
        w.u8(self.kind as u8)
            .u8(metric_code(self.metric))
            .u8(u8::from(!self.segments.is_empty()) | (u8::from(self.rows.is_some()) << 1))
            .u64(self.version)
            .u64(self.row_count)
            .blob(self.uri.as_bytes())
            .blob(self.column.as_bytes())
            .blob(self.index_name.as_bytes());
        if several {
            w.u32(self.segments.len() as u32);
        }
        for u in &self.segments {
            w.0.extend_from_slice(u.as_bytes());
        }
        if let Some(r) = self.rows {
            w.u64(r.offset).u64(r.count);
        }
        w.u32(self.fragment_ids.len() as u32);
        for f in &self.fragment_ids {
            w.u64(*f);
        }
        let format = if several { SPLIT_FORMAT_SEGMENTS } else { SPLIT_FORMAT };
        if let Some(c) = self.changes {
            w.u64(c.since).u8(c.types);
            return crate::bytes::seal(MAGIC, SPLIT_FORMAT_CHANGES, &w.0);
        }
        crate::bytes::seal(MAGIC, format, &w.0)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Split> {
        let corrupt = |what: &str| crate::bytes::corrupt("split", what);
        let (format, body) =
            crate::bytes::open(bytes, MAGIC, &[SPLIT_FORMAT, SPLIT_FORMAT_SEGMENTS, SPLIT_FORMAT_CHANGES], "split")?;
        let mut r = Reader::new(body, 0, MAX_LEN);
        let kind = r.u8().and_then(SplitKind::from_u8).ok_or_else(|| corrupt("unknown split kind"))?;
        let metric = r.u8().and_then(metric_from_code).ok_or_else(|| corrupt("unknown metric"))?;
        let (has_segments, has_rows) = match r.u8() {
            Some(flags @ 0..=3) => (flags & 1 == 1, flags & 2 == 2),
            _ => return Err(corrupt("bad flags")),
        };
        let version = r.u64().ok_or_else(|| corrupt("truncated version"))?;
        let row_count = r.u64().ok_or_else(|| corrupt("truncated row count"))?;
        let uri = r.string().ok_or_else(|| corrupt("bad table uri"))?;
        let column = r.string().ok_or_else(|| corrupt("bad column"))?;
        let index_name = r.string().ok_or_else(|| corrupt("bad index name"))?;
        let count = match (format, has_segments) {
            (_, false) => 0,
            (SPLIT_FORMAT, true) => 1,
            _ => {
                let n = r.u32().ok_or_else(|| corrupt("truncated segment count"))? as usize;
                if !(2..=MAX_LEN).contains(&n) {
                    return Err(corrupt("bad segment count"));
                }
                n
            }
        };
        if format == SPLIT_FORMAT_SEGMENTS && count < 2 {
            return Err(corrupt("format 2 without several segments"));
        }
        let mut segments = Vec::with_capacity(count.min(r.remaining() / 16));
        for _ in 0..count {
            let raw = r.take(16).ok_or_else(|| corrupt("truncated segment uuid"))?;
            segments.push(Uuid::from_slice(raw).map_err(|_| corrupt("bad segment uuid"))?);
        }
        let rows = if has_rows {
            let offset = r.u64().ok_or_else(|| corrupt("truncated row slice"))?;
            let count = r.u64().ok_or_else(|| corrupt("truncated row slice"))?;
            Some(RowSlice { offset, count })
        } else {
            None
        };
        let n = r.u32().ok_or_else(|| corrupt("truncated fragment list"))? as usize;
        let tail = if format == SPLIT_FORMAT_CHANGES { 9 } else { 0 };
        if n > MAX_LEN || r.remaining() != n * 8 + tail {
            return Err(corrupt("fragment list length does not match"));
        }
        let fragment_ids = (0..n).map(|_| r.u64().expect("length checked")).collect();
        let changes = if format == SPLIT_FORMAT_CHANGES {
            let since = r.u64().expect("length checked");
            let types = r.u8().expect("length checked");
            Some(Changes { since, types })
        } else {
            None
        };
        if (kind == SplitKind::Changes) != changes.is_some() {
            return Err(corrupt("changes without a changes split, or the reverse"));
        }
        let split = Split {
            uri,
            version,
            kind,
            fragment_ids,
            segments,
            column,
            index_name,
            metric,
            row_count,
            rows,
            changes,
        };
        split.validate().map_err(|e| corrupt(&e.message))?;
        Ok(split)
    }

    /// Structural rules every split satisfies.
    pub fn validate(&self) -> Result<()> {
        if self.uri.is_empty() {
            return Err(HostError::invalid("split has no table uri"));
        }
        if self.version == 0 {
            return Err(HostError::invalid("split has no pinned version"));
        }
        match self.kind {
            SplitKind::IndexSegment | SplitKind::TextSegment
                if self.segments.is_empty() || self.column.is_empty() =>
            {
                Err(HostError::invalid("index segment split without segment or column"))
            }
            SplitKind::Flat | SplitKind::TextFlat
                if self.fragment_ids.is_empty() || self.column.is_empty() =>
            {
                Err(HostError::invalid("flat split must have fragments and a column"))
            }
            SplitKind::Scan | SplitKind::Flat | SplitKind::TextFlat if !self.segments.is_empty() => {
                Err(HostError::invalid("only index segment splits carry a segment"))
            }
            SplitKind::Changes => match self.changes {
                None => Err(HostError::invalid("a changes split must say which changes it reads")),
                Some(c) if !self.segments.is_empty() || self.rows.is_some() || !self.column.is_empty() => {
                    let _ = c;
                    Err(HostError::invalid("a changes split reads whole fragments, without index or column"))
                }
                Some(c) => c.validate(self.version, self.fragment_ids.is_empty()),
            },
            _ if self.changes.is_some() => Err(HostError::invalid("only a changes split says which changes it reads")),
            _ if self.rows.is_some() && (self.kind != SplitKind::Scan || self.fragment_ids.len() != 1) => {
                Err(HostError::invalid("only a scan split of one fragment covers a row slice"))
            }
            _ if self.rows.is_some_and(|r| r.count == 0 || r.offset.checked_add(r.count).is_none_or(|e| e > 1 << 32)) => {
                Err(HostError::invalid("a row slice must cover 1 to 2^32 physical rows of its fragment"))
            }
            _ => Ok(()),
        }
    }

    /// The snapshot must be the table and version the split was planned on.
    pub fn check_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        if snapshot.uri() != self.uri || snapshot.version() != self.version {
            return Err(HostError::invalid(format!(
                "split belongs to table '{}' at version {}, but the dataset is '{}' at version {}",
                self.uri,
                self.version,
                snapshot.uri(),
                snapshot.version()
            )));
        }
        Ok(())
    }
}

// ---- change splits: what a CHANGES split reads (read by `crate::changes`) ----

/// Rows inserted since the begin version.
pub const INSERTED: u8 = 1;
/// Rows updated since the begin version (created at or before it).
pub const UPDATED: u8 = 2;
/// Rows deleted since the begin version.
pub const DELETED: u8 = 4;
pub(crate) const ALL: u8 = INSERTED | UPDATED | DELETED;

/// What a CHANGES split reads: the changes after version `since` (up to the split's version)
/// of the kinds in `types`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changes {
    pub since: u64,
    pub types: u8,
}

impl Changes {
    /// Rules of a split's changes: a known, non-empty set of types; deleted rows alone in a
    /// split without fragments, inserted and updated rows in splits with fragments; `since`
    /// below the split's version.
    pub(crate) fn validate(&self, version: u64, no_fragments: bool) -> Result<()> {
        if self.types == 0 || self.types & !ALL != 0 {
            return Err(HostError::invalid(format!("unknown change types {:#x}", self.types)));
        }
        if self.since >= version {
            return Err(HostError::invalid(format!(
                "a changes split reads changes after version {} up to version {version}: nothing",
                self.since
            )));
        }
        match (self.types == DELETED, no_fragments) {
            (true, true) | (false, false) => Ok(()),
            _ => Err(HostError::invalid(
                "a changes split reads deleted rows alone (without fragments) or inserted and updated rows of its fragments",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Split {
        Split {
            uri: "/data/t.lance".into(),
            version: 7,
            kind: SplitKind::IndexSegment,
            fragment_ids: vec![0, 3, 9],
            segments: vec![Uuid::from_u128(0x1234_5678_9abc_def0_1122_3344_5566_7788)],
            column: "embedding".into(),
            index_name: "idx".into(),
            metric: Some(Metric::Cosine),
            row_count: 4242,
            rows: None,
            changes: None,
        }
    }

    #[test]
    fn row_slices_round_trip_and_are_checked() {
        let s = Split {
            kind: SplitKind::Scan,
            fragment_ids: vec![4],
            segments: Vec::new(),
            column: String::new(),
            index_name: String::new(),
            metric: None,
            rows: Some(RowSlice { offset: 1000, count: 500 }),
            ..sample()
        };
        let b = s.to_bytes();
        assert_eq!(b[4], SPLIT_FORMAT);
        assert_eq!(Split::from_bytes(&b).unwrap(), s);
        let whole = Split { rows: None, ..s.clone() };
        assert_eq!(Split::from_bytes(&whole.to_bytes()).unwrap(), whole);
        for bad in [
            Split { fragment_ids: vec![4, 5], ..s.clone() },
            Split { rows: Some(RowSlice { offset: 0, count: 0 }), ..s.clone() },
            Split { rows: Some(RowSlice { offset: u64::MAX, count: 2 }), ..s.clone() },
            Split { kind: SplitKind::Flat, column: "v".into(), ..s.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
            assert!(Split::from_bytes(&bad.to_bytes()).is_err(), "{bad:?}");
        }
        let e = combine(&[s.clone(), whole]).unwrap_err();
        assert!(e.message.contains("rows 1000..1500 of fragment [4]"), "{}", e.message);
    }

    /// `sample` with `n` segments over fragments `first..first + n`.
    fn segments(first: u64, n: u64) -> Split {
        Split {
            fragment_ids: (first..first + n).collect(),
            segments: (first..first + n).map(|i| Uuid::from_u128(0xabc0 + u128::from(i))).collect(),
            row_count: 100 * n,
            ..sample()
        }
    }

    #[test]
    fn round_trip() {
        let s = sample();
        let b = s.to_bytes();
        assert_eq!(b[4], SPLIT_FORMAT, "one segment keeps the format every library reads");
        assert_eq!(Split::from_bytes(&b).unwrap(), s);
        let several = segments(0, 3);
        let b = several.to_bytes();
        assert_eq!(b[4], SPLIT_FORMAT_SEGMENTS);
        assert_eq!(Split::from_bytes(&b).unwrap(), several);
        let scan = Split { kind: SplitKind::Scan, segments: Vec::new(), column: String::new(), index_name: String::new(), metric: None, ..sample() };
        assert_eq!(Split::from_bytes(&scan.to_bytes()).unwrap(), scan);
    }

    fn changes(fragments: Vec<u64>, types: u8) -> Split {
        Split {
            kind: SplitKind::Changes,
            segments: Vec::new(),
            column: String::new(),
            index_name: String::new(),
            metric: None,
            fragment_ids: fragments,
            changes: Some(Changes { since: 3, types }),
            ..sample()
        }
    }

    #[test]
    fn change_splits_round_trip_in_their_own_format_and_are_checked() {
        let live = changes(vec![1, 4], INSERTED | UPDATED);
        let b = live.to_bytes();
        assert_eq!(b[4], SPLIT_FORMAT_CHANGES, "a format earlier libraries refuse");
        assert_eq!(Split::from_bytes(&b).unwrap(), live);
        let deleted = changes(Vec::new(), DELETED);
        assert_eq!(Split::from_bytes(&deleted.to_bytes()).unwrap(), deleted);
        // the rules: deleted rows alone and without fragments, known types, since below the version
        for bad in [
            changes(vec![1], DELETED),
            changes(Vec::new(), INSERTED),
            changes(vec![1], 0),
            changes(vec![1], 8),
            Split { changes: Some(Changes { since: 7, types: 1 }), ..changes(vec![1], 1) },
            Split { changes: None, ..changes(vec![1], 1) },
            Split { kind: SplitKind::Scan, ..changes(vec![1], 1) },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        // combined only with splits of the same changes; the deleted rows' split never
        let other = changes(vec![2], INSERTED | UPDATED);
        assert_eq!(combine(&[live.clone(), other]).unwrap().fragment_ids, vec![1, 4, 2]);
        assert!(combine(&[live.clone(), changes(vec![2], INSERTED)]).is_err());
        assert!(combine(&[deleted.clone(), deleted]).is_err());
    }

    #[test]
    fn combine_concatenates_in_order_and_refuses_what_does_not_fit() {
        let (a, b, c) = (segments(0, 1), segments(1, 2), segments(3, 1));
        let all = combine(&[b.clone(), a.clone(), c.clone()]).unwrap();
        assert_eq!(all.fragment_ids, vec![1, 2, 0, 3]);
        assert_eq!(all.segments, [b.segments.clone(), a.segments.clone(), c.segments.clone()].concat());
        assert_eq!(all.row_count, 400);
        assert_eq!(combine(std::slice::from_ref(&a)).unwrap(), a);
        assert!(combine(&[]).unwrap_err().message.contains("no splits"));

        let refused = |other: Split, needle: &str| {
            let e = combine(&[a.clone(), other]).unwrap_err();
            assert_eq!(e.code, crate::error::LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT);
            assert!(e.message.contains(needle), "{needle}: {}", e.message);
        };
        refused(Split { version: 8, ..c.clone() }, "snapshot");
        refused(Split { uri: "/other".into(), ..c.clone() }, "snapshot");
        refused(Split { kind: SplitKind::Flat, segments: Vec::new(), ..c.clone() }, "kind");
        refused(Split { column: "other".into(), ..c.clone() }, "column");
        refused(Split { index_name: "other".into(), ..c.clone() }, "index");
        refused(Split { metric: Some(Metric::L2), ..c.clone() }, "metric");
        refused(a.clone(), "repeats fragment 0");
        refused(Split { fragment_ids: vec![9], ..a.clone() }, "repeats index segment");
    }

    #[test]
    fn fuzzed_bytes_never_panic_and_never_decode_to_something_else() {
        let goods = [
            sample().to_bytes(),
            segments(0, 3).to_bytes(),
            changes(vec![1, 4], INSERTED).to_bytes(),
            changes(Vec::new(), DELETED).to_bytes(),
        ];
        let mut damage = crate::bytes::Damage::new(0x9e37_79b9_7f4a_7c15);
        for i in 0..40_000 {
            let good = &goods[(i / 4) % goods.len()];
            let b = if i % 4 == 2 {
                // Random bytes, sometimes behind a valid magic and format.
                let n = (damage.next() % 64) as usize;
                let mut b: Vec<u8> = (0..n).map(|_| damage.next() as u8).collect();
                if i % 8 == 2 && b.len() >= 5 {
                    b[..4].copy_from_slice(MAGIC);
                    b[4] = [SPLIT_FORMAT, SPLIT_FORMAT_SEGMENTS, SPLIT_FORMAT_CHANGES][i % 24 / 8];
                }
                b
            } else {
                damage.apply(good, [0, 1, 0, 2][i % 4])
            };
            if let Ok(decoded) = Split::from_bytes(&b) {
                // Only an unchanged encoding may decode.
                assert_eq!(decoded.to_bytes(), b, "iteration {i}");
            }
        }
    }
}
