//! The 0.1 entry points, kept for binaries built against the 0.1 header
//! (`c_tests/abi/lance_host_0.1.h`). Their structs have the 0.1 layouts, without
//! `struct_size`; each function reads or writes exactly those bytes and otherwise behaves as
//! its `_v2` successor, which it calls with `Layout::V0`. Not declared in the current header:
//! new code uses the `_v2` names (see "ABI compatibility" in the README).

use std::ffi::c_char;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use super::dataset::{LanceColumnStats, LanceFragmentStats, LanceTableStats};
use super::handles::{LanceDataset, LanceIoStats};
use super::index::{LanceIndexList, LanceIndexSegmentInfo};
use super::handles::LanceSplit;
use super::scan::LanceScanOptions;
use super::search::LanceVectorQuery;
use super::session::{LanceSessionOptions, LanceSessionStats};
use super::sized::{Extensible, Layout};
use super::guard_code;

/// Write `T`'s defaults in the 0.1 layout (the 0.1 `*_init` functions).
fn init_v0<T: Extensible>(out: *mut T) -> i32 {
    guard_code(|| {
        super::sized::required_out(out, Layout::V0, "out")?.write(&T::initial());
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn lance_scan_options_init(out: *mut LanceScanOptions) -> i32 {
    init_v0(out)
}

#[no_mangle]
pub extern "C" fn lance_dataset_scan(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    super::scan::dataset_scan(dataset, options, Layout::V0, out)
}

#[no_mangle]
pub extern "C" fn lance_dataset_explain_scan(
    dataset: *const LanceDataset,
    options: *const LanceScanOptions,
    out: *mut *mut c_char,
) -> i32 {
    super::scan::dataset_explain_scan(dataset, options, Layout::V0, out)
}

#[no_mangle]
pub extern "C" fn lance_split_scan(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    options: *const LanceScanOptions,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    super::scan::split_scan(dataset, split, options, Layout::V0, out)
}

#[no_mangle]
pub extern "C" fn lance_stream_io_stats(stream: *const FFI_ArrowArrayStream, out: *mut LanceIoStats) -> i32 {
    super::scan::stream_io_stats(stream, out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_vector_query_init(out: *mut LanceVectorQuery) -> i32 {
    init_v0(out)
}

#[no_mangle]
pub extern "C" fn lance_split_search(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceVectorQuery,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    super::search::split_search(dataset, split, query, Layout::V0, out)
}

#[no_mangle]
pub extern "C" fn lance_split_explain_search(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    query: *const LanceVectorQuery,
    out: *mut *mut c_char,
) -> i32 {
    super::search::split_explain_search(dataset, split, query, Layout::V0, out)
}

#[no_mangle]
pub extern "C" fn lance_dataset_refine(
    dataset: *const LanceDataset,
    query: *const LanceVectorQuery,
    candidates: *mut FFI_ArrowArrayStream,
    out: *mut FFI_ArrowArrayStream,
) -> i32 {
    super::search::dataset_refine(dataset, query, Layout::V0, candidates, out)
}

#[no_mangle]
pub extern "C" fn lance_session_options_default(out: *mut LanceSessionOptions) -> i32 {
    init_v0(out)
}

#[no_mangle]
pub extern "C" fn lance_session_configure(options: *const LanceSessionOptions) -> i32 {
    super::session::session_configure(options, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_session_stats(out: *mut LanceSessionStats) -> i32 {
    super::session::session_stats(out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_dataset_count_rows_where(
    dataset: *const LanceDataset,
    filter_sql: *const c_char,
    out: *mut u64,
    io: *mut LanceIoStats,
) -> i32 {
    super::dataset::dataset_count_rows_where(dataset, filter_sql, out, io, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_dataset_statistics(
    dataset: *const LanceDataset,
    out: *mut *mut LanceTableStats,
    io: *mut LanceIoStats,
) -> i32 {
    super::dataset::dataset_statistics(dataset, out, io, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_table_stats_fragment(
    stats: *const LanceTableStats,
    index: usize,
    out: *mut LanceFragmentStats,
) -> i32 {
    super::dataset::table_stats_fragment(stats, index, out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_table_stats_column(
    stats: *const LanceTableStats,
    index: usize,
    out: *mut LanceColumnStats,
) -> i32 {
    super::dataset::table_stats_column(stats, index, out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_index_list_segment(
    list: *const LanceIndexList,
    index: usize,
    segment: usize,
    out: *mut LanceIndexSegmentInfo,
) -> i32 {
    super::index::index_list_segment(list, index, segment, out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_dataset_prewarm_index_with_stats(
    dataset: *const LanceDataset,
    index_name: *const c_char,
    out: *mut LanceIoStats,
) -> i32 {
    super::index::prewarm_index_with_stats(dataset, index_name, out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_dataset_prewarm_index_segments(
    dataset: *const LanceDataset,
    index_name: *const c_char,
    segment_uuids: *const u8,
    segment_uuids_len: usize,
    out: *mut LanceIoStats,
) -> i32 {
    super::index::prewarm_index_segments(dataset, index_name, segment_uuids, segment_uuids_len, out, Layout::V0)
}

#[no_mangle]
pub extern "C" fn lance_split_count_rows(
    dataset: *const LanceDataset,
    split: *const LanceSplit,
    filter_sql: *const c_char,
    out: *mut u64,
    io: *mut LanceIoStats,
) -> i32 {
    super::split::split_count_rows(dataset, split, filter_sql, out, io, Layout::V0)
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::*;

    /// `MIN_SIZE` is the first sized revision (0.2): the 0.1 layout after the header. A struct
    /// that grew since keeps those bytes and appends after them: `first_new` is the offset of
    /// its first appended field (`MIN_SIZE` itself), `size` its current size.
    fn check<T: Extensible>(grown: Option<(usize, usize)>) {
        assert_eq!(T::V0_SIZE + size_of::<usize>(), T::MIN_SIZE, "{}", T::NAME);
        match grown {
            None => assert_eq!(size_of::<T>(), T::MIN_SIZE, "{}", T::NAME),
            Some((first_new, size)) => {
                assert_eq!(first_new, T::MIN_SIZE, "{}: appended fields start after 0.2", T::NAME);
                assert_eq!(size_of::<T>(), size, "{}", T::NAME);
            }
        }
        assert!(std::mem::align_of::<T>() <= 8, "{}", T::NAME);
    }

    #[test]
    fn sized_layouts_extend_the_0_1_layouts() {
        use std::mem::offset_of;
        // 0.13: the sort keys (order_by); 0.15: the key-set filter (128 -> 168 bytes) and the
        // dynamic filter (-> 176 bytes).
        check::<LanceScanOptions>(Some((offset_of!(LanceScanOptions, order_by), 176)));
        assert_eq!(offset_of!(LanceScanOptions, key_filter_column), 128);
        assert_eq!(offset_of!(LanceScanOptions, dynamic_filter), 168);
        // 0.4: the distance range and the batch size.
        check::<LanceVectorQuery>(Some((offset_of!(LanceVectorQuery, num_queries), 120)));
        // 0.3: the data cache's settings and figures.
        check::<LanceSessionOptions>(Some((offset_of!(LanceSessionOptions, data_cache_memory_bytes), 88)));
        check::<LanceIoStats>(Some((offset_of!(LanceIoStats, data_cache_hits), 80)));
        // 0.3: the data cache's figures; 0.8: the full-text tail cache's (176 -> 192 bytes).
        check::<LanceSessionStats>(Some((offset_of!(LanceSessionStats, data_cache_hits), 192)));
        assert_eq!(offset_of!(LanceSessionStats, text_tail_hits), 176);
        check::<LanceFragmentStats>(None);
        check::<LanceColumnStats>(None);
        // 0.6: the IVF partition count.
        check::<LanceIndexSegmentInfo>(Some((offset_of!(LanceIndexSegmentInfo, num_partitions), 56)));
        // 0.6: new structs, first revision.
        // 0.14: the commit preconditions and stable row ids (88 -> 112 bytes).
        check::<crate::ffi::write::LanceWriteParams>(Some((
            offset_of!(crate::ffi::write::LanceWriteParams, expected_version),
            112,
        )));
        check::<crate::ffi::write::LanceWriteResult>(None);
        check::<crate::ffi::changes_by_predicate::LanceMergeInsert>(None);
        check::<crate::ffi::maintenance::LanceCompactParams>(None);
        check::<crate::ffi::maintenance::LanceCompactResult>(None);
        check::<crate::ffi::index_build::LanceVectorIndexParams>(None);
        check::<crate::ffi::index_build::LanceScalarIndexParams>(None);
        check::<crate::ffi::index_segments::LanceIndexBuildPlanParams>(None);
        check::<crate::ffi::index_build::LanceInvertedIndexParams>(None);
        // 0.12: new struct; 0.15: expression arguments (64 -> 72 bytes), then group-key
        // expressions (72 -> 80 bytes), then the Substrait plan (80 -> 96 bytes).
        check::<crate::ffi::aggregate::LanceAggregateSpec>(Some((
            offset_of!(crate::ffi::aggregate::LanceAggregateSpec, expressions),
            96,
        )));
        assert_eq!(offset_of!(crate::ffi::aggregate::LanceAggregateSpec, group_by_expressions), 72);
        assert_eq!(offset_of!(crate::ffi::aggregate::LanceAggregateSpec, substrait_plan), 80);
        // 0.14: new struct, first revision.
        check::<crate::ffi::changes::LanceChangesParams>(None);
    }
}
