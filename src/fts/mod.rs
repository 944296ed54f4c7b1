//! Full-text search across splits, scored with one corpus's BM25 statistics on every worker.
//!
//! BM25 needs corpus statistics: the number of documents, their total length and, per query
//! term, how many documents contain it. A split scored with its own statistics gives scores
//! that cannot be compared with another split's. Here the coordinator computes them once
//! ([`corpus_stats`]) and ships them as bytes with each split; a worker scores its split with
//! them ([`search_split`]) and never opens another segment's files.
//!
//! The statistics are Lance's own, so that the merged top-k equals Lance's single-process
//! search on the same snapshot:
//! - the *indexed* part is the sum over every segment of the column's INVERTED index of what
//!   the segment stores (like Lance, a segment's statistics still count rows deleted after it
//!   was built);
//! - the *flat* part is counted per unindexed fragment, over the rows the query's prefilter
//!   keeps (deleted rows excluded), tokenized with the index's tokenizer.
//!
//! Segment splits are scored with the indexed part (as Lance scores its indexed rows); flat
//! splits with the indexed part plus every unindexed fragment's part (as Lance scores its
//! unindexed rows).
//!
//! A split that is the whole corpus — every segment of the index, on a snapshot without
//! unindexed fragments — may be searched without shipped statistics: Lance's segment search
//! then computes them itself, from the same segment figures, in the same task ([`search_split`] with `None`).

mod tail;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Float32Array, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lance::deps::datafusion::physical_plan::ExecutionPlan;
use lance::index::DatasetIndexExt;
use lance::io::exec::fts::{MatchQueryExec, PhraseQueryExec};
use lance::io::exec::PreFilterSource;
use lance::Dataset;
use lance_datafusion::exec::{execute_plan, LanceExecutionOptions};
use lance_index::metrics::NoOpMetricsCollector;
use lance_index::scalar::inverted::query::{
    try_collect_query_tokens, FtsSearchParams, MatchQuery, Operator, PhraseQuery, Tokens,
};
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_index::scalar::inverted::{
    DocumentGranularity,
    InvertedIndex, InvertedIndexParams, MemBM25Scorer,
};
use lance_table::format::IndexMetadata;
use uuid::Uuid;
use prost::Message;

use crate::error::{HostError, LanceErrorCode, Result};
use crate::index::{self, IndexInfo};
use crate::bytes::Reader;
use crate::split::{segment_and_flat_splits, Split, SplitKind, SplitPlan};
use crate::scan::{self, BatchReader, ROW_ID};
use crate::session;
use crate::columns::{DISTANCE, RELEVANCE, SCORE};
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};

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
    fn code(self) -> (u8, u32) {
        match self {
            TextMatch::Any => (0, 0),
            TextMatch::All => (1, 0),
            TextMatch::Phrase { slop } => (2, slop),
        }
    }

    fn from_code(code: u8, slop: u32) -> Option<Self> {
        match code {
            0 => Some(TextMatch::Any),
            1 => Some(TextMatch::All),
            2 => Some(TextMatch::Phrase { slop }),
            _ => None,
        }
    }

    fn describe(self) -> String {
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
    fn validate(&self) -> Result<()> {
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
    fn of_segment((total_tokens, num_docs, docs): (u64, usize, Vec<usize>)) -> TermCounts {
        TermCounts { total_tokens, num_docs: num_docs as u64, docs: docs.into_iter().map(|d| d as u64).collect() }
    }

    fn add(&mut self, other: &TermCounts) -> Result<()> {
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
    fn scorer(&self, counts: &TermCounts) -> MemBM25Scorer {
        let token_docs = self
            .terms
            .iter()
            .cloned()
            .zip(counts.docs.iter().map(|d| *d as usize))
            .collect();
        MemBM25Scorer::new(counts.total_tokens, counts.num_docs as usize, token_docs)
    }

    /// Check the statistics belong to `split`'s table, version and column and to `q`.
    fn check(&self, split: &Split, q: &TextQuery) -> Result<()> {
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

fn lance_err(context: &str) -> impl Fn(lance::Error) -> HostError + '_ {
    move |e| HostError::from_lance(context, e)
}

fn df_err(context: &str, e: impl std::fmt::Display) -> HostError {
    HostError::from_engine(context, e)
}

/// The column must be a string column of the snapshot.
fn text_column(snapshot: &Snapshot, column: &str) -> Result<()> {
    let field = snapshot.dataset.schema().field(column).ok_or_else(|| {
        HostError::invalid(format!(
            "unknown column '{column}' (table '{}' at version {})",
            snapshot.uri(),
            snapshot.version()
        ))
    })?;
    match field.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(()),
        other => Err(HostError::invalid(format!(
            "column '{column}' is not a text column (type {other}); full-text search needs a string column with an INVERTED index"
        ))),
    }
}

/// The INVERTED index of `column`; a column without one is INVALID_ARGUMENT (full-text search
/// here always uses the index: create one with Lance).
fn inverted_index(snapshot: &Snapshot, column: &str) -> Result<IndexInfo> {
    text_column(snapshot, column)?;
    index::list_indexes(snapshot)?
        .into_iter()
        .find(|i| i.column == column && i.index_type.eq_ignore_ascii_case("INVERTED"))
        .ok_or_else(|| {
            HostError::invalid(format!(
                "column '{column}' of table '{}' at version {} has no INVERTED index; full-text search needs one (create it with Lance's create_scalar_index)",
                snapshot.uri(),
                snapshot.version()
            ))
        })
}

/// Full-text splits for `column`: one TEXT_SEGMENT split per physical segment of its INVERTED
/// index plus TEXT_FLAT splits over the visible fragments no segment covers (one per fragment
/// when `flat_target_rows` is 0, else grouped up to that many rows).
pub fn plan_text(snapshot: &Snapshot, column: &str, flat_target_rows: u64) -> Result<SplitPlan> {
    crate::metrics::op(crate::metrics::Op::Plan);
    let index = inverted_index(snapshot, column)?;
    let splits = segment_and_flat_splits(
        snapshot,
        column,
        Some(&index),
        None,
        flat_target_rows,
        (SplitKind::TextSegment, SplitKind::TextFlat),
    )?;
    let reason = format!(
        "using INVERTED index '{}' ({} segment(s)); unindexed fragments are tokenized and scored flat",
        index.name,
        index.segments.len()
    );
    Ok(SplitPlan { splits, index_name: Some(index.name), reason, metric: None })
}

async fn segment_metas(ds: &Dataset, name: &str) -> lance::Result<Vec<IndexMetadata>> {
    ds.load_indices_by_name(name).await
}

/// The tokenizer the index was built with, from the index metadata in the manifest (no index
/// file is read); an index without recorded parameters is opened to ask it. Also returns the
/// tokenizer's identity for the tail cache: the recorded parameters, else the segment.
async fn index_tokenizer(
    ds: &Dataset,
    column: &str,
    metas: &[IndexMetadata],
) -> lance::Result<(Box<dyn LanceTokenizer>, String)> {
    let details = metas.iter().find_map(|m| m.index_details.clone());
    if let Some(any) = details {
        if let Ok(d) = lance_index::pbold::InvertedIndexDetails::decode(any.value.as_slice()) {
            if let Ok(params) = InvertedIndexParams::try_from(&d) {
                let id: String = any.value.iter().map(|b| format!("{b:02x}")).collect();
                return Ok((params.build()?, format!("{}:{id}", any.type_url)));
            }
        }
    }
    let first = metas
        .first()
        .ok_or_else(|| lance::Error::invalid_input("the INVERTED index has no segments"))?;
    Ok((open_segment(ds, column, first).await?.tokenizer(), format!("segment:{}", first.uuid)))
}

async fn open_segment(
    ds: &Dataset,
    column: &str,
    meta: &IndexMetadata,
) -> lance::Result<Arc<InvertedIndex>> {
    let opened = lance::index::scalar::open_scalar_index(ds, column, meta, &NoOpMetricsCollector).await?;
    opened
        .as_any()
        .downcast_ref::<InvertedIndex>()
        .map(|i| Arc::new(i.clone()))
        .ok_or_else(|| {
            lance::Error::invalid_input(format!("segment {} of column {column} is not an INVERTED index", meta.uuid))
        })
}

fn query_tokens(text: &str, tokenizer: &mut Box<dyn LanceTokenizer>) -> Result<Tokens> {
    try_collect_query_tokens(text, tokenizer).map_err(|e| HostError::from_lance("cannot tokenize the query", e))
}

fn distinct_terms(tokens: &Tokens) -> Vec<String> {
    let mut seen = HashSet::new();
    tokens.into_iter().filter(|t| seen.insert(t.to_string())).cloned().collect()
}

/// The tails of `frags` (from the session's cache, tokenized now where missing), each with the
/// row ids the query's prefilter keeps (`None`: no prefilter). Cache hits and misses are added
/// to `stats`.
async fn tails(
    ds: &Arc<Dataset>,
    frags: Vec<lance_table::format::Fragment>,
    q: &TextQuery,
    tokenizer: &(Box<dyn LanceTokenizer>, String),
    stats: &OpStats,
) -> Result<Vec<(Arc<tail::TailDocs>, Option<HashSet<u64>>)>> {
    let cache = session::global()?.text_tail_cache.clone();
    let mut out = Vec::with_capacity(frags.len());
    for frag in frags {
        let kept = match q.prefilter.as_deref() {
            Some(f) => Some(tail::kept_rows(ds.clone(), frag.clone(), f).await?),
            None => None,
        };
        let (docs, hit) =
            tail::get(&cache, ds.clone(), frag, &q.column, &tokenizer.1, tokenizer.0.box_clone()).await?;
        stats.add_index_cache(hit as u64, !hit as u64);
        out.push((docs, kept));
    }
    Ok(out)
}

fn operator(kind: TextMatch) -> (Operator, Option<u32>) {
    match kind {
        TextMatch::Any => (Operator::Or, None),
        TextMatch::All => (Operator::And, None),
        TextMatch::Phrase { slop } => (Operator::And, Some(slop)),
    }
}

/// The ids of the snapshot's visible fragments no segment of `index` covers (scored flat).
fn unindexed_fragments(snapshot: &Snapshot, index: &IndexInfo) -> Result<Vec<u64>> {
    let covered: HashSet<u64> = index.segments.iter().flat_map(|s| s.fragment_ids.iter().copied()).collect();
    Ok(snapshot.fragments()?.into_iter().map(|f| f.id).filter(|id| !covered.contains(id)).collect())
}

/// Compute the BM25 statistics of `q` over the whole snapshot (every segment of the column's
/// INVERTED index and every unindexed fragment, through the prefilter). Reads each segment's
/// statistics and tokenizes the unindexed fragments once. Also returns the I/O it caused.
pub fn corpus_stats(snapshot: &Snapshot, q: &TextQuery) -> Result<(CorpusStats, IoStats)> {
    q.validate()?;
    let index = inverted_index(snapshot, &q.column)?;
    if let Some(f) = &q.prefilter {
        scan::check_sql_filter(snapshot, f)?;
    }
    let stats = OpStats::default();
    let ds = stats.dataset(snapshot);
    let frags = scan::resolve_fragments(snapshot, &unindexed_fragments(snapshot, &index)?)?;
    let q2 = q.clone();
    let name = index.name.clone();
    let stats2 = stats.clone();
    let work = async move {
        let what = "cannot compute full-text corpus statistics";
        let metas = segment_metas(&ds, &name).await.map_err(lance_err(what))?;
        let mut tokenizer = index_tokenizer(&ds, &q2.column, &metas).await.map_err(lance_err(what))?;
        let terms = distinct_terms(&query_tokens(&q2.text, &mut tokenizer.0)?);
        let segments = futures::future::try_join_all(metas.iter().map(|m| open_segment(&ds, &q2.column, m)))
            .await
            .map_err(lance_err(what))?;
        let mut indexed = TermCounts { docs: vec![0; terms.len()], ..Default::default() };
        // The segments' figures for the terms, read at once (a term first seen reads its
        // posting lengths in every segment).
        let per_segment = futures::future::try_join_all(segments.iter().map(|seg| seg.bm25_stats_for_terms(&terms, None)))
            .await
            .map_err(lance_err(what))?;
        for figures in per_segment {
            indexed.add(&TermCounts::of_segment(figures))?;
        }
        let mut flat = Vec::with_capacity(frags.len());
        let ids: Vec<u64> = frags.iter().map(|f| f.id).collect();
        let parts = tails(&ds, frags, &q2, &tokenizer, &stats2).await?;
        for (id, part) in ids.into_iter().zip(parts) {
            // A query without terms matches nothing and counts nothing (as Lance's flat search).
            let counts = if terms.is_empty() {
                TermCounts::default()
            } else {
                let c = tail::count(&[part], &terms);
                TermCounts { total_tokens: c.total_tokens, num_docs: c.num_docs, docs: c.docs }
            };
            flat.push((id, counts));
        }
        Ok::<_, HostError>((terms, indexed, flat))
    };
    let (terms, indexed, flat) = session::run_on_worker(work)??;
    Ok((
        CorpusStats {
            uri: snapshot.uri().to_string(),
            version: snapshot.version(),
            column: q.column.clone(),
            index_name: index.name,
            text: q.text.clone(),
            kind: q.kind,
            prefilter: q.prefilter.clone(),
            terms,
            indexed,
            flat,
        },
        stats.snapshot(),
    ))
}

/// Row ids and scores of one split's matches, best first, at most k.
struct Scored {
    row_ids: Vec<u64>,
    scores: Vec<f32>,
}

fn top_k(batches: &[RecordBatch], k: usize) -> Result<Scored> {
    let mut all: Vec<(f32, u64)> = Vec::new();
    for b in batches {
        let ids = tail::row_ids(b, "full-text results")?;
        let scores = b
            .column_by_name(SCORE)
            .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
            .ok_or_else(|| HostError::internal("full-text results lack _score"))?;
        for i in 0..b.num_rows() {
            all.push((scores.value(i), ids.value(i)));
        }
    }
    Ok(best(all, k))
}

/// The k best (score, row id) pairs: score descending, ties by row id ascending.
fn best(mut all: Vec<(f32, u64)>, k: usize) -> Scored {
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    Scored { row_ids: all.iter().map(|a| a.1).collect(), scores: all.iter().map(|a| a.0).collect() }
}

fn segment_exec(
    ds: Arc<Dataset>,
    split: &Split,
    q: &TextQuery,
    k: usize,
    prefilter: PreFilterSource,
    base: Option<MemBM25Scorer>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let segments = split.segments.clone();
    let params = FtsSearchParams::new().with_limit(Some(k));
    let column = Some(q.column.clone());
    let what = "invalid full-text query";
    Ok(match q.kind {
        TextMatch::Any | TextMatch::All => {
            let op = if q.kind == TextMatch::Any { Operator::Or } else { Operator::And };
            let query = MatchQuery::new(q.text.clone())
                .with_column(column)
                .with_operator(op)
                .with_document_granularity(DocumentGranularity::Row);
            let exec = MatchQueryExec::new_with_segment_uuids(ds, query, params, prefilter, segments)
                .map_err(lance_err(what))?;
            Arc::new(match base {
                Some(base) => exec.with_base_scorer(Arc::new(base)),
                None => exec,
            })
        }
        TextMatch::Phrase { slop } => {
            let query = PhraseQuery::new(q.text.clone())
                .with_column(column)
                .with_slop(slop)
                .with_document_granularity(DocumentGranularity::Row);
            let exec = PhraseQueryExec::new_with_segment_uuids(ds, query, params, prefilter, segments)
                .map_err(lance_err(what))?;
            Arc::new(match base {
                Some(base) => exec.with_base_scorer(Arc::new(base)),
                None => exec,
            })
        }
    })
}

/// The prefilter of a segment split: the row ids of its fragments the filter keeps.
async fn segment_prefilter(
    ds: Arc<Dataset>,
    fragments: Vec<lance_table::format::Fragment>,
    filter: Option<&str>,
) -> lance::Result<PreFilterSource> {
    let Some(filter) = filter else {
        // Deletions are applied by Lance's own prefilter of the segment search.
        return Ok(PreFilterSource::None);
    };
    let mut scanner = ds.scan();
    scanner.with_fragments(fragments);
    scanner.project::<&str>(&[])?;
    scanner.with_row_id();
    scanner.filter(filter)?;
    Ok(PreFilterSource::FilteredRowIds(scanner.create_plan().await?))
}

struct Prepared {
    k: usize,
    stats: OpStats,
}

fn prepare(snapshot: &Snapshot, split: &Split, q: &TextQuery, corpus: Option<&CorpusStats>) -> Result<Prepared> {
    split.check_snapshot(snapshot)?;
    if !matches!(split.kind, SplitKind::TextSegment | SplitKind::TextFlat) {
        return Err(HostError::invalid(format!(
            "split kind {:?} cannot run a full-text search; plan with the full-text planner",
            split.kind
        )));
    }
    q.validate()?;
    if q.column != split.column {
        return Err(HostError::invalid(format!(
            "query column '{}' differs from the split's column '{}'",
            q.column, split.column
        )));
    }
    match corpus {
        Some(corpus) => corpus.check(split, q)?,
        None => check_whole_corpus(snapshot, split)?,
    }
    scan::validate_columns(snapshot, &q.columns)?;
    if let Some(f) = &q.prefilter {
        scan::check_sql_filter(snapshot, f)?;
    }
    let rows = split.row_count.max(1);
    let k = usize::try_from(q.k.min(rows)).map_err(|_| HostError::invalid("k is too large"))?;
    Ok(Prepared { k, stats: OpStats::default() })
}

/// Without shipped statistics a split must be the whole corpus, so that the statistics Lance's
/// search computes from the segments it opens are the corpus's: a TEXT_SEGMENT split with every
/// segment of the index, on a snapshot where the index covers every visible fragment. Anything
/// else is INVALID_ARGUMENT (its scores would not be comparable with the other splits').
fn check_whole_corpus(snapshot: &Snapshot, split: &Split) -> Result<()> {
    let need = "pass the corpus statistics from lance_dataset_fts_stats";
    if split.kind != SplitKind::TextSegment {
        return Err(HostError::invalid(format!(
            "a full-text flat split is scored with the statistics of the whole corpus, the index's segments included: {need}"
        )));
    }
    let index = inverted_index(snapshot, &split.column)?;
    if index.name != split.index_name {
        return Err(HostError::invalid(format!(
            "the split searches index '{}', but column '{}' is indexed by '{}' at version {}: plan again",
            split.index_name,
            split.column,
            index.name,
            snapshot.version()
        )));
    }
    let have: HashSet<Uuid> = split.segments.iter().copied().collect();
    let missing = index.segments.iter().filter(|s| !have.contains(&s.uuid)).count();
    if missing > 0 {
        return Err(HostError::invalid(format!(
            "the split holds {} of the {} segments of index '{}' (combine every segment split into one to search without statistics): {need}",
            index.segments.len() - missing,
            index.segments.len(),
            index.name
        )));
    }
    let unindexed = unindexed_fragments(snapshot, &index)?.len();
    if unindexed > 0 {
        return Err(HostError::invalid(format!(
            "{unindexed} fragment(s) of table '{}' at version {} are not covered by index '{}' and count in the corpus: {need}",
            snapshot.uri(),
            snapshot.version(),
            index.name
        )));
    }
    Ok(())
}

/// The flat statistics a TEXT_FLAT split is scored with, minus its own fragments' part (Lance's
/// flat search adds the rows it reads itself).
fn flat_base(split: &Split, corpus: &CorpusStats) -> Result<MemBM25Scorer> {
    let mut base = corpus.indexed.clone();
    let own: HashSet<u64> = split.fragment_ids.iter().copied().collect();
    for id in &split.fragment_ids {
        if !corpus.flat.iter().any(|(f, _)| f == id) {
            return Err(HostError::new(
                LanceErrorCode::LANCE_ERR_CORRUPT,
                format!("the corpus statistics have no part for unindexed fragment {id} of this split"),
            ));
        }
    }
    for (id, part) in &corpus.flat {
        if !own.contains(id) {
            base.add(part)?;
        }
    }
    Ok(corpus.scorer(&base))
}

/// Execute a full-text split with the coordinator's statistics: a TEXT_SEGMENT split searches
/// its segment, a TEXT_FLAT split tokenizes and scores its fragments. Output: the projected
/// columns, `_score` (float32, descending; ties by `_rowid` ascending) and `_rowid` when asked;
/// at most k rows. `corpus` None: the split must be the whole corpus (every segment, no
/// unindexed fragment) and the search computes the statistics itself, as Lance's does.
pub fn search_split(
    snapshot: &Snapshot,
    split: &Split,
    q: &TextQuery,
    corpus: Option<&CorpusStats>,
) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Search);
    search_split_inner(snapshot, split, q, corpus).map_err(|e| e.with_local_paths(snapshot.uri()))
}

fn search_split_inner(
    snapshot: &Snapshot,
    split: &Split,
    q: &TextQuery,
    corpus: Option<&CorpusStats>,
) -> Result<BatchReader> {
    let p = prepare(snapshot, split, q, corpus)?;
    let ds = p.stats.dataset(snapshot);
    let frags = scan::resolve_fragments(snapshot, &split.fragment_ids)?;
    let scored = match split.kind {
        SplitKind::TextSegment => {
            let base = corpus.map(|c| c.scorer(&c.indexed));
            let (ds2, q2, split2, k, stats2) = (ds.clone(), q.clone(), split.clone(), p.k, p.stats.clone());
            session::run_on_worker(async move {
                let prefilter = segment_prefilter(ds2.clone(), frags, q2.prefilter.as_deref())
                    .await
                    .map_err(lance_err("invalid full-text prefilter"))?;
                let exec = segment_exec(ds2, &split2, &q2, k, prefilter, base)?;
                let stream = execute_plan(exec.clone(), LanceExecutionOptions::default())
                    .map_err(lance_err("full-text search failed"))?;
                let batches: Vec<RecordBatch> = stream
                    .try_collect()
                    .await
                    .map_err(|e| df_err("full-text search of the index segment failed", e))?;
                if let Some(m) = exec.metrics() {
                    let count = |name| m.sum_by_name(name).map(|v| v.as_usize() as u64).unwrap_or(0);
                    stats2.add_index_cache(
                        count(lance_datafusion::utils::INDEX_CACHE_HITS_METRIC),
                        count(lance_datafusion::utils::INDEX_CACHE_MISSES_METRIC),
                    );
                }
                top_k(&batches, k)
            })??
        }
        _ => {
            let corpus = corpus.ok_or_else(|| HostError::internal("a flat split reached the search without statistics"))?;
            let base = flat_base(split, corpus)?;
            let (ds2, q2, k, stats2) = (ds.clone(), q.clone(), p.k, p.stats.clone());
            session::block_on(async move {
                let metas = segment_metas(&ds2, &corpus_index(corpus)).await.map_err(lance_err("cannot read index metadata"))?;
                let mut tokenizer = index_tokenizer(&ds2, &q2.column, &metas)
                    .await
                    .map_err(lance_err("cannot build the index's tokenizer"))?;
                let query = query_tokens(&q2.text, &mut tokenizer.0)?;
                let terms = distinct_terms(&query);
                let parts = tails(&ds2, frags, &q2, &tokenizer, &stats2).await?;
                // Scored as Lance's flat search scores: the shipped statistics of the rest of
                // the corpus plus what these rows contribute themselves.
                let scorer = tail::scorer(&base, &tail::count(&parts, &terms), &terms, &query);
                let (op, slop) = operator(q2.kind);
                let scored = tail::score(&parts, &query, &scorer, op, slop);
                Ok::<_, HostError>(best(scored.into_iter().map(|(id, s)| (s, id)).collect(), k))
            })??
        }
    };
    let batch = materialize(snapshot, ds, q, &scored)?;
    Ok(BatchReader::from_batch(batch).with_stats(p.stats))
}

fn corpus_index(corpus: &CorpusStats) -> String {
    corpus.index_name.clone()
}

/// The projected columns of the matched rows (one take), then `_score` and `_rowid`.
fn materialize(snapshot: &Snapshot, ds: Arc<Dataset>, q: &TextQuery, scored: &Scored) -> Result<RecordBatch> {
    let schema = snapshot.arrow_schema();
    let data_cols: Vec<String> = if q.columns.is_empty() {
        schema.fields().iter().map(|f| f.name().clone()).collect()
    } else {
        q.columns.iter().filter(|c| c.as_str() != ROW_ID && c.as_str() != SCORE).cloned().collect()
    };
    let with_row_id = q.with_row_id || q.columns.iter().any(|c| c == ROW_ID);
    let mut fields: Vec<Field> = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    if !data_cols.is_empty() {
        let mut unique = scored.row_ids.clone();
        unique.sort_unstable();
        unique.dedup();
        if unique.is_empty() {
            for name in &data_cols {
                let f = schema
                    .field_with_name(name)
                    .map_err(|_| HostError::invalid(format!("unknown column '{name}'")))?
                    .clone();
                arrays.push(arrow::array::new_empty_array(f.data_type()));
                fields.push(f);
            }
        } else {
            let fetched = crate::take::fetch_found_rows(snapshot, ds, &unique, &data_cols, "matched")?;
            let position: HashMap<u64, u32> = unique.iter().enumerate().map(|(i, id)| (*id, i as u32)).collect();
            let indices = UInt32Array::from(scored.row_ids.iter().map(|id| position[id]).collect::<Vec<_>>());
            for name in &data_cols {
                let (i, f) = fetched
                    .schema()
                    .column_with_name(name)
                    .map(|(i, f)| (i, f.clone()))
                    .ok_or_else(|| HostError::internal(format!("take result lacks column '{name}'")))?;
                arrays.push(
                    arrow::compute::take(fetched.column(i).as_ref(), &indices, None)
                        .map_err(|e| HostError::internal(format!("cannot order rows: {e}")))?,
                );
                fields.push(f);
            }
        }
    }
    fields.push(Field::new(SCORE, DataType::Float32, false));
    arrays.push(Arc::new(Float32Array::from(scored.scores.clone())));
    if with_row_id {
        fields.push(Field::new(ROW_ID, DataType::UInt64, false));
        arrays.push(Arc::new(UInt64Array::from(scored.row_ids.clone())));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| HostError::internal(format!("cannot build full-text result: {e}")))
}

/// Describe what a full-text split search runs: the INVERTED index and segment (with Lance's
/// plan text of the segment search) or the flat pass over the split's fragments. `corpus` as
/// for [`search_split`].
pub fn explain_split(snapshot: &Snapshot, split: &Split, q: &TextQuery, corpus: Option<&CorpusStats>) -> Result<String> {
    let p = prepare(snapshot, split, q, corpus)?;
    let head = format!(
        "lance-host full-text split: {} query '{}' on column '{}', k={}, prefilter={}\n",
        q.kind.describe(),
        q.text,
        q.column,
        p.k,
        q.prefilter.as_deref().unwrap_or("none")
    );
    match split.kind {
        SplitKind::TextSegment => {
            let segs: Vec<String> = split.segments.iter().map(Uuid::to_string).collect();
            let exec = segment_exec(
                snapshot.dataset.clone(),
                split,
                q,
                p.k,
                PreFilterSource::None,
                corpus.map(|c| c.scorer(&c.indexed)),
            )?;
            let plan = crate::error::local_paths(
                snapshot.uri(),
                &lance::deps::datafusion::physical_plan::displayable(exec.as_ref()).indent(true).to_string(),
            );
            let scored = match corpus {
                Some(c) => format!("scored with the shipped corpus statistics ({} documents)", c.indexed.num_docs),
                None => "the whole corpus, scored with the statistics the search computes from its segments".to_string(),
            };
            Ok(format!(
                "{head}INVERTED index '{}' {} {} over fragments {:?}, {scored}\n{plan}",
                split.index_name,
                if segs.len() == 1 { "segment" } else { "segments" },
                segs.join(", "),
                split.fragment_ids,
            ))
        }
        _ => Ok(format!(
            "{head}flat: tokenize and score fragments {:?} (not covered by INVERTED index '{}') with the shipped corpus statistics\n",
            split.fragment_ids, split.index_name
        )),
    }
}

/// The corpus statistics a split would score with when none are shipped: only the split's own
/// part (what a worker that knows nothing else would use). Exists to show why shipped
/// statistics matter; not exported.
pub fn local_only_stats(snapshot: &Snapshot, split: &Split, q: &TextQuery) -> Result<CorpusStats> {
    let (mut corpus, _) = corpus_stats(snapshot, q)?;
    if split.kind == SplitKind::TextSegment {
        let segs = split.segments.clone();
        let (ds, name, column, terms) =
            (snapshot.dataset.clone(), corpus.index_name.clone(), q.column.clone(), corpus.terms.clone());
        let per_segment = session::block_on(async move {
            let metas = segment_metas(&ds, &name).await?;
            let mut counts = Vec::with_capacity(segs.len());
            for seg in segs {
                let meta = metas.iter().find(|m| m.uuid == seg).ok_or_else(|| {
                    lance::Error::invalid_input(format!("index '{name}' has no segment {seg}"))
                })?;
                let opened = open_segment(&ds, &column, meta).await?;
                counts.push(opened.bm25_stats_for_terms(&terms, None).await?);
            }
            lance::Result::Ok(counts)
        })?
        .map_err(lance_err("cannot read segment statistics"))?;
        let mut indexed = TermCounts { docs: vec![0; corpus.terms.len()], ..Default::default() };
        for figures in per_segment {
            indexed.add(&TermCounts::of_segment(figures))?;
        }
        corpus.indexed = indexed;
        corpus.flat.clear();
    } else {
        corpus.indexed = TermCounts { docs: vec![0; corpus.terms.len()], ..Default::default() };
        corpus.flat.retain(|(id, _)| split.fragment_ids.contains(id));
    }
    Ok(corpus)
}

// ---- Reciprocal rank fusion -----------------------------------------------------------------

/// Fuse a vector result (ranked by `_distance` ascending) and a full-text result (ranked by
/// `_score` descending) by reciprocal rank: each row's `_relevance_score` is the sum over the
/// lists it appears in of `1 / (rrf_k + rank)`, rank starting at 1 (ties in a list ranked by
/// `_rowid`). Returns the `k` best rows (`_relevance_score` descending, ties by `_rowid`) with
/// `_rowid`, `_relevance_score`, and `_distance` / `_score` (null where the row is absent from
/// that list).
pub fn rrf_merge(
    vector: Box<dyn arrow::array::RecordBatchReader + Send>,
    text: Box<dyn arrow::array::RecordBatchReader + Send>,
    k: u64,
    rrf_k: f64,
) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Merge);
    if k == 0 {
        return Err(HostError::invalid("k must be at least 1"));
    }
    if !rrf_k.is_finite() || rrf_k < 0.0 {
        return Err(HostError::invalid(format!("the RRF constant must be finite and >= 0 (got {rrf_k})")));
    }
    let ranked_vec = ranked(vector, DISTANCE, false, "vector")?;
    let ranked_text = ranked(text, SCORE, true, "full-text")?;
    let mut fused: HashMap<u64, (f64, Option<f32>, Option<f32>)> = HashMap::new();
    for (rank, (id, d)) in ranked_vec.iter().enumerate() {
        let e = fused.entry(*id).or_insert((0.0, None, None));
        if e.1.is_none() {
            e.0 += 1.0 / (rrf_k + rank as f64 + 1.0);
            e.1 = Some(*d);
        }
    }
    for (rank, (id, s)) in ranked_text.iter().enumerate() {
        let e = fused.entry(*id).or_insert((0.0, None, None));
        if e.2.is_none() {
            e.0 += 1.0 / (rrf_k + rank as f64 + 1.0);
            e.2 = Some(*s);
        }
    }
    let mut rows: Vec<(u64, f64, Option<f32>, Option<f32>)> =
        fused.into_iter().map(|(id, (r, d, s))| (id, r, d, s)).collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    rows.truncate(usize::try_from(k).unwrap_or(usize::MAX));
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new(ROW_ID, DataType::UInt64, false),
        Field::new(RELEVANCE, DataType::Float32, false),
        Field::new(DISTANCE, DataType::Float32, true),
        Field::new(SCORE, DataType::Float32, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>())),
            Arc::new(Float32Array::from(rows.iter().map(|r| r.1 as f32).collect::<Vec<_>>())),
            Arc::new(Float32Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())),
            Arc::new(Float32Array::from(rows.iter().map(|r| r.3).collect::<Vec<_>>())),
        ],
    )
    .map_err(|e| HostError::internal(format!("cannot build fused result: {e}")))?;
    Ok(BatchReader::from_batch(batch))
}

/// (row id, value) of every row of `input`, ranked by `column` (descending when `desc`), ties
/// by row id.
fn ranked(
    input: Box<dyn arrow::array::RecordBatchReader + Send>,
    column: &str,
    desc: bool,
    what: &str,
) -> Result<Vec<(u64, f32)>> {
    let schema = input.schema();
    let vi = schema
        .index_of(column)
        .map_err(|_| HostError::invalid(format!("the {what} stream lacks a '{column}' column")))?;
    let ri = schema
        .index_of(ROW_ID)
        .map_err(|_| HostError::invalid(format!("the {what} stream lacks a '_rowid' column")))?;
    let mut out = Vec::new();
    for b in input {
        let b = b.map_err(|e| HostError::new(LanceErrorCode::LANCE_ERR_IO, format!("the {what} stream failed: {e}")))?;
        let v = b
            .column(vi)
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| HostError::invalid(format!("'{column}' of the {what} stream must be float32")))?;
        let r = b
            .column(ri)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| HostError::invalid(format!("'_rowid' of the {what} stream must be uint64")))?;
        for i in 0..b.num_rows() {
            let x = if v.is_null(i) {
                if desc { f32::NEG_INFINITY } else { f32::INFINITY }
            } else {
                v.value(i)
            };
            out.push((r.value(i), x));
        }
    }
    out.sort_by(|a, b| {
        let o = if desc { b.1.total_cmp(&a.1) } else { a.1.total_cmp(&b.1) };
        o.then(a.0.cmp(&b.0))
    });
    Ok(out)
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

    fn reader(batch: RecordBatch) -> Box<dyn arrow::array::RecordBatchReader + Send> {
        Box::new(arrow::array::RecordBatchIterator::new(vec![Ok(batch.clone())], batch.schema()))
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let vec_batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(DISTANCE, DataType::Float32, true),
                Field::new(ROW_ID, DataType::UInt64, false),
            ])),
            vec![Arc::new(Float32Array::from(vec![0.5, 0.1, 0.9])), Arc::new(UInt64Array::from(vec![10, 20, 30]))],
        )
        .unwrap();
        let text_batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(SCORE, DataType::Float32, false),
                Field::new(ROW_ID, DataType::UInt64, false),
            ])),
            vec![Arc::new(Float32Array::from(vec![3.0, 7.0])), Arc::new(UInt64Array::from(vec![30, 40]))],
        )
        .unwrap();
        let out: Vec<RecordBatch> =
            rrf_merge(reader(vec_batch), reader(text_batch), 10, 60.0).unwrap().collect_batches().unwrap();
        let b = &out[0];
        let ids = b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap().values().to_vec();
        let rel = b.column(1).as_any().downcast_ref::<Float32Array>().unwrap().values().to_vec();
        // vector ranks: 20 (1), 10 (2), 30 (3); text ranks: 40 (1), 30 (2).
        let expect = |ranks: &[f64]| ranks.iter().map(|r| 1.0 / (60.0 + r)).sum::<f64>() as f32;
        let mut want = vec![
            (30u64, expect(&[3.0, 2.0])),
            (20, expect(&[1.0])),
            (40, expect(&[1.0])),
            (10, expect(&[2.0])),
        ];
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        assert_eq!(ids, want.iter().map(|w| w.0).collect::<Vec<_>>());
        assert_eq!(rel, want.iter().map(|w| w.1).collect::<Vec<_>>());
        let d = b.column(2).as_any().downcast_ref::<Float32Array>().unwrap();
        let pos40 = ids.iter().position(|i| *i == 40).unwrap();
        assert!(d.is_null(pos40), "a row only in the text list has no distance");
    }
}
