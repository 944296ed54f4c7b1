//! C ABI of distributed index builds: train a vector model, plan build splits, build one
//! segment per split on workers, commit every segment as one index.

use std::ffi::c_char;

use crate::index_build::distributed::{self, PlanOptions, Spec};
use crate::io_stats::IoStats;

use super::handles::{LanceDataset, LanceIoStats};
use super::index_build::{inverted_options, scalar_kind, target, vector_options};
use super::index_build::{LanceInvertedIndexParams, LanceScalarIndexParams, LanceVectorIndexParams};
use super::maintenance::LanceBytesList;
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{byte_list_arg, dataset_out, guard_code, handle_ref, into_array, into_handle, out_arg, slice_arg, str_arg};

/// How a distributed index build is cut (`lance_dataset_plan_*_index_build`). Initialize with
/// `lance_index_build_plan_params_init_v2(&p, sizeof p)`. Since 0.7.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceIndexBuildPlanParams {
    /// `sizeof(LanceIndexBuildPlanParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// Build splits (tasks) to cut the table's fragments into, balanced by rows; at most one
    /// per fragment (0 = one per fragment, the default).
    pub num_splits: u32,
    /// Non-zero: index only the fragments no segment of the index covers yet (after appends);
    /// the existing segments stay and the new ones join them. Default 0: every fragment.
    pub unindexed_only: u8,
}

impl Default for LanceIndexBuildPlanParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            num_splits: 0,
            unindexed_only: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields. No 0.1 layout.
unsafe impl Extensible for LanceIndexBuildPlanParams {
    const NAME: &'static str = "LanceIndexBuildPlanParams";
    const MIN_SIZE: usize = 16;
    const V0_SIZE: usize = 8;
    fn initial() -> Self {
        Self::default()
    }
}

/// Fill `out` (a caller's struct of `struct_size` bytes; pass `sizeof *out`) with the default
/// plan settings (one split per fragment, every fragment) and set `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_index_build_plan_params_init_v2(out: *mut LanceIndexBuildPlanParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

fn plan_options(params: *const LanceIndexBuildPlanParams) -> crate::error::Result<PlanOptions> {
    let p = read_in(params, Layout::Sized, "plan")?.unwrap_or_default();
    Ok(PlanOptions {
        num_splits: p.num_splits as usize,
        unindexed_only: p.unindexed_only != 0,
    })
}

fn list_out(items: Vec<Vec<u8>>, out: *mut *mut LanceBytesList) -> crate::error::Result<()> {
    *out_arg(out, "out")? = into_handle(LanceBytesList { items });
    Ok(())
}

/// Hand bytes (and, if `io` is not NULL, the call's I/O) to the caller.
fn bytes_out(bytes: Vec<u8>, stats: IoStats, out: *mut *mut u8, out_len: *mut usize, io: *mut LanceIoStats) -> crate::error::Result<()> {
    let io = out_slot(io, Layout::Sized, "io")?;
    let (p, n) = into_array(bytes);
    *out_arg(out, "out")? = p;
    *out_arg(out_len, "out_len")? = n;
    if let Some(io) = io {
        io.write(&stats.into());
    }
    Ok(())
}

/// Train the global part of a vector index on `column` of `dataset`'s table at the handle's
/// version, on the coordinator: the IVF centroids (`params->num_partitions`; 0 = Lance's
/// choice, rows / the type's target partition size) and, for IVF_PQ and IVF_HNSW_PQ, the PQ
/// codebook. `*out` gets the *model bytes* (versioned, checksummed) for
/// `lance_dataset_plan_vector_index_build`; keep them to index appended fragments later with
/// the same model. SQ bounds are not in the model: each segment trains its own. `params` as for
/// `lance_dataset_create_vector_index` (NULL = IVF_PQ, Lance's defaults); bad input is
/// LANCE_ERR_INVALID_ARGUMENT as there, and a multivector (list) column, which Lance builds in
/// one process only, too. A call context bound to the calling thread cancels it, bounds it and
/// receives its progress. `io` (may be NULL; `struct_size` set) receives the reads the training
/// made (object stores; local tables report 0 requests).
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its arguments.
/// Thread-safe. Returns an error code; outputs are not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_train_vector_index(
    dataset: *const LanceDataset,
    column: *const c_char,
    params: *const LanceVectorIndexParams,
    out: *mut *mut u8,
    out_len: *mut usize,
    io: *mut LanceIoStats,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let column = str_arg(column, "column")?;
        let options = vector_options(params)?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        out_slot(io, Layout::Sized, "io")?;
        let (model, stats) = distributed::train_vector(ds.table()?, column, &options)?;
        bytes_out(model, stats, out, out_len, io)
    })
}

/// Plan a distributed build of a vector index on `column` of `dataset`'s table at the handle's
/// version with the model bytes from `lance_dataset_train_vector_index` (trained on this table
/// and column): `*out` gets one task per build split (bytes to ship to a worker, which builds
/// its segment with `lance_index_build_task_execute`); the coordinator then commits the
/// segments with `lance_dataset_commit_index_build`. `name` (NULL = "<column>_idx") and
/// `replace` as for `lance_dataset_create_vector_index`; with `plan->unindexed_only` an existing
/// index of that name is extended instead. `plan` may be NULL (one split per fragment). An
/// empty list means there is nothing to index. Damaged or foreign model bytes are
/// LANCE_ERR_CORRUPT (another format version: LANCE_ERR_NOT_SUPPORTED); a model of another
/// table or column is LANCE_ERR_INVALID_ARGUMENT.
///
/// Caller owns `*out`; free it with `lance_bytes_list_free`. Borrows its arguments.
/// Thread-safe. Returns an error code; `*out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_vector_index_build(
    dataset: *const LanceDataset,
    column: *const c_char,
    name: *const c_char,
    replace: bool,
    model: *const u8,
    model_len: usize,
    plan: *const LanceIndexBuildPlanParams,
    out: *mut *mut LanceBytesList,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = target(column, name, replace)?;
        let model = slice_arg(model, model_len, "model")?;
        let options = plan_options(plan)?;
        out_arg(out, "out")?;
        let tasks = distributed::plan(ds.table()?, &target, &Spec::Vector(model), &options)?;
        list_out(tasks, out)
    })
}

/// Plan a distributed build of an INVERTED (full-text) index on `column`: as
/// `lance_dataset_plan_vector_index_build`, with the full-text settings `params` (NULL =
/// Lance's defaults) instead of a model. Each segment keeps its own term statistics; full-text
/// searches combine them (the shipped BM25 statistics cover every segment).
///
/// Caller owns `*out`; free it with `lance_bytes_list_free`. Borrows its arguments.
/// Thread-safe. Returns an error code; `*out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_inverted_index_build(
    dataset: *const LanceDataset,
    column: *const c_char,
    name: *const c_char,
    replace: bool,
    params: *const LanceInvertedIndexParams,
    plan: *const LanceIndexBuildPlanParams,
    out: *mut *mut LanceBytesList,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = target(column, name, replace)?;
        let options = inverted_options(params)?;
        let plan = plan_options(plan)?;
        out_arg(out, "out")?;
        let tasks = distributed::plan(ds.table()?, &target, &Spec::Inverted(options), &plan)?;
        list_out(tasks, out)
    })
}

/// Plan a distributed build of a scalar index (BTREE, BITMAP or LABEL_LIST; `params` NULL =
/// BTREE) on `column`: as `lance_dataset_plan_vector_index_build`, without a model.
///
/// Caller owns `*out`; free it with `lance_bytes_list_free`. Borrows its arguments.
/// Thread-safe. Returns an error code; `*out` is not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_plan_scalar_index_build(
    dataset: *const LanceDataset,
    column: *const c_char,
    name: *const c_char,
    replace: bool,
    params: *const LanceScalarIndexParams,
    plan: *const LanceIndexBuildPlanParams,
    out: *mut *mut LanceBytesList,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let target = target(column, name, replace)?;
        let kind = scalar_kind(params)?;
        let plan = plan_options(plan)?;
        out_arg(out, "out")?;
        let tasks = distributed::plan(ds.table()?, &target, &Spec::Scalar(kind), &plan)?;
        list_out(tasks, out)
    })
}

/// Build the index segment of one task (bytes from a `lance_dataset_plan_*_index_build`) on a
/// worker: its files go under the table's `_indices/`, nothing is committed, and `*out` gets
/// the *segment bytes* to ship back to the coordinator. `dataset` is the table opened on the
/// worker (at the planned version or later; the task reads the version it was planned at).
/// Damaged or foreign bytes are LANCE_ERR_CORRUPT (another format version:
/// LANCE_ERR_NOT_SUPPORTED); a task of another table is LANCE_ERR_INVALID_ARGUMENT. A bound call
/// context cancels it, bounds it and receives its progress. The files of a segment that is
/// never committed (a failed or killed worker, an abandoned build) are removed by
/// `lance_dataset_cleanup` with `delete_unverified`. `io` (may be NULL; `struct_size` set)
/// receives the reads the build made (object stores; local tables report 0 requests).
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its arguments.
/// Thread-safe. Returns an error code; outputs are not written on failure. Since 0.7.
#[no_mangle]
pub extern "C" fn lance_index_build_task_execute(
    dataset: *const LanceDataset,
    task: *const u8,
    task_len: usize,
    out: *mut *mut u8,
    out_len: *mut usize,
    io: *mut LanceIoStats,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let task = slice_arg(task, task_len, "task")?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        out_slot(io, Layout::Sized, "io")?;
        let (segment, stats) = distributed::execute_task(ds.table()?, task)?;
        bytes_out(segment, stats, out, out_len, io)
    })
}

/// Commit `num_segments` segments (`segments[i]` of `segment_lens[i]` bytes, from
/// `lance_index_build_task_execute` on any process) of one plan as ONE index in ONE new
/// version of `dataset`'s table (the handle at the planned version or later). With `merge`, the
/// segments are first merged into one (one split per search instead of one per segment).
/// Segments of failed tasks may be left out: their fragments stay unindexed (flat splits) until
/// a build with `unindexed_only` or `lance_dataset_optimize_indexes`. Segments of two plans, a
/// segment given twice or of another table are LANCE_ERR_INVALID_ARGUMENT; damaged bytes
/// LANCE_ERR_CORRUPT, naming the index. Since 0.11 each segment is checked before the commit
/// (one listing of its directory): its files exist under the table's `_indices/` with the sizes
/// it names, it covers only fragments of the handle's version, and the table does not hold it
/// already — LANCE_ERR_INVALID_ARGUMENT naming the segment otherwise. Nothing is committed on
/// any failure.
///
/// `*out_dataset` (if not NULL) gets the new version pinned, owned by the caller. Borrows its
/// arguments. Thread-safe. Returns an error code; `*out_dataset` is not written on failure.
/// Since 0.7.
#[no_mangle]
pub extern "C" fn lance_dataset_commit_index_build(
    dataset: *const LanceDataset,
    segments: *const *const u8,
    segment_lens: *const usize,
    num_segments: usize,
    merge: bool,
    out_dataset: *mut *mut LanceDataset,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let segments = byte_list_arg(segments, segment_lens, num_segments, "segments")?;
        let snapshot = distributed::commit(ds.table()?, &segments, merge)?;
        dataset_out(snapshot, out_dataset)
    })
}
