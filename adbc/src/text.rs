//! Full-text search statements (`lance_host.fts.*`): the table's INVERTED index searched split
//! by split with the BM25 statistics of the whole snapshot, computed once and shipped with every
//! partition, so each partition's `_score` is comparable and the merged rows are Lance's
//! single-process answer.

use std::ptr;

use adbc_core::error::Result;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;

use crate::api::{self, api, c_string, check, invalid, Api, CStrArray, Handle};
use crate::handles::{import_stream, serialize_plan, Dataset, Reader, ScanSpec};

/// `LanceTextMatch` values.
const MATCH_ANY: i32 = 0;
const MATCH_ALL: i32 = 1;
const MATCH_PHRASE: i32 = 2;
/// Most results a search may ask for (the library's bound of `k`).
const MAX_K: u64 = 1 << 20;

/// A full-text search: column, query text, how terms match, results wanted.
#[derive(Clone, Debug, PartialEq)]
pub struct TextSearch {
    pub column: String,
    pub text: String,
    pub match_kind: i32,
    pub slop: u32,
    pub k: u64,
}

/// The `lance_host.fts.*` options as set; a search once column and query are both there.
pub(crate) struct TextOptions {
    column: Option<String>,
    text: Option<String>,
    match_kind: i32,
    slop: u32,
    k: u64,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            column: None,
            text: None,
            match_kind: MATCH_ANY,
            slop: 0,
            k: 10,
        }
    }
}

impl TextOptions {
    /// Apply option `key` (a `lance_host.fts.*` option); Ok(false) when the key is not one.
    /// A refused value leaves the option as it was.
    pub(crate) fn set(&mut self, key: &str, value: String) -> Result<bool> {
        let number = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| invalid(format!("option `{key}` takes a whole number, not `{v}`")))
        };
        match key {
            "lance_host.fts.column" => self.column = Some(value).filter(|c| !c.is_empty()),
            "lance_host.fts.query" => self.text = Some(value).filter(|t| !t.is_empty()),
            "lance_host.fts.k" => {
                let k = number(&value)?;
                if k == 0 || k > MAX_K {
                    return Err(invalid(format!(
                        "option `{key}` must be 1 to {MAX_K}, not {k}"
                    )));
                }
                self.k = k;
            }
            "lance_host.fts.match" => {
                self.match_kind = match value.to_ascii_lowercase().as_str() {
                    "any" => MATCH_ANY,
                    "all" => MATCH_ALL,
                    "phrase" => MATCH_PHRASE,
                    _ => {
                        return Err(invalid(format!(
                            "option `{key}` takes `any`, `all` or `phrase`, not `{value}`"
                        )))
                    }
                }
            }
            "lance_host.fts.slop" => {
                self.slop = u32::try_from(number(&value)?)
                    .map_err(|_| invalid(format!("option `{key}` is too large")))?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(crate) fn get(&self, key: &str) -> Option<String> {
        match key {
            "lance_host.fts.column" => self.column.clone(),
            "lance_host.fts.query" => self.text.clone(),
            "lance_host.fts.k" => Some(self.k.to_string()),
            _ => None,
        }
    }

    /// The search the options describe, None when neither column nor query is set.
    pub(crate) fn search(&self) -> Result<Option<TextSearch>> {
        match (&self.column, &self.text) {
            (None, None) => Ok(None),
            (Some(column), Some(text)) => {
                if self.slop > 0 && self.match_kind != MATCH_PHRASE {
                    return Err(invalid("lance-host ADBC: `lance_host.fts.slop` applies to `lance_host.fts.match` = phrase"));
                }
                Ok(Some(TextSearch {
                    column: column.clone(),
                    text: text.clone(),
                    match_kind: self.match_kind,
                    slop: self.slop,
                    k: self.k,
                }))
            }
            _ => Err(invalid(
                "lance-host ADBC: a full-text search needs both `lance_host.fts.column` and `lance_host.fts.query`",
            )),
        }
    }
}

/// A `LanceTextQuery` and the strings it points into.
pub(crate) struct BuiltText {
    pub(crate) query: api::TextQuery,
    _column: std::ffi::CString,
    _text: std::ffi::CString,
    _columns: Option<CStrArray>,
    _filter: Option<std::ffi::CString>,
}

impl TextSearch {
    pub(crate) fn build(&self, api: &Api, spec: &ScanSpec) -> Result<BuiltText> {
        // SAFETY: zeroed then initialised by the library with its defaults.
        let mut query: api::TextQuery = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_text_query_init)(&mut query, std::mem::size_of::<api::TextQuery>())
        };
        check(api, rc, "initialising a full-text query")?;
        let column = c_string(&self.column, "the text column")?;
        let text = c_string(&self.text, "the query text")?;
        query.column = column.as_ptr();
        query.text = text.as_ptr();
        query.match_kind = self.match_kind;
        query.slop = self.slop;
        query.k = self.k;
        query.with_row_id = true;
        let (columns, filter) = spec.c_columns_and_filter()?;
        if let Some(arr) = &columns {
            query.columns = arr.as_ptr();
            query.num_columns = arr.len();
        }
        if let Some(c) = &filter {
            query.prefilter_sql = c.as_ptr();
        }
        Ok(BuiltText {
            query,
            _column: column,
            _text: text,
            _columns: columns,
            _filter: filter,
        })
    }
}

impl Dataset {
    /// The full-text splits of the snapshot (one per index segment, flat ones for unindexed
    /// fragments) as serialized split bytes.
    pub fn plan_text(&self, search: &TextSearch, flat_rows: u64) -> Result<Vec<Vec<u8>>> {
        let api = api()?;
        let column = c_string(&search.column, "the text column")?;
        let mut plan: Handle = ptr::null_mut();
        // SAFETY: live handle and string.
        let rc = unsafe {
            (api.lance_dataset_plan_fts)(self.raw, column.as_ptr(), flat_rows, &mut plan)
        };
        check(api, rc, "planning the full-text search")?;
        serialize_plan(api, plan)
    }

    /// The BM25 statistics of the search over the whole snapshot (its prefilter applied).
    pub fn text_stats(&self, search: &TextSearch, spec: &ScanSpec) -> Result<Vec<u8>> {
        let api = api()?;
        let built = search.build(api, spec)?;
        let mut out: *mut u8 = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: live handle and query; the bytes are ours and freed below.
        let rc = unsafe {
            (api.lance_dataset_fts_stats)(
                self.raw,
                &built.query,
                &mut out,
                &mut len,
                ptr::null_mut(),
            )
        };
        check(api, rc, "computing the full-text statistics")?;
        // SAFETY: the library wrote `len` bytes at `out`.
        let bytes = unsafe { std::slice::from_raw_parts(out, len) }.to_vec();
        unsafe { (api.lance_bytes_free)(out, len) };
        Ok(bytes)
    }

    /// One full-text split searched with the shipped statistics.
    pub(crate) fn text_split(
        &self,
        split: Handle,
        built: &BuiltText,
        stats: &[u8],
    ) -> Result<FFI_ArrowArrayStream> {
        let api = api()?;
        let mut stream = FFI_ArrowArrayStream::empty();
        // SAFETY: live handles; borrowed query and statistics for the call.
        let rc = unsafe {
            (api.lance_split_fts_search)(
                self.raw,
                split,
                &built.query,
                stats.as_ptr(),
                stats.len(),
                &mut stream,
            )
        };
        check(api, rc, "searching a full-text split")?;
        Ok(stream)
    }

    /// The global top k: every split searched with the snapshot's statistics, merged by score.
    pub fn text_search(&self, search: &TextSearch, spec: &ScanSpec) -> Result<Reader> {
        let api = api()?;
        let splits = self.plan_text(search, 0)?;
        let stats = self.text_stats(search, spec)?;
        let built = search.build(api, spec)?;
        let mut streams: Vec<FFI_ArrowArrayStream> = Vec::new();
        for bytes in &splits {
            // SAFETY: borrowed bytes; the split is freed below, its stream stays valid.
            let split = unsafe { (api.lance_split_deserialize)(bytes.as_ptr(), bytes.len()) };
            if split.is_null() {
                return Err(api::last_error(api, "reading a full-text split"));
            }
            let result = self.text_split(split, &built, &stats);
            unsafe { (api.lance_split_free)(split) };
            streams.push(result?);
        }
        let mut out = FFI_ArrowArrayStream::empty();
        // SAFETY: the merge takes every input stream (released also on failure).
        let rc = unsafe {
            (api.lance_fts_merge)(streams.as_mut_ptr(), streams.len(), search.k, 0, &mut out)
        };
        for s in streams.iter_mut() {
            // the library took them: forget our copies without running their release
            unsafe { std::ptr::write(s, FFI_ArrowArrayStream::empty()) };
        }
        check(api, rc, "merging the full-text results")?;
        import_stream(out)
    }
}
