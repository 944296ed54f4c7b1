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

mod query;
mod rrf;
mod tail;

pub use query::{CorpusStats, TermCounts, TextMatch, TextQuery, MAX_K, STATS_FORMAT};
pub use rrf::rrf_merge;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Float32Array, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
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
use crate::split::{segment_and_flat_splits, Split, SplitKind, SplitPlan};
use crate::scan::{self, BatchReader, ROW_ID};
use crate::session;
use crate::columns::SCORE;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};

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
