//! C ABI of index builds: vector, scalar and INVERTED indexes created or replaced, and dropped.

use std::ffi::c_char;

use crate::error::{HostError, Result};
use crate::index_build::{self, InvertedOptions, ScalarKind, Target, VectorKind, VectorOptions};

use super::handles::LanceDataset;
use super::split::metric_arg;
use super::sized::{init_out, read_in, Extensible, Layout};
use super::{dataset_out, guard_code, handle_ref, opt_str_arg, str_arg};

/// A vector index type (`LanceVectorIndexParams.index_type`).
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceVectorIndexType {
    LANCE_VECTOR_INDEX_IVF_PQ = 0,
    LANCE_VECTOR_INDEX_IVF_FLAT = 1,
    LANCE_VECTOR_INDEX_IVF_SQ = 2,
    LANCE_VECTOR_INDEX_IVF_HNSW_FLAT = 3,
    LANCE_VECTOR_INDEX_IVF_HNSW_PQ = 4,
    LANCE_VECTOR_INDEX_IVF_HNSW_SQ = 5,
}

/// Settings of `lance_dataset_create_vector_index`. Initialize with
/// `lance_vector_index_params_init_v2(&p, sizeof p)`; 0 fields mean Lance's default (given
/// beside each). Since 0.7.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceVectorIndexParams {
    /// `sizeof(LanceVectorIndexParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// A `LanceVectorIndexType` (default LANCE_VECTOR_INDEX_IVF_PQ).
    pub index_type: i32,
    /// A `LanceMetric` (LANCE_METRIC_DEFAULT = L2).
    pub metric: i32,
    /// IVF partitions (0 = Lance's choice, about sqrt(rows)); at most the table's rows.
    pub num_partitions: u32,
    /// PQ sub-vectors (0 = 16); must divide the dimension.
    pub num_sub_vectors: u32,
    /// Bits per PQ code (4 or 8) or SQ value (1..8) (0 = 8).
    pub num_bits: u32,
    /// Training rows per centroid (0 = 256).
    pub sample_rate: u32,
    /// k-means iterations (0 = 50).
    pub max_iterations: u32,
    /// HNSW neighbours per node (0 = 20).
    pub hnsw_m: u32,
    /// HNSW candidate list size while building (0 = 150).
    pub hnsw_ef_construction: u32,
}

impl Default for LanceVectorIndexParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            index_type: LanceVectorIndexType::LANCE_VECTOR_INDEX_IVF_PQ as i32,
            metric: 0,
            num_partitions: 0,
            num_sub_vectors: 0,
            num_bits: 0,
            sample_rate: 0,
            max_iterations: 0,
            hnsw_m: 0,
            hnsw_ef_construction: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields. No 0.1 layout.
unsafe impl Extensible for LanceVectorIndexParams {
    const NAME: &'static str = "LanceVectorIndexParams";
    const MIN_SIZE: usize = 48;
    const V0_SIZE: usize = 40;
    fn initial() -> Self {
        Self::default()
    }
}

/// A scalar index type (`LanceScalarIndexParams.index_type`).
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceScalarIndexType {
    /// Sorted values: ranges and equality on numbers, strings, dates.
    LANCE_SCALAR_INDEX_BTREE = 0,
    /// A bitmap per value: equality on columns with few distinct values.
    LANCE_SCALAR_INDEX_BITMAP = 1,
    /// `array_has_any` / `array_has_all` on list columns.
    LANCE_SCALAR_INDEX_LABEL_LIST = 2,
}

/// Settings of `lance_dataset_create_scalar_index`. Initialize with
/// `lance_scalar_index_params_init_v2(&p, sizeof p)`. Since 0.7.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceScalarIndexParams {
    /// `sizeof(LanceScalarIndexParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// A `LanceScalarIndexType` (default LANCE_SCALAR_INDEX_BTREE).
    pub index_type: i32,
}

impl Default for LanceScalarIndexParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            index_type: LanceScalarIndexType::LANCE_SCALAR_INDEX_BTREE as i32,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields. No 0.1 layout.
unsafe impl Extensible for LanceScalarIndexParams {
    const NAME: &'static str = "LanceScalarIndexParams";
    const MIN_SIZE: usize = 16;
    const V0_SIZE: usize = 8;
    fn initial() -> Self {
        Self::default()
    }
}

/// Settings of `lance_dataset_create_inverted_index` (full-text). Initialize with
/// `lance_inverted_index_params_init_v2(&p, sizeof p)`, which sets Lance's defaults: the
/// "simple" tokenizer, English, no positions, tokens up to 40 characters, lower case, stemming,
/// stop words removed, ASCII folding. Since 0.7.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceInvertedIndexParams {
    /// `sizeof(LanceInvertedIndexParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// Base tokenizer: "simple", "whitespace", "raw", "ngram", ... (NULL = "simple").
    pub base_tokenizer: *const c_char,
    /// Language of stemming and stop words, e.g. "English", "French" (NULL = "English").
    pub language: *const c_char,
    /// Longest token kept (0 = unlimited; the init function sets 40).
    pub max_token_length: u32,
    /// Non-zero: store token positions (phrase queries need them).
    pub with_position: u8,
    pub lower_case: u8,
    pub stem: u8,
    pub remove_stop_words: u8,
    pub ascii_folding: u8,
}

impl Default for LanceInvertedIndexParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            base_tokenizer: std::ptr::null(),
            language: std::ptr::null(),
            max_token_length: 40,
            with_position: 0,
            lower_case: 1,
            stem: 1,
            remove_stop_words: 1,
            ascii_folding: 1,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer and pointer fields. No 0.1 layout.
unsafe impl Extensible for LanceInvertedIndexParams {
    const NAME: &'static str = "LanceInvertedIndexParams";
    const MIN_SIZE: usize = 40;
    const V0_SIZE: usize = 32;
    fn initial() -> Self {
        Self::default()
    }
}

/// Fill `out` (a caller's struct of `struct_size` bytes; pass `sizeof *out`) with the default
/// vector index settings (IVF_PQ, Lance's defaults) and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_vector_index_params_init_v2(out: *mut LanceVectorIndexParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Fill `out` (a struct the caller owns; pass `sizeof *out`) with the default scalar index settings (BTREE) and set
/// `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_scalar_index_params_init_v2(out: *mut LanceScalarIndexParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Fill `out` (a struct the caller owns; pass `sizeof *out`) with Lance's default full-text index settings and set
/// `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_inverted_index_params_init_v2(out: *mut LanceInvertedIndexParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

pub(crate) fn target<'a>(column: *const c_char, name: *const c_char, replace: bool) -> Result<Target<'a>> {
    Ok(Target {
        column: str_arg(column, "column")?,
        name: opt_str_arg(name, "name")?,
        replace,
    })
}

fn nonzero(v: u32) -> Option<usize> {
    (v > 0).then_some(v as usize)
}

pub(crate) fn vector_options(params: *const LanceVectorIndexParams) -> Result<VectorOptions> {
    let p = read_in(params, Layout::Sized, "params")?.unwrap_or_default();
    let kind = match p.index_type {
        0 => VectorKind::IvfPq,
        1 => VectorKind::IvfFlat,
        2 => VectorKind::IvfSq,
        3 => VectorKind::IvfHnswFlat,
        4 => VectorKind::IvfHnswPq,
        5 => VectorKind::IvfHnswSq,
        v => return Err(HostError::invalid(format!("params->index_type {v} is not a LanceVectorIndexType (0..5)"))),
    };
    Ok(VectorOptions {
        kind,
        metric: metric_arg(p.metric)?,
        num_partitions: nonzero(p.num_partitions),
        num_sub_vectors: nonzero(p.num_sub_vectors),
        num_bits: (p.num_bits > 0)
            .then(|| u8::try_from(p.num_bits).map_err(|_| HostError::invalid(format!("params->num_bits {} is too large", p.num_bits))))
            .transpose()?,
        sample_rate: nonzero(p.sample_rate),
        max_iterations: nonzero(p.max_iterations),
        hnsw_m: nonzero(p.hnsw_m),
        hnsw_ef_construction: nonzero(p.hnsw_ef_construction),
    })
}

pub(crate) fn scalar_kind(params: *const LanceScalarIndexParams) -> Result<ScalarKind> {
    let p = read_in(params, Layout::Sized, "params")?.unwrap_or_default();
    Ok(match p.index_type {
        0 => ScalarKind::BTree,
        1 => ScalarKind::Bitmap,
        2 => ScalarKind::LabelList,
        v => return Err(HostError::invalid(format!("params->index_type {v} is not a LanceScalarIndexType (0..2)"))),
    })
}

pub(crate) fn inverted_options(params: *const LanceInvertedIndexParams) -> Result<InvertedOptions> {
    let p = read_in(params, Layout::Sized, "params")?.unwrap_or_default();
    let defaults = InvertedOptions::default();
    Ok(InvertedOptions {
        base_tokenizer: opt_str_arg(p.base_tokenizer, "params->base_tokenizer")?
            .map(str::to_string)
            .unwrap_or(defaults.base_tokenizer),
        language: opt_str_arg(p.language, "params->language")?.map(str::to_string).unwrap_or(defaults.language),
        with_position: p.with_position != 0,
        max_token_length: nonzero(p.max_token_length),
        lower_case: p.lower_case != 0,
        stem: p.stem != 0,
        remove_stop_words: p.remove_stop_words != 0,
        ascii_folding: p.ascii_folding != 0,
    })
}


/// Build a vector index on `column` of `dataset`'s table (a fixed-size list of floats, or a
/// list of them for multivectors) and commit it as one new version planned at the handle's
/// version. `name` (may be NULL) names it (NULL = Lance's "<column>_idx"); an existing name is
/// LANCE_ERR_INVALID_ARGUMENT unless `replace`. `params` may be NULL (IVF_PQ with Lance's
/// defaults). An unknown column, a column that is not a vector, partitions above the rows, PQ
/// sub-vectors that do not divide the dimension or an unsupported bit width is
/// LANCE_ERR_INVALID_ARGUMENT; nothing is committed on any failure. The build runs on the
/// library's threads; a call context bound to the calling thread cancels it or bounds it.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller (the handle
/// passed in keeps its version). Borrows its arguments. Thread-safe. Returns an error code;
/// `*out_dataset` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_create_vector_index(
    dataset: *const LanceDataset,
    column: *const c_char,
    name: *const c_char,
    replace: bool,
    params: *const LanceVectorIndexParams,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = target(column, name, replace)?;
        let options = vector_options(params)?;
        let snapshot = index_build::create_vector_index(ds.table()?, &target, &options)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Build a scalar index (BTREE, BITMAP or LABEL_LIST; `params` NULL = BTREE) on `column` as one
/// new version planned at the handle's version; `name` and `replace` as for
/// `lance_dataset_create_vector_index`. A column whose type does not fit the index (a list for
/// BTREE/BITMAP, not a list for LABEL_LIST) is LANCE_ERR_INVALID_ARGUMENT naming both. Filters
/// on the column use it (`lance_dataset_explain` shows it).
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_create_scalar_index(
    dataset: *const LanceDataset,
    column: *const c_char,
    name: *const c_char,
    replace: bool,
    params: *const LanceScalarIndexParams,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = target(column, name, replace)?;
        let kind = scalar_kind(params)?;
        let snapshot = index_build::create_scalar_index(ds.table()?, &target, kind)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Build an INVERTED (full-text) index on the string column `column` as one new version
/// planned at the handle's version (`params` NULL = Lance's defaults); `name` and `replace` as
/// for `lance_dataset_create_vector_index`. Full-text searches and plans use it. An unknown
/// tokenizer or language, or a column that is not a string column, is
/// LANCE_ERR_INVALID_ARGUMENT.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_create_inverted_index(
    dataset: *const LanceDataset,
    column: *const c_char,
    name: *const c_char,
    replace: bool,
    params: *const LanceInvertedIndexParams,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = target(column, name, replace)?;
        let options = inverted_options(params)?;
        let snapshot = index_build::create_inverted_index(ds.table()?, &target, &options)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Drop the index `name` of `dataset`'s table (every segment) as one new version planned at
/// the handle's version; an unknown name is LANCE_ERR_NOT_FOUND. Its files stay for readers of
/// older versions until `lance_dataset_cleanup` removes them.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_drop_index(
    dataset: *const LanceDataset,
    name: *const c_char,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = str_arg(name, "name")?;
        let snapshot = index_build::drop_index(ds.table()?, name)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Index the fragments appended since an index was built, as one new version planned at the
/// handle's version: with `num_segments_to_merge` 0 they become a new segment of each index
/// (`name` NULL) or of index `name`; with n > 0 the newest n segments and the new fragments are
/// merged into one segment. Afterwards the vector and full-text plans search those fragments
/// through the index instead of flat splits. Nothing to index commits nothing. An unknown
/// `name` is LANCE_ERR_NOT_FOUND.
///
/// `*out_dataset` (if not NULL) gets the resulting version pinned, owned by the caller.
/// Borrows its arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on
/// failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_optimize_indexes(
    dataset: *const LanceDataset,
    name: *const c_char,
    num_segments_to_merge: u32,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let name = opt_str_arg(name, "name")?;
        let snapshot = index_build::optimize_indexes(ds.table()?, name, num_segments_to_merge as usize)?;
        dataset_out(snapshot, out_dataset)
    })
}
