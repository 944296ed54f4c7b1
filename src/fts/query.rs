//! A full-text query, the corpus statistics a coordinator computes for it once, and their bytes
//! (shipped with every split so that all workers score with the same BM25 statistics).

use lance_index::scalar::inverted::MemBM25Scorer;

use crate::error::{HostError, LanceErrorCode, Result};
use crate::bytes::Reader;
use crate::split::Split;

/// Largest k a full-text query accepts (results are held in memory before they are returned).
pub const MAX_K: u64 = 1 << 20;

/// How the terms of a query match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextMatch {
    /// Documents containing at least one term.
    Any,
    /// Documents containing every term.
    All,
    /// Documents containing the terms as a phrase, with up to `slop` positions between them.
    Phrase { slop: u32 },
}

impl TextMatch {
    pub(super) fn code(self) -> (u8, u32) {
        match self {
            TextMatch::Any => (0, 0),
            TextMatch::All => (1, 0),
            TextMatch::Phrase { slop } => (2, slop),
        }
    }

    pub(super) fn from_code(code: u8, slop: u32) -> Option<Self> {
        match code {
            0 => Some(TextMatch::Any),
            1 => Some(TextMatch::All),
            2 => Some(TextMatch::Phrase { slop }),
            _ => None,
        }
    }

    pub(super) fn describe(self) -> String {
        match self {
            TextMatch::Any => "match (OR)".to_string(),
            TextMatch::All => "match (AND)".to_string(),
            TextMatch::Phrase { slop } => format!("phrase (slop {slop})"),
        }
    }
}

/// A full-text query executed against one split.
#[derive(Debug, Clone, PartialEq)]
pub struct TextQuery {
    /// The text column; it must have an INVERTED index.
    pub column: String,
    pub text: String,
    pub kind: TextMatch,
    /// Results per split (1..=MAX_K).
    pub k: u64,
    /// SQL filter; only rows it keeps are searched (and counted in the flat statistics).
    pub prefilter: Option<String>,
    /// Columns to return besides `_score` (empty = every column).
    pub columns: Vec<String>,
    pub with_row_id: bool,
}

impl TextQuery {
    pub(super) fn validate(&self) -> Result<()> {
        if self.column.is_empty() {
            return Err(HostError::invalid("query column is empty"));
        }
        if self.text.trim().is_empty() {
            return Err(HostError::invalid("query text is empty"));
        }
        if self.k == 0 {
            return Err(HostError::invalid("k must be at least 1"));
        }
        if self.k > MAX_K {
            return Err(HostError::invalid(format!("k {} is larger than the maximum {MAX_K}", self.k)));
        }
        if let Some(f) = &self.prefilter {
            if f.trim().is_empty() {
                return Err(HostError::invalid("prefilter is empty"));
            }
        }
        Ok(())
    }
}

/// Document statistics of one part of the corpus, for the terms of one query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TermCounts {
    pub total_tokens: u64,
    pub num_docs: u64,
    /// Documents containing each term (same order as [`CorpusStats::terms`]).
    pub docs: Vec<u64>,
}

impl TermCounts {
    /// A segment's figures for the query terms as Lance's `bm25_stats_for_terms` returns them
    /// (total tokens, documents, documents per term).
    pub(super) fn of_segment((total_tokens, num_docs, docs): (u64, usize, Vec<usize>)) -> TermCounts {
        TermCounts { total_tokens, num_docs: num_docs as u64, docs: docs.into_iter().map(|d| d as u64).collect() }
    }

    pub(super) fn add(&mut self, other: &TermCounts) -> Result<()> {
        let overflow = || HostError::new(LanceErrorCode::LANCE_ERR_CORRUPT, "corpus statistics overflow");
        self.total_tokens = self.total_tokens.checked_add(other.total_tokens).ok_or_else(overflow)?;
        self.num_docs = self.num_docs.checked_add(other.num_docs).ok_or_else(overflow)?;
        for (a, b) in self.docs.iter_mut().zip(&other.docs) {
            *a = a.checked_add(*b).ok_or_else(overflow)?;
        }
        Ok(())
    }
}

/// BM25 statistics of one query over a whole snapshot (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusStats {
    pub uri: String,
    pub version: u64,
    pub column: String,
    pub index_name: String,
    /// The query they were computed for: text, match kind and prefilter.
    pub text: String,
    pub kind: TextMatch,
    pub prefilter: Option<String>,
    /// The query's distinct terms as the index's tokenizer produces them.
    pub terms: Vec<String>,
    /// Sum over the index's segments.
    pub indexed: TermCounts,
    /// Per unindexed fragment (ascending fragment id): the rows the prefilter keeps.
    pub flat: Vec<(u64, TermCounts)>,
}

impl CorpusStats {
    pub(super) fn scorer(&self, counts: &TermCounts) -> MemBM25Scorer {
        let token_docs = self
            .terms
            .iter()
            .cloned()
            .zip(counts.docs.iter().map(|d| *d as usize))
            .collect();
        MemBM25Scorer::new(counts.total_tokens, counts.num_docs as usize, token_docs)
    }

    /// Check the statistics belong to `split`'s table, version and column and to `q`.
    pub(super) fn check(&self, split: &Split, q: &TextQuery) -> Result<()> {
        let corrupt = |m: String| HostError::new(LanceErrorCode::LANCE_ERR_CORRUPT, m);
        if self.uri != split.uri || self.version != split.version {
            return Err(corrupt(format!(
                "the corpus statistics belong to table '{}' at version {}, but the split to table '{}' at version {}",
                self.uri, self.version, split.uri, split.version
            )));
        }
        if self.column != split.column || self.column != q.column {
            return Err(HostError::invalid(format!(
                "the corpus statistics are for column '{}', the split for '{}' and the query for '{}'",
                self.column, split.column, q.column
            )));
        }
        if self.text != q.text || self.kind != q.kind || self.prefilter != q.prefilter {
            return Err(HostError::invalid(format!(
                "the corpus statistics were computed for {} query '{}' with prefilter {:?}, not for {} query '{}' with prefilter {:?}",
                self.kind.describe(),
                self.text,
                self.prefilter,
                q.kind.describe(),
                q.text,
                q.prefilter
            )));
        }
        Ok(())
    }
}

// ---- Serialization of corpus statistics -----------------------------------------------------
//
// Layout (little endian):
//   magic "LHFS" | format u8 (=1) | match kind u8 | has prefilter u8 | reserved u8 |
//   version u64 | slop u32 | uri, column, index name, text, prefilter: u32 len + bytes each |
//   terms: u32 count + (u32 len + bytes) each | indexed counts | flat: u32 count +
//   (fragment id u64 + counts) each | crc32 of all before.
// Counts: total_tokens u64 | num_docs u64 | one u64 per term.

const MAGIC: &[u8; 4] = b"LHFS";
/// Current statistics format version.
pub const STATS_FORMAT: u8 = 1;
const MAX_LEN: usize = 1 << 24;
const MAX_ITEMS: usize = 1 << 20;

impl CorpusStats {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(128 + self.text.len() + self.flat.len() * 32);
        b.extend_from_slice(MAGIC);
        b.push(STATS_FORMAT);
        let (kind, slop) = self.kind.code();
        b.push(kind);
        b.push(u8::from(self.prefilter.is_some()));
        b.push(0);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&slop.to_le_bytes());
        let put_str = |b: &mut Vec<u8>, s: &str| {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        };
        for s in [&self.uri, &self.column, &self.index_name, &self.text] {
            put_str(&mut b, s);
        }
        put_str(&mut b, self.prefilter.as_deref().unwrap_or(""));
        b.extend_from_slice(&(self.terms.len() as u32).to_le_bytes());
        for t in &self.terms {
            put_str(&mut b, t);
        }
        let put_counts = |b: &mut Vec<u8>, c: &TermCounts| {
            b.extend_from_slice(&c.total_tokens.to_le_bytes());
            b.extend_from_slice(&c.num_docs.to_le_bytes());
            for d in &c.docs {
                b.extend_from_slice(&d.to_le_bytes());
            }
        };
        put_counts(&mut b, &self.indexed);
        b.extend_from_slice(&(self.flat.len() as u32).to_le_bytes());
        for (id, c) in &self.flat {
            b.extend_from_slice(&id.to_le_bytes());
            put_counts(&mut b, c);
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<CorpusStats> {
        let corrupt = |what: &str| {
            HostError::new(LanceErrorCode::LANCE_ERR_CORRUPT, format!("invalid corpus statistics bytes: {what}"))
        };
        if bytes.len() < 5 || &bytes[..4] != MAGIC {
            return Err(corrupt("not lance-host full-text statistics (bad magic)"));
        }
        if bytes[4] != STATS_FORMAT {
            return Err(HostError::not_supported(format!(
                "corpus statistics format version {} is not supported (this library reads version {STATS_FORMAT})",
                bytes[4]
            )));
        }
        if bytes.len() < 24 + 4 {
            return Err(corrupt("truncated"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(tail.try_into().expect("4 bytes")) {
            return Err(corrupt("checksum mismatch (truncated or corrupted)"));
        }
        let mut r = Reader::new(body, 8, MAX_LEN);
        let version = r.u64().ok_or_else(|| corrupt("truncated version"))?;
        let slop = r.u32().ok_or_else(|| corrupt("truncated slop"))?;
        let kind = TextMatch::from_code(body[5], slop).ok_or_else(|| corrupt("unknown match kind"))?;
        if body[7] != 0 || body[6] > 1 || (kind != (TextMatch::Phrase { slop }) && slop != 0) {
            return Err(corrupt("bad flags"));
        }
        let uri = r.string().ok_or_else(|| corrupt("bad table uri"))?;
        let column = r.string().ok_or_else(|| corrupt("bad column"))?;
        let index_name = r.string().ok_or_else(|| corrupt("bad index name"))?;
        let text = r.string().ok_or_else(|| corrupt("bad query text"))?;
        let prefilter_text = r.string().ok_or_else(|| corrupt("bad prefilter"))?;
        let prefilter = match body[6] {
            1 => Some(prefilter_text),
            _ if prefilter_text.is_empty() => None,
            _ => return Err(corrupt("prefilter without flag")),
        };
        let n_terms = r.u32().ok_or_else(|| corrupt("truncated terms"))? as usize;
        if n_terms > MAX_ITEMS {
            return Err(corrupt("too many terms"));
        }
        let mut terms = Vec::with_capacity(n_terms.min(1024));
        for _ in 0..n_terms {
            terms.push(r.string().ok_or_else(|| corrupt("bad term"))?);
        }
        let counts = |r: &mut Reader| -> Option<TermCounts> {
            let total_tokens = r.u64()?;
            let num_docs = r.u64()?;
            let mut docs = Vec::with_capacity(n_terms.min(1024));
            for _ in 0..n_terms {
                docs.push(r.u64()?);
            }
            Some(TermCounts { total_tokens, num_docs, docs })
        };
        let indexed = counts(&mut r).ok_or_else(|| corrupt("truncated indexed counts"))?;
        let n_flat = r.u32().ok_or_else(|| corrupt("truncated flat counts"))? as usize;
        if n_flat > MAX_ITEMS || r.remaining() != n_flat * (8 + 16 + 8 * n_terms) {
            return Err(corrupt("flat counts length does not match"));
        }
        let mut flat = Vec::with_capacity(n_flat);
        for _ in 0..n_flat {
            let id = r.u64().ok_or_else(|| corrupt("truncated fragment id"))?;
            flat.push((id, counts(&mut r).ok_or_else(|| corrupt("truncated flat counts"))?));
        }
        if uri.is_empty() || version == 0 || column.is_empty() {
            return Err(corrupt("missing table, version or column"));
        }
        Ok(CorpusStats { uri, version, column, index_name, text, kind, prefilter, terms, indexed, flat })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CorpusStats {
        CorpusStats {
            uri: "s3://b/t.lance".into(),
            version: 9,
            column: "text".into(),
            index_name: "text_idx".into(),
            text: "quick brown".into(),
            kind: TextMatch::Phrase { slop: 2 },
            prefilter: Some("id > 3".into()),
            terms: vec!["quick".into(), "brown".into()],
            indexed: TermCounts { total_tokens: 1000, num_docs: 100, docs: vec![7, 0] },
            flat: vec![(4, TermCounts { total_tokens: 50, num_docs: 5, docs: vec![1, 2] })],
        }
    }

    #[test]
    fn stats_round_trip() {
        let s = sample();
        assert_eq!(CorpusStats::from_bytes(&s.to_bytes()).unwrap(), s);
        let mut t = sample();
        t.prefilter = None;
        t.kind = TextMatch::All;
        t.flat.clear();
        assert_eq!(CorpusStats::from_bytes(&t.to_bytes()).unwrap(), t);
    }

    #[test]
    fn damaged_stats_never_decode_to_something_else() {
        let good = sample().to_bytes();
        let mut damage = crate::bytes::Damage::new(0x2545_f491_4f6c_dd1d);
        for i in 0..20_000 {
            let b = damage.apply(&good, i % 3);
            match CorpusStats::from_bytes(&b) {
                Ok(decoded) => assert_eq!(decoded.to_bytes(), b, "iteration {i}"),
                Err(e) => assert!(
                    matches!(e.code, LanceErrorCode::LANCE_ERR_CORRUPT | LanceErrorCode::LANCE_ERR_NOT_SUPPORTED),
                    "iteration {i}: {e:?}"
                ),
            }
        }
    }
}
