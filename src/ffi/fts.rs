//! C ABI of full-text search across splits: planning, corpus statistics, per-split search, the
//! score merge and reciprocal-rank fusion.

use std::ffi::c_char;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::error::{HostError, Result};
use crate::fts::{self, CorpusStats, TextMatch, TextQuery};
use crate::merge;

use super::handles::{LanceDataset, LanceIoStats, LanceSplit, LanceSplitPlan};
use super::split::export_plan;
use super::scan::{export_stream, import_stream};
use super::search::import_streams;
use crate::io_stats::OpStats;
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{
    guard_code, handle_ref, into_array, opt_str_arg, out_arg, slice_arg, str_arg, str_list_arg,
};

/// How the terms of a full-text query match.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceTextMatch {
    /// Rows containing at least one of the terms (OR).
    LANCE_TEXT_MATCH_ANY = 0,
    /// Rows containing every term (AND).
    LANCE_TEXT_MATCH_ALL = 1,
    /// Rows containing the terms as a phrase, at most `slop` positions apart.
    LANCE_TEXT_MATCH_PHRASE = 2,
}

/// A full-text query. Initialise with `lance_text_query_init(&q, sizeof q)`, then set what you
/// need. Every pointer inside is borrowed for the duration of the call that receives the query.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceTextQuery {
    /// `sizeof(LanceTextQuery)` as the caller compiled it; set by `lance_text_query_init`.
    pub struct_size: usize,
    /// The text column; it must have an INVERTED index.
    pub column: *const c_char,
    /// The query text (UTF-8, not empty), tokenized with the index's tokenizer.
    pub text: *const c_char,
    /// A `LanceTextMatch` value; default LANCE_TEXT_MATCH_ANY.
    pub match_kind: i32,
    /// Phrase queries: positions allowed between the terms (0 = adjacent). Must be 0 otherwise.
    pub slop: u32,
    /// Results per split, 1 to 1048576; default 10.
    pub k: u64,
    /// SQL filter: only rows it keeps are searched and counted in the statistics; NULL = none.
    pub prefilter_sql: *const c_char,
    /// Columns to return besides `_score` (`_rowid` allowed); 0 = every column.
    pub columns: *const *const c_char,
    pub num_columns: usize,
    /// Append `_rowid` (needed by the merges and `lance_dataset_take_rows`); default true.
    pub with_row_id: bool,
}

impl Default for LanceTextQuery {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            column: std::ptr::null(),
            text: std::ptr::null(),
            match_kind: LanceTextMatch::LANCE_TEXT_MATCH_ANY as i32,
            slop: 0,
            k: 10,
            prefilter_sql: std::ptr::null(),
            columns: std::ptr::null(),
            num_columns: 0,
            with_row_id: true,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, fields valid for any C value. It has no
// 0.1 layout (V0_SIZE is never used: no 0.1 entry point takes it).
unsafe impl Extensible for LanceTextQuery {
    const NAME: &'static str = "LanceTextQuery";
    const MIN_SIZE: usize = 72;
    const V0_SIZE: usize = 64;
    fn initial() -> Self {
        Self::default()
    }
}

fn query_arg(q: *const LanceTextQuery) -> Result<TextQuery> {
    let q = &read_in(q, Layout::Sized, "query")?.ok_or_else(|| HostError::invalid("query is NULL"))?;
    let kind = match q.match_kind {
        0 | 1 if q.slop != 0 => {
            return Err(HostError::invalid("query.slop is only allowed with LANCE_TEXT_MATCH_PHRASE"))
        }
        0 => TextMatch::Any,
        1 => TextMatch::All,
        2 => TextMatch::Phrase { slop: q.slop },
        other => {
            return Err(HostError::invalid(format!(
                "query.match_kind {other} is not a LanceTextMatch value"
            )))
        }
    };
    Ok(TextQuery {
        column: str_arg(q.column, "query.column")?.to_string(),
        text: str_arg(q.text, "query.text")?.to_string(),
        kind,
        k: q.k,
        prefilter: opt_str_arg(q.prefilter_sql, "query.prefilter_sql")?.map(str::to_string),
        columns: str_list_arg(q.columns, q.num_columns, "query.columns")?,
        with_row_id: q.with_row_id,
    })
}

/// Shipped statistics, or None when `len` is 0 (the split must then be the whole corpus).
fn stats_arg(stats: *const u8, len: usize) -> Result<Option<CorpusStats>> {
    if len == 0 {
        return Ok(None);
    }
    CorpusStats::from_bytes(slice_arg(stats, len, "stats")?).map(Some)
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with defaults —
/// LANCE_TEXT_MATCH_ANY, slop 0, k = 10, no prefilter, every column, with `_rowid` — and set
/// `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is
/// smaller than the first `LanceTextQuery`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_text_query_init(out: *mut LanceTextQuery, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Plan full-text splits for `column`, which must be a string column with an INVERTED index:
/// one LANCE_SPLIT_FTS_SEGMENT split per physical segment of the index (with the visible
/// fragments it covers) plus LANCE_SPLIT_FTS_FLAT splits over the visible fragments no segment
/// covers — one per fragment when `flat_target_rows` is 0, else consecutive fragments grouped
/// until a split holds at least `flat_target_rows` rows. Every visible fragment lies in exactly
/// one split. Splits serialize like every split (`lance_split_serialize`).
///
/// Caller owns `*out`; free it with `lance_split_plan_free`. Borrows its arguments.
/// Thread-safe. Returns an error code (LANCE_ERR_INVALID_ARGUMENT for an unknown or non-string
/// column or a column without an INVERTED index: there is no index-less full-text search);
/// `*out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_fts(
    dataset: *const LanceDataset,
    column: *const c_char,
    flat_target_rows: u64,
    out: *mut *mut LanceSplitPlan,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let column = str_arg(column, "column")?;
        let out = out_arg(out, "out")?;
        *out = export_plan(fts::plan_text(ds.table()?, column, flat_target_rows)?);
        Ok(())
    })
}

/// Compute the BM25 corpus statistics of `query` (its text, match kind and prefilter) over the
/// whole snapshot — every segment of the column's INVERTED index and every unindexed fragment,
/// through the prefilter — once, on the coordinator. Writes them as opaque, versioned,
/// checksummed bytes to `*out` / `*out_len`, to ship with each split to
/// `lance_split_fts_search`; a worker then never reads another segment's files, and every
/// split's `_score` is comparable. Reads each segment's statistics and tokenizes the unindexed
/// fragments. `io` (NULL = not wanted; `struct_size` set by the caller) receives the I/O.
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its other
/// arguments. Thread-safe. Returns an error code (LANCE_ERR_INVALID_ARGUMENT for an empty query
/// text, k out of range, an unknown match kind, a column without an INVERTED index, a bad
/// prefilter); outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_dataset_fts_stats(
    dataset: *const LanceDataset,
    query: *const LanceTextQuery,
    out: *mut *mut u8,
    out_len: *mut usize,
    io: *mut LanceIoStats,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let q = query_arg(query)?;
        let out = out_arg(out, "out")?;
        let out_len = out_arg(out_len, "out_len")?;
        let io = out_slot(io, Layout::Sized, "io")?;
        let (stats, io_stats) = fts::corpus_stats(ds.table()?, &q)?;
        if let Some(io) = io {
            io.write(&io_stats.into());
        }
        (*out, *out_len) = into_array(stats.to_bytes());
        Ok(())
    })
}

/// Execute a full-text split on `dataset` (the split's table at the split's version, e.g. from
/// `lance_split_open_dataset`) with the coordinator's statistics (`stats`, `stats_len` bytes
/// from `lance_dataset_fts_stats` for the same query). A LANCE_SPLIT_FTS_SEGMENT split searches
/// its segment; a LANCE_SPLIT_FTS_FLAT split tokenizes and scores its fragments. Output, in one
/// batch: the projected columns, `_score` (float32, BM25 over the whole snapshot; descending,
/// ties by `_rowid` ascending) and `_rowid` when asked; at most `query->k` rows. Merge the
/// splits' outputs with `lance_fts_merge`: the result equals Lance's single-process full-text
/// search of the snapshot (README: "Full-text search").
///
/// `stats_len` 0 (`stats` may be NULL; since 0.10): no statistics shipped. Allowed only for a
/// split that is the whole corpus — a LANCE_SPLIT_FTS_SEGMENT split holding every segment of
/// the index (`lance_splits_combine` of all of them) on a snapshot whose index covers every
/// fragment; the search then computes the statistics itself, in the same pass, and the result
/// is the same.
///
/// Caller owns the stream; release it with `out->release(out)`; its I/O is read with
/// `lance_stream_io_stats_v2`. Borrows the other arguments. Thread-safe. Returns an error code:
/// LANCE_ERR_CORRUPT for damaged statistics or statistics of another table or version,
/// LANCE_ERR_INVALID_ARGUMENT for statistics of another query or column, a foreign split, a
/// split of another kind, a bad query, no statistics for a split that is not the whole corpus;
/// `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_fts_search(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceTextQuery,
    stats: *const u8,
    stats_len: usize,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let q = query_arg(query)?;
        let corpus = stats_arg(stats, stats_len)?;
        let reader = fts::search_split(ds.split_table(&split.split)?, &split.split, &q, corpus.as_ref())?;
        export_stream(reader, out);
        Ok(())
    })
}

/// Describe what `lance_split_fts_search` runs with the same arguments: the INVERTED index and
/// segment searched (with Lance's plan text) or the flat pass over the split's fragments.
/// Nothing is read. `stats_len` 0 as for `lance_split_fts_search`.
///
/// Caller owns `*out`; free it with `lance_string_free`. Borrows its arguments. Thread-safe.
/// Returns an error code as `lance_split_fts_search`; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_split_explain_fts(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceTextQuery,
    stats: *const u8,
    stats_len: usize,
    out: *mut *mut c_char,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let split = handle_ref(split, "split")?;
        let out = out_arg(out, "out")?;
        let q = query_arg(query)?;
        let corpus = stats_arg(stats, stats_len)?;
        let text = fts::explain_split(ds.split_table(&split.split)?, &split.split, &q, corpus.as_ref())?;
        *out = super::owned_cstring(&text).into_raw();
        Ok(())
    })
}

/// Merge `num_streams` full-text split results (same schema, with `_score` float32 and
/// `_rowid` uint64) into the `k` rows after `offset` with the largest `_score`, ties broken by
/// `_rowid` ascending, written to `out`. Its I/O statistics are the sum of its inputs' (as for
/// `lance_topk_merge`).
///
/// Takes ownership of every input stream, also on failure (they are released). Caller owns
/// `out`; release it with `out->release(out)`. Thread-safe. Returns an error code; `out` is not
/// written on failure.
#[no_mangle]
pub extern "C" fn lance_fts_merge(
    streams: *mut FFI_ArrowArrayStream,
    num_streams: usize,
    k: u64,
    offset: u64,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        let (readers, stats) = import_streams(streams, num_streams)?;
        let out = out_arg(out, "out")?;
        let reader = merge::merge_top_k_by_score(readers, k, offset)?;
        export_stream(reader.with_stats(OpStats::sum(stats.iter())), out);
        Ok(())
    })
}

/// Hybrid search by reciprocal-rank fusion of a vector result (`vector`: `_distance` float32
/// and `_rowid`, e.g. the `lance_topk_merge` of a vector plan) and a full-text result (`text`:
/// `_score` float32 and `_rowid`, e.g. the `lance_fts_merge` of a full-text plan). Each row's
/// `_relevance_score` is the sum, over the lists it appears in, of `1 / (rrf_k + rank)` with
/// ranks from 1 (the vector list by `_distance` ascending, the text list by `_score`
/// descending, ties by `_rowid`). `out` gets the `k` best rows (`_relevance_score` descending,
/// ties by `_rowid` ascending) with columns `_rowid` (uint64), `_relevance_score` (float32),
/// `_distance` and `_score` (float32, null where the row is absent from that list); fetch other
/// columns with `lance_dataset_take_rows`. `rrf_k` is the RRF constant (60 is customary), finite
/// and >= 0.
///
/// Takes ownership of both input streams, also on failure. Caller owns `out`; release it with
/// `out->release(out)`. Thread-safe. Returns an error code (LANCE_ERR_INVALID_ARGUMENT for k = 0,
/// a bad constant, a stream without the needed columns); `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_rrf_merge(
    vector: *mut FFI_ArrowArrayStream,
    text: *mut FFI_ArrowArrayStream,
    k: u64,
    rrf_k: f64,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    guard_code(|| {
        // Take both first so both are released on every failure path.
        let v = import_stream(vector, "vector");
        let t = import_stream(text, "text");
        let ((v, vs), (t, ts)) = (v?, t?);
        let out = out_arg(out, "out")?;
        let fused = fts::rrf_merge(v, t, k, rrf_k)?;
        export_stream(fused.with_stats(OpStats::sum(vs.iter().chain(ts.iter()))), out);
        Ok(())
    })
}
