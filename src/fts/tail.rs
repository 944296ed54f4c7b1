//! The unindexed tail of a full-text column, tokenized once per fragment and kept in the
//! session's index cache.
//!
//! A full-text query over a table whose INVERTED index does not cover every fragment reads the
//! uncovered fragments twice: the statistics pass counts their documents and terms, and the
//! flat split scores their rows. Both need the fragment tokenized with the index's tokenizer,
//! and that tokenization does not depend on the query. Here each uncovered fragment is
//! tokenized once into a small in-memory inverted list ([`TailDocs`]: per term the documents
//! and positions, per document its length) and cached in the session's index cache under the
//! fragment's identity (table, column, tokenizer, data files, deletion file). Every later pass
//! over the same fragment, for any query, reads the cached lists.
//!
//! Counting and scoring follow Lance's flat full-text search exactly (same document rules, same
//! BM25 arithmetic in the same order, same AND groups and phrase matching), so the answers are
//! the ones Lance's flat search gives.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use futures::{StreamExt, TryStreamExt};
use lance::Dataset;
use lance_core::cache::{CacheKey, LanceCache};
use lance_core::deepsize::{Context, DeepSizeOf};
use lance_datafusion::exec::{execute_plan, LanceExecutionOptions};
use lance_index::scalar::inverted::query::{Operator, Tokens};
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_index::scalar::inverted::{MemBM25Scorer, Scorer};
use lance_table::format::Fragment;

use crate::error::{HostError, Result};
use crate::scan::ROW_ID;

/// BM25's parameters, Lance's values (its scorer keeps them private; a test checks them
/// against its scorer's document norm).
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The length part of BM25's denominator, as Lance's flat search computes it.
fn doc_norm(tokens: u32, avg_doc_length: f32) -> f32 {
    K1 * (1.0 - B + B * tokens as f32 / avg_doc_length)
}

/// One fragment's documents, tokenized: the documents with at least one token (Lance's flat
/// search ignores null and empty documents), their lengths, and per term its postings.
#[derive(Debug, Default)]
pub struct TailDocs {
    row_ids: Vec<u64>,
    lengths: Vec<u32>,
    total_tokens: u64,
    terms: HashMap<String, Postings>,
}

/// The documents (indexes into `row_ids`, ascending) a term occurs in, and its positions in
/// each: `positions[ends[i - 1]..ends[i]]` belong to `docs[i]`.
#[derive(Debug, Default)]
struct Postings {
    docs: Vec<u32>,
    ends: Vec<u32>,
    positions: Vec<u32>,
}

impl Postings {
    fn push(&mut self, doc: u32, position: u32) {
        self.positions.push(position);
        let end = self.positions.len() as u32;
        if self.docs.last() == Some(&doc) {
            *self.ends.last_mut().expect("ends follow docs") = end;
        } else {
            self.docs.push(doc);
            self.ends.push(end);
        }
    }

    /// The positions of the term in document `doc` (empty when it does not occur).
    fn positions_in(&self, doc: u32) -> &[u32] {
        match self.docs.binary_search(&doc) {
            Ok(i) => {
                let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
                &self.positions[start..self.ends[i] as usize]
            }
            Err(_) => &[],
        }
    }

    fn bytes(&self) -> usize {
        (self.docs.capacity() + self.ends.capacity() + self.positions.capacity()) * 4
    }
}

impl DeepSizeOf for TailDocs {
    fn deep_size_of_children(&self, _context: &mut Context) -> usize {
        self.row_ids.capacity() * 8
            + self.lengths.capacity() * 4
            + self.terms.capacity() * (std::mem::size_of::<String>() + std::mem::size_of::<Postings>() + 8)
            + self.terms.iter().map(|(t, p)| t.capacity() + p.bytes()).sum::<usize>()
    }
}

impl TailDocs {
    /// Tokenize one batch (`_rowid` and the text column) into its own lists.
    fn from_batch(batch: &RecordBatch, column: &str, tokenizer: &mut Box<dyn LanceTokenizer>) -> Result<Self> {
        let ids = row_ids(batch, "the tail scan")?;
        let text = batch
            .column_by_name(column)
            .ok_or_else(|| HostError::internal(format!("the tail scan returned no column '{column}'")))?;
        let mut out = TailDocs::default();
        let mut add = |row_id: u64, doc: Option<&str>| -> Result<()> {
            let Some(doc) = doc else { return Ok(()) };
            let index = out.row_ids.len() as u32;
            let mut count: u32 = 0;
            let mut stream = tokenizer.token_stream_for_doc(doc);
            while let Some(token) = stream.next() {
                let position = u32::try_from(token.position)
                    .map_err(|_| HostError::invalid(format!("token position {} exceeds u32", token.position)))?;
                match out.terms.get_mut(token.text.as_str()) {
                    Some(p) => p.push(index, position),
                    None => {
                        let mut p = Postings::default();
                        p.push(index, position);
                        out.terms.insert(token.text.clone(), p);
                    }
                }
                count = count
                    .checked_add(1)
                    .ok_or_else(|| HostError::invalid("a document has more than 2^32 tokens"))?;
            }
            if count > 0 {
                out.row_ids.push(row_id);
                out.lengths.push(count);
                out.total_tokens += count as u64;
            }
            Ok(())
        };
        match text.data_type() {
            DataType::Utf8 => {
                let a = text.as_string::<i32>();
                for i in 0..a.len() {
                    add(ids.value(i), a.is_valid(i).then(|| a.value(i)))?;
                }
            }
            DataType::LargeUtf8 => {
                let a = text.as_string::<i64>();
                for i in 0..a.len() {
                    add(ids.value(i), a.is_valid(i).then(|| a.value(i)))?;
                }
            }
            DataType::Utf8View => {
                let a = text.as_string_view();
                for i in 0..a.len() {
                    add(ids.value(i), a.is_valid(i).then(|| a.value(i)))?;
                }
            }
            other => return Err(HostError::invalid(format!("column '{column}' has type {other}, not text"))),
        }
        Ok(out)
    }

    /// Append `other` (rows that follow this one's).
    fn append(&mut self, other: TailDocs) {
        let offset = self.row_ids.len() as u32;
        self.row_ids.extend(other.row_ids);
        self.lengths.extend(other.lengths);
        self.total_tokens += other.total_tokens;
        for (term, p) in other.terms {
            let into = self.terms.entry(term).or_default();
            let base = into.positions.len() as u32;
            into.docs.extend(p.docs.iter().map(|d| d + offset));
            into.ends.extend(p.ends.iter().map(|e| e + base));
            into.positions.extend(p.positions);
        }
    }

    fn shrink(&mut self) {
        self.row_ids.shrink_to_fit();
        self.lengths.shrink_to_fit();
        for p in self.terms.values_mut() {
            p.docs.shrink_to_fit();
            p.ends.shrink_to_fit();
            p.positions.shrink_to_fit();
        }
    }

    fn allowed(&self, doc: u32, allow: Option<&HashSet<u64>>) -> bool {
        allow.is_none_or(|a| a.contains(&self.row_ids[doc as usize]))
    }
}

/// The documents, tokens and per query token the documents containing it, of some tails
/// through a prefilter: what Lance's flat search adds to its scorer for the rows it reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailCounts {
    pub num_docs: u64,
    pub total_tokens: u64,
    /// Per distinct term asked for.
    pub docs: Vec<u64>,
}

/// Count `terms` over `tails`, each with its prefilter's kept row ids (`None` = every row).
pub fn count(tails: &[(Arc<TailDocs>, Option<HashSet<u64>>)], terms: &[String]) -> TailCounts {
    let mut out = TailCounts { docs: vec![0; terms.len()], ..Default::default() };
    for (tail, allow) in tails {
        match allow {
            None => {
                out.num_docs += tail.row_ids.len() as u64;
                out.total_tokens += tail.total_tokens;
            }
            Some(a) => {
                for (i, id) in tail.row_ids.iter().enumerate() {
                    if a.contains(id) {
                        out.num_docs += 1;
                        out.total_tokens += tail.lengths[i] as u64;
                    }
                }
            }
        }
        for (t, term) in terms.iter().enumerate() {
            if let Some(p) = tail.terms.get(term) {
                out.docs[t] += p.docs.iter().filter(|d| tail.allowed(**d, allow.as_ref())).count() as u64;
            }
        }
    }
    out
}

/// The scorer Lance's flat search builds: `base` (every other part of the corpus) plus what
/// the scored rows themselves contribute.
pub fn scorer(base: &MemBM25Scorer, own: &TailCounts, terms: &[String], query: &Tokens) -> MemBM25Scorer {
    let own_docs: HashMap<&str, u64> = terms.iter().map(String::as_str).zip(own.docs.iter().copied()).collect();
    let mut token_docs = HashMap::new();
    for token in query {
        let n = base.num_docs_containing_token(token) as u64 + own_docs.get(token.as_str()).copied().unwrap_or(0);
        token_docs.insert(token.clone(), n as usize);
    }
    MemBM25Scorer::new(
        base.total_tokens + own.total_tokens,
        base.num_docs + own.num_docs as usize,
        token_docs,
    )
}

/// Groups of query token indexes that share a position (Lance's AND needs one of each group).
fn position_groups(query: &Tokens) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = None;
    for i in 0..query.len() {
        let p = query.position(i);
        if current != Some(p) {
            current = Some(p);
            groups.push(Vec::new());
        }
        groups.last_mut().expect("pushed above").push(i);
    }
    groups
}

/// Whether the document positions of the query tokens hold the phrase within `slop`.
fn phrase_matches(query: &Tokens, positions: &[&[u32]], slop: u32) -> bool {
    let Some(first) = positions.first() else { return false };
    if first.is_empty() {
        return false;
    }
    let mut candidates: Vec<u32> = first.to_vec();
    for (i, at) in positions.iter().enumerate().skip(1) {
        let Some(delta) = query.position(i).checked_sub(query.position(i - 1)) else {
            return false;
        };
        let next: Vec<u32> = at
            .iter()
            .copied()
            .filter(|&p| {
                candidates.iter().any(|&c| {
                    let least = c as u64 + delta as u64;
                    least <= p as u64 && p as u64 <= least + slop as u64
                })
            })
            .collect();
        if next.is_empty() {
            return false;
        }
        candidates = next;
    }
    true
}

/// Score the documents of `tails` that match `query` (BM25 with `scorer`), as Lance's flat
/// search scores them: (`_rowid`, score) of every document with a positive score.
pub fn score(
    tails: &[(Arc<TailDocs>, Option<HashSet<u64>>)],
    query: &Tokens,
    scorer: &MemBM25Scorer,
    operator: Operator,
    phrase_slop: Option<u32>,
) -> Vec<(u64, f32)> {
    let mut out = Vec::new();
    if query.is_empty() {
        return out;
    }
    let groups = position_groups(query);
    // A query token no document contains weighs 0 here and idf(0, n) in Lance's flat search;
    // both are multiplied by a frequency of 0, as such a token occurs in no scored document.
    let idfs: Vec<f32> = (0..query.len()).map(|i| scorer.query_weight(query.get_token(i))).collect();
    let avg = scorer.avg_doc_length();
    for (tail, allow) in tails {
        let postings: Vec<Option<&Postings>> = (0..query.len()).map(|i| tail.terms.get(query.get_token(i))).collect();
        let mut candidates: Vec<u32> = postings.iter().flatten().flat_map(|p| p.docs.iter().copied()).collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut at: Vec<&[u32]> = Vec::with_capacity(query.len());
        for doc in candidates {
            if !tail.allowed(doc, allow.as_ref()) {
                continue;
            }
            at.clear();
            at.extend(postings.iter().map(|p| p.map(|p| p.positions_in(doc)).unwrap_or(&[])));
            if operator == Operator::And && !groups.iter().all(|g| g.iter().any(|i| !at[*i].is_empty())) {
                continue;
            }
            if let Some(slop) = phrase_slop {
                if !phrase_matches(query, &at, slop) {
                    continue;
                }
            }
            let doc_norm = doc_norm(tail.lengths[doc as usize], avg);
            let mut s = 0.0f32;
            for (i, positions) in at.iter().enumerate() {
                let freq = positions.len() as f32;
                s += idfs[i] * (freq * (K1 + 1.0) / (freq + doc_norm));
            }
            if s > 0.0 {
                out.push((tail.row_ids[doc as usize], s));
            }
        }
    }
    out
}

/// The `_rowid` column of a batch `what` produced.
pub(super) fn row_ids<'a>(batch: &'a RecordBatch, what: &str) -> Result<&'a UInt64Array> {
    batch
        .column_by_name(ROW_ID)
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .ok_or_else(|| HostError::internal(format!("{what} returned no _rowid")))
}

/// The cache key of one fragment's tail: the table, the column, the tokenizer, and the
/// fragment's content (its data files, overlays and deletion file).
struct TailKey(String);

impl CacheKey for TailKey {
    type ValueType = TailDocs;
    fn key(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }
    fn type_name() -> &'static str {
        "lance-host/TailDocs"
    }
}

fn tail_key(uri: &str, column: &str, tokenizer: &str, frag: &Fragment) -> TailKey {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{:?}|{:?}|{:?}", frag.overlays, frag.deletion_file, frag.row_id_meta).hash(&mut h);
    let files: Vec<&str> = frag.files.iter().map(|f| f.path.as_str()).collect();
    TailKey(format!(
        "{uri}\u{1}{column}\u{1}{tokenizer}\u{1}{}\u{1}{}\u{1}{:016x}",
        frag.id,
        files.join("\u{2}"),
        h.finish()
    ))
}

/// Read and tokenize one fragment's `column` (every row; deleted rows excluded).
async fn build(ds: Arc<Dataset>, frag: Fragment, column: String, tokenizer: Box<dyn LanceTokenizer>) -> Result<TailDocs> {
    let mut scanner = ds.scan();
    scanner.with_fragments(vec![frag]);
    scanner
        .project(&[column.as_str()])
        .map_err(|e| HostError::from_lance("cannot read the unindexed fragment", e))?;
    scanner.with_row_id();
    let plan = scanner
        .create_plan()
        .await
        .map_err(|e| HostError::from_lance("cannot read the unindexed fragment", e))?;
    let stream = execute_plan(plan, LanceExecutionOptions::default())
        .map_err(|e| HostError::from_lance("cannot read the unindexed fragment", e))?;
    let column = Arc::new(column);
    let parts: Vec<TailDocs> = stream
        .map_err(|e| HostError::internal(format!("cannot read the unindexed fragment: {e}")))
        .map(|batch| {
            let column = column.clone();
            let mut tokenizer = tokenizer.box_clone();
            async move {
                let batch = batch?;
                tokio::task::spawn_blocking(move || TailDocs::from_batch(&batch, &column, &mut tokenizer))
                    .await
                    .map_err(|e| HostError::internal(format!("tokenizing the unindexed fragment failed: {e}")))?
            }
        })
        // One batch per core at a time: this is CPU work of the query itself, so it may use every
        // core (Lance's own CPU pool keeps some for I/O and has one thread on a 2-core machine).
        .buffered(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2))
        .try_collect()
        .await?;
    let mut all = TailDocs::default();
    for p in parts {
        all.append(p);
    }
    all.shrink();
    Ok(all)
}

/// One fragment's tail from `cache`, tokenized now when it is not there. Returns the tail and
/// whether it came from the cache.
pub async fn get(
    cache: &LanceCache,
    ds: Arc<Dataset>,
    frag: Fragment,
    column: &str,
    tokenizer_id: &str,
    tokenizer: Box<dyn LanceTokenizer>,
) -> Result<(Arc<TailDocs>, bool)> {
    let key = tail_key(ds.uri(), column, tokenizer_id, &frag);
    if let Some(t) = cache.get_with_key(&key).await {
        return Ok((t, true));
    }
    let tail = Arc::new(build(ds, frag, column.to_string(), tokenizer).await?);
    cache.insert_with_key(&key, tail.clone()).await;
    Ok((tail, false))
}

/// The row ids of `frag` that `filter` keeps (deleted rows excluded).
pub async fn kept_rows(ds: Arc<Dataset>, frag: Fragment, filter: &str) -> Result<HashSet<u64>> {
    let what = "invalid full-text prefilter";
    let mut scanner = ds.scan();
    scanner.with_fragments(vec![frag]);
    scanner.project::<&str>(&[]).map_err(|e| HostError::from_lance(what, e))?;
    scanner.with_row_id();
    scanner.filter(filter).map_err(|e| HostError::from_lance(what, e))?;
    let plan = scanner.create_plan().await.map_err(|e| HostError::from_lance(what, e))?;
    let mut stream = execute_plan(plan, LanceExecutionOptions::default()).map_err(|e| HostError::from_lance(what, e))?;
    let mut out = HashSet::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| HostError::internal(format!("{what}: {e}")))?;
        let ids = row_ids(&batch, "the prefilter scan")?;
        out.extend(ids.values().iter().copied());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_index::scalar::inverted::query::try_collect_query_tokens;
    use lance_index::scalar::inverted::InvertedIndexParams;

    fn tail_of(first: u64, docs: &[Option<&str>], tokenizer: &mut Box<dyn LanceTokenizer>) -> TailDocs {
        let ids = UInt64Array::from((0..docs.len() as u64).map(|i| first + i).collect::<Vec<_>>());
        let text = arrow::array::StringArray::from(docs.to_vec());
        let batch = RecordBatch::try_from_iter([
            (ROW_ID, Arc::new(ids) as arrow::array::ArrayRef),
            ("text", Arc::new(text) as arrow::array::ArrayRef),
        ])
        .unwrap();
        TailDocs::from_batch(&batch, "text", tokenizer).unwrap()
    }

    #[test]
    fn counts_and_positions_survive_append() {
        let mut tok = InvertedIndexParams::default().build().unwrap();
        let mut a = tail_of(100, &[Some("red fox red"), None, Some("")], &mut tok);
        let b = tail_of(103, &[Some("blue fox"), Some("red")], &mut tok);
        a.append(b);
        assert_eq!(a.row_ids.len(), 3, "null and empty documents are not documents");
        assert_eq!(a.total_tokens, 6);
        let red = &a.terms["red"];
        assert_eq!(red.positions_in(0), &[0, 2]);
        assert_eq!(red.positions_in(2), &[0]);
        assert!(red.positions_in(1).is_empty());
        assert_eq!(a.terms["fox"].docs, vec![0, 1]);
        let tails = vec![(Arc::new(a), None)];
        let c = count(&tails, &["red".to_string(), "fox".to_string(), "green".to_string()]);
        assert_eq!(c, TailCounts { num_docs: 3, total_tokens: 6, docs: vec![2, 2, 0] });
        let allow: HashSet<u64> = [100].into_iter().collect();
        let filtered = vec![(tails[0].0.clone(), Some(allow))];
        let c = count(&filtered, &["fox".to_string()]);
        assert_eq!(c, TailCounts { num_docs: 1, total_tokens: 3, docs: vec![1] });
    }

    #[test]
    fn bm25_parameters_are_lances() {
        let s = MemBM25Scorer::new(1000, 37, HashMap::new());
        for tokens in [1u32, 7, 27, 300] {
            assert_eq!(doc_norm(tokens, s.avg_doc_length()).to_bits(), s.doc_norm(tokens).unwrap().to_bits());
            let expected = s.doc_weight(3, tokens);
            let ours = 3.0f32 * (K1 + 1.0) / (3.0 + doc_norm(tokens, s.avg_doc_length()));
            assert!((expected - ours).abs() <= f32::EPSILON * expected, "{expected} vs {ours}");
        }
    }

    #[test]
    fn phrase_and_and_follow_positions() {
        let mut tok = InvertedIndexParams::default().build().unwrap();
        let tail = Arc::new(tail_of(100, &[Some("quick brown fox"), Some("brown quick fox"), Some("quick fox")], &mut tok));
        let tails = vec![(tail, None)];
        let base = MemBM25Scorer::new(0, 0, HashMap::new());
        let q = try_collect_query_tokens("quick brown", &mut tok).unwrap();
        let terms = vec!["quick".to_string(), "brown".to_string()];
        let s = scorer(&base, &count(&tails, &terms), &terms, &q);
        let ids = |v: Vec<(u64, f32)>| v.into_iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(score(&tails, &q, &s, Operator::Or, None)), vec![100, 101, 102]);
        assert_eq!(ids(score(&tails, &q, &s, Operator::And, None)), vec![100, 101]);
        assert_eq!(ids(score(&tails, &q, &s, Operator::And, Some(0))), vec![100]);
        assert_eq!(ids(score(&tails, &q, &s, Operator::And, Some(2))), vec![100]);
    }
}
