"""The C ABI of liblance_host through ctypes: the library, its structs and every function's
signature. Internal; the public API is in `lance_host`."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

P = ctypes.c_void_p
u8p = ctypes.POINTER(ctypes.c_uint8)
u64p = ctypes.POINTER(ctypes.c_uint64)
cstr = ctypes.c_char_p
cstrp = ctypes.POINTER(ctypes.c_char_p)


class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", cstr), ("name", cstr), ("metadata", cstr), ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64), ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))),
    ("dictionary", ctypes.POINTER(ArrowSchema)), ("release", P), ("private_data", P),
]


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64), ("buffers", ctypes.POINTER(P)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))), ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", P), ("private_data", P),
]


class ArrowArrayStream(ctypes.Structure):
    pass


GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowArrayStream), ctypes.POINTER(ArrowSchema))
GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowArrayStream), ctypes.POINTER(ArrowArray))
GET_LAST_ERROR = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.POINTER(ArrowArrayStream))
RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArrayStream))
# LanceWakeCallback of lance_stream_poll_next.
WAKE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
POLL_READY, POLL_PENDING, POLL_END = 0, 1, 2
ArrowArrayStream._fields_ = [
    ("get_schema", GET_SCHEMA), ("get_next", GET_NEXT), ("get_last_error", GET_LAST_ERROR),
    ("release", RELEASE), ("private_data", P),
]
StreamP = ctypes.POINTER(ArrowArrayStream)


class Sized(ctypes.Structure):
    """A struct whose first field is `struct_size` (see the README's ABI rules)."""

    @classmethod
    def new(cls):
        s = cls()
        s.struct_size = ctypes.sizeof(cls)
        return s


class FragmentInfo(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("logical_rows", ctypes.c_uint64), ("physical_rows", ctypes.c_uint64),
                ("deleted_rows", ctypes.c_uint64), ("data_file_count", ctypes.c_uint32)]


class VersionInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint64), ("timestamp_ms", ctypes.c_int64)]


class IoStats(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (n, ctypes.c_uint64) for n in (
            "read_requests", "read_bytes", "index_read_requests", "index_read_bytes", "index_cache_hits",
            "index_cache_misses", "data_cache_hits", "data_cache_misses", "data_cache_hit_bytes")]


class FragmentStats(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("fragment_id", ctypes.c_uint64),
                ("physical_rows", ctypes.c_uint64), ("deleted_rows", ctypes.c_uint64),
                ("bytes_on_disk", ctypes.c_uint64), ("has_bytes_on_disk", ctypes.c_bool)]


class ColumnStats(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", cstr), ("bytes_on_disk", ctypes.c_uint64),
                ("has_bytes_on_disk", ctypes.c_bool)]


class TextQuery(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("column", cstr), ("text", cstr), ("match_kind", ctypes.c_int32),
                ("slop", ctypes.c_uint32), ("k", ctypes.c_uint64), ("prefilter_sql", cstr), ("columns", cstrp),
                ("num_columns", ctypes.c_size_t), ("with_row_id", ctypes.c_bool)]


class WriteParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("mode", ctypes.c_int32), ("commit_retries", ctypes.c_int32),
                ("max_rows_per_file", ctypes.c_uint64), ("max_rows_per_group", ctypes.c_uint64),
                ("max_bytes_per_file", ctypes.c_uint64), ("storage_version", cstr), ("storage_options", cstrp),
                ("commit_message", cstr), ("transaction_properties", cstrp), ("statement_id", cstr),
                ("retry_timeout_ms", ctypes.c_uint64), ("expected_version", ctypes.c_uint64),
                ("required_config", cstrp), ("stable_row_ids", ctypes.c_uint32)]


class WriteResult(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (n, ctypes.c_uint64) for n in ("version", "rows_written", "fragments_written", "files_written",
                                       "bytes_written", "rows_deleted", "rows_updated", "rows_inserted")] + [
        ("committed", ctypes.c_uint8)]


class MergeInsert(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("on", cstrp), ("num_on", ctypes.c_size_t),
                ("when_matched", ctypes.c_int32), ("when_not_matched", ctypes.c_int32),
                ("when_matched_condition", cstr), ("when_not_matched_by_source", ctypes.c_int32),
                ("by_source_condition", cstr)]


class AggregateSpec(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("group_by", cstrp), ("num_group_by", ctypes.c_size_t),
                ("functions", ctypes.POINTER(ctypes.c_int32)), ("columns", cstrp), ("aliases", cstrp),
                ("num_aggregates", ctypes.c_size_t), ("filter_sql", cstr), ("expressions", cstrp),
                ("group_by_expressions", cstrp), ("substrait_plan", ctypes.POINTER(ctypes.c_uint8)),
                ("substrait_plan_len", ctypes.c_size_t)]


class CompactParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("target_rows_per_fragment", ctypes.c_uint64),
                ("max_rows_per_group", ctypes.c_uint64), ("deletion_threshold", ctypes.c_float),
                ("keep_deletions", ctypes.c_uint8)]


class VectorIndexParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("index_type", ctypes.c_int32), ("metric", ctypes.c_int32)] + [
        (n, ctypes.c_uint32) for n in ("num_partitions", "num_sub_vectors", "num_bits", "sample_rate",
                                       "max_iterations", "hnsw_m", "hnsw_ef_construction")]


class ScalarIndexParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("index_type", ctypes.c_int32)]


class InvertedIndexParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("base_tokenizer", cstr), ("language", cstr),
                ("max_token_length", ctypes.c_uint32)] + [
        (n, ctypes.c_uint8) for n in ("with_position", "lower_case", "stem", "remove_stop_words", "ascii_folding")]


class ChangesParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("since_version", ctypes.c_uint64),
                ("since_timestamp_ms", ctypes.c_int64), ("change_types", ctypes.c_uint32),
                ("target_rows", ctypes.c_uint64)]


class IndexBuildPlanParams(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("num_splits", ctypes.c_uint32), ("unindexed_only", ctypes.c_uint8)]


class CompactResult(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (n, ctypes.c_uint64) for n in ("version", "fragments_removed", "fragments_added", "files_removed",
                                       "files_added")]


class BlobInfo(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("row_id", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("kind", ctypes.c_int32), ("is_null", ctypes.c_bool), ("uri", cstr)]


class IndexSegmentInfo(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("uuid", ctypes.c_uint8 * 16), ("fragment_ids", u64p),
                ("num_fragment_ids", ctypes.c_size_t), ("indexed_rows", ctypes.c_uint64),
                ("num_partitions", ctypes.c_uint64)]


class ScanOptions(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("columns", cstrp), ("num_columns", ctypes.c_size_t),
                ("filter_sql", cstr), ("filter_substrait", u8p), ("filter_substrait_len", ctypes.c_size_t),
                ("limit", ctypes.c_int64), ("offset", ctypes.c_int64), ("batch_size", ctypes.c_uint64),
                ("with_row_id", ctypes.c_bool), ("with_row_addr", ctypes.c_bool), ("fragment_ids", u64p),
                ("num_fragment_ids", ctypes.c_size_t), ("scan_in_order", ctypes.c_bool),
                ("batch_readahead", ctypes.c_uint32), ("fragment_readahead", ctypes.c_uint32),
                ("io_buffer_bytes", ctypes.c_uint64), ("order_by", cstr), ("key_filter_column", cstr),
                ("key_filter_values", ctypes.POINTER(ArrowArray)), ("key_filter_schema", ctypes.POINTER(ArrowSchema)),
                ("key_filter_texts", cstrp), ("num_key_filter_texts", ctypes.c_size_t), ("dynamic_filter", P)]


class VectorQuery(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("column", cstr), ("vector", P), ("dimension", ctypes.c_size_t),
                ("element_type", ctypes.c_int32), ("k", ctypes.c_uint64), ("metric", ctypes.c_int32),
                ("nprobes", ctypes.c_uint32), ("refine_factor", ctypes.c_uint32), ("ef", ctypes.c_uint32),
                ("prefilter_sql", cstr), ("columns", cstrp), ("num_columns", ctypes.c_size_t),
                ("with_row_id", ctypes.c_bool), ("defer_refine", ctypes.c_bool),
                ("num_queries", ctypes.c_uint64), ("distance_lower", ctypes.c_float),
                ("distance_upper", ctypes.c_float), ("distance_bounds", ctypes.c_uint32)]


class SessionOptions(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t), ("index_cache_bytes", ctypes.c_uint64),
                ("metadata_cache_bytes", ctypes.c_uint64), ("worker_threads", ctypes.c_uint32),
                ("scan_batch_readahead", ctypes.c_uint32), ("scan_fragment_readahead", ctypes.c_uint32),
                ("scan_io_buffer_bytes", ctypes.c_uint64), ("data_cache_memory_bytes", ctypes.c_uint64),
                ("data_cache_disk_bytes", ctypes.c_uint64), ("data_cache_block_bytes", ctypes.c_uint64),
                ("data_cache_disk_dir", cstr), ("data_cache_disabled", ctypes.c_uint32)]


class SessionStats(Sized):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (n, ctypes.c_uint64) for n in (
            "index_hits", "index_misses", "index_entries", "index_bytes", "metadata_hits", "metadata_misses",
            "metadata_entries", "metadata_bytes", "data_cache_hits", "data_cache_misses", "data_cache_hit_bytes",
            "data_cache_storage_requests", "data_cache_storage_bytes", "data_cache_evictions", "data_cache_errors",
            "data_cache_memory_bytes", "data_cache_disk_bytes", "data_cache_memory_capacity",
            "data_cache_disk_capacity", "data_cache_disk_enabled", "data_cache_disk_write_drops",
            "text_tail_hits", "text_tail_misses")]


PROGRESS_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p,
                                     ctypes.c_void_p)
LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)
CREDENTIALS_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)
FREE_USER_DATA = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
i32 = ctypes.c_int32
u64 = ctypes.c_uint64
sz = ctypes.c_size_t
szp = ctypes.POINTER(ctypes.c_size_t)

# name: (restype, argtypes) for every function of include/lance_host.h.
SIGNATURES = {
    "lance_catalog_open": (P, [cstrp]),
    "lance_catalog_free": (None, [P]),
    "lance_catalog_list_namespaces": (i32, [P, cstrp, sz, ctypes.c_bool, ctypes.POINTER(P)]),
    "lance_catalog_list_tables": (i32, [P, cstrp, sz, ctypes.POINTER(P)]),
    "lance_catalog_describe_table": (i32, [P, cstrp, sz, cstr, ctypes.POINTER(P)]),
    "lance_catalog_open_table": (P, [P, cstrp, sz, cstr, u64]),
    "lance_catalog_create_namespace": (i32, [P, cstrp, sz, ctypes.c_bool, cstrp]),
    "lance_catalog_drop_namespace": (i32, [P, cstrp, sz, ctypes.c_bool, ctypes.c_bool]),
    "lance_catalog_drop_table": (i32, [P, cstrp, sz, cstr, ctypes.c_bool]),
    "lance_table_info_location": (cstr, [P]),
    "lance_table_info_latest_version": (u64, [P]),
    "lance_table_info_storage_options": (cstrp, [P]),
    "lance_table_info_free": (None, [P]),
    "lance_string_list_count": (sz, [P]),
    "lance_string_list_get": (cstr, [P, sz]),
    "lance_string_list_free": (None, [P]),
    "lance_namespace_list_count": (sz, [P]),
    "lance_namespace_list_depth": (sz, [P, sz]),
    "lance_namespace_list_part": (cstr, [P, sz, sz]),
    "lance_namespace_list_free": (None, [P]),
    "lance_dataset_open": (P, [cstr, cstrp, u64]),
    "lance_dataset_open_at_timestamp": (P, [cstr, cstrp, ctypes.c_int64]),
    "lance_dataset_open_at_timestamp_us": (P, [cstr, cstrp, ctypes.c_int64]),
    "lance_dataset_free": (None, [P]),
    "lance_dataset_version": (u64, [P]),
    "lance_dataset_uri": (cstr, [P]),
    "lance_dataset_storage_format": (cstr, [P]),
    "lance_dataset_count_rows": (i32, [P, u64p]),
    "lance_dataset_schema": (i32, [P, ctypes.POINTER(ArrowSchema)]),
    "lance_dataset_fragments": (i32, [P, ctypes.POINTER(ctypes.POINTER(FragmentInfo)), szp]),
    "lance_fragment_info_list_free": (None, [ctypes.POINTER(FragmentInfo), sz]),
    "lance_dataset_latest_version": (i32, [P, u64p]),
    "lance_dataset_versions": (i32, [P, ctypes.POINTER(ctypes.POINTER(VersionInfo)), szp]),
    "lance_version_info_list_free": (None, [ctypes.POINTER(VersionInfo), sz]),
    "lance_dataset_count_rows_where_v2": (i32, [P, cstr, u64p, ctypes.POINTER(IoStats)]),
    "lance_dataset_statistics_v2": (i32, [P, ctypes.POINTER(P), ctypes.POINTER(IoStats)]),
    "lance_table_stats_fragment_count": (sz, [P]),
    "lance_table_stats_fragment_v2": (i32, [P, sz, ctypes.POINTER(FragmentStats)]),
    "lance_table_stats_column_count": (sz, [P]),
    "lance_table_stats_column_v2": (i32, [P, sz, ctypes.POINTER(ColumnStats)]),
    "lance_table_stats_free": (None, [P]),
    "lance_string_free": (None, [P]),
    "lance_dataset_export_snapshot": (i32, [P, ctypes.POINTER(u8p), szp]),
    "lance_dataset_export_split_snapshot": (i32, [P, P, ctypes.POINTER(u8p), szp]),
    "lance_snapshot_open": (P, [cstr, sz, cstrp]),
    "lance_last_error_code": (i32, []),
    "lance_last_error_message": (cstr, []),
    "lance_error_code_name": (cstr, [i32]),
    "lance_host_version": (cstr, []),
    "lance_host_build_profile": (cstr, []),
    "lance_host_build_features": (cstr, []),
    "lance_host_version_number": (ctypes.c_uint32, []),
    "lance_text_query_init": (i32, [ctypes.POINTER(TextQuery), sz]),
    "lance_dataset_plan_fts": (i32, [P, cstr, u64, ctypes.POINTER(P)]),
    "lance_dataset_fts_stats": (i32, [P, ctypes.POINTER(TextQuery), ctypes.POINTER(u8p), szp, ctypes.POINTER(IoStats)]),
    "lance_split_fts_search": (i32, [P, P, ctypes.POINTER(TextQuery), cstr, sz, StreamP]),
    "lance_split_explain_fts": (i32, [P, P, ctypes.POINTER(TextQuery), cstr, sz, ctypes.POINTER(P)]),
    "lance_fts_merge": (i32, [StreamP, sz, u64, u64, StreamP]),
    "lance_rrf_merge": (i32, [StreamP, StreamP, u64, ctypes.c_double, StreamP]),
    "lance_dataset_indexes": (i32, [P, ctypes.POINTER(P)]),
    "lance_index_list_count": (sz, [P]),
    "lance_index_list_name": (cstr, [P, sz]),
    "lance_index_list_column": (cstr, [P, sz]),
    "lance_index_list_type": (cstr, [P, sz]),
    "lance_index_list_metric": (cstr, [P, sz]),
    "lance_index_list_segment_count": (sz, [P, sz]),
    "lance_index_list_segment_v2": (i32, [P, sz, sz, ctypes.POINTER(IndexSegmentInfo)]),
    "lance_index_list_free": (None, [P]),
    "lance_dataset_prewarm_index": (i32, [P, cstr]),
    "lance_dataset_prewarm_index_with_stats_v2": (i32, [P, cstr, ctypes.POINTER(IoStats)]),
    "lance_dataset_prewarm_index_segments_v2": (i32, [P, cstr, cstr, sz, ctypes.POINTER(IoStats)]),
    "lance_dataset_plan_scan": (i32, [P, u64, ctypes.POINTER(P)]),
    "lance_changes_params_init_v2": (i32, [ctypes.POINTER(ChangesParams), sz]),
    "lance_dataset_plan_changes": (i32, [P, ctypes.POINTER(ChangesParams), ctypes.POINTER(P)]),
    "lance_dataset_plan_scan_slices": (i32, [P, u64, ctypes.POINTER(P)]),
    "lance_dataset_plan_vector_search": (i32, [P, cstr, i32, ctypes.c_bool, u64, ctypes.POINTER(P)]),
    "lance_split_plan_count": (sz, [P]),
    "lance_split_plan_get": (P, [P, sz]),
    "lance_split_plan_index_name": (cstr, [P]),
    "lance_split_plan_reason": (cstr, [P]),
    "lance_split_plan_free": (None, [P]),
    "lance_split_kind": (i32, [P]),
    "lance_split_version": (u64, [P]),
    "lance_split_uri": (cstr, [P]),
    "lance_split_row_count": (u64, [P]),
    "lance_split_fragment_ids": (u64p, [P, szp]),
    "lance_split_row_slice": (i32, [P, u64p, u64p]),
    "lance_split_segment_uuid": (i32, [P, ctypes.c_uint8 * 16]),
    "lance_split_segment_uuids": (u8p, [P, szp]),
    "lance_splits_combine": (i32, [ctypes.POINTER(P), sz, ctypes.POINTER(P)]),
    "lance_split_serialize": (i32, [P, ctypes.POINTER(u8p), szp]),
    "lance_bytes_free": (None, [u8p, sz]),
    "lance_write_params_init_v2": (i32, [ctypes.POINTER(WriteParams), sz]),
    "lance_table_write": (i32, [cstr, P, StreamP, ctypes.POINTER(WriteParams), ctypes.POINTER(P),
                                ctypes.POINTER(WriteResult)]),
    "lance_table_stage_write": (i32, [cstr, P, StreamP, ctypes.POINTER(WriteParams), ctypes.POINTER(u8p),
                                      ctypes.POINTER(sz), ctypes.POINTER(WriteResult)]),
    "lance_table_commit": (i32, [cstr, ctypes.POINTER(u8p), ctypes.POINTER(sz), sz, ctypes.POINTER(WriteParams),
                                 ctypes.POINTER(P), ctypes.POINTER(WriteResult)]),
    "lance_staged_write_abort": (i32, [ctypes.POINTER(u8p), ctypes.POINTER(sz), sz, cstrp, u64p]),
    "lance_commit_tables": (i32, [sz, cstrp, ctypes.POINTER(ctypes.POINTER(u8p)), ctypes.POINTER(ctypes.POINTER(sz)),
                                  ctypes.POINTER(sz), ctypes.POINTER(ctypes.POINTER(WriteParams)), ctypes.POINTER(P),
                                  ctypes.POINTER(ctypes.POINTER(WriteResult))]),
    "lance_dataset_delete": (i32, [P, cstr, ctypes.POINTER(WriteParams), ctypes.POINTER(P),
                                   ctypes.POINTER(WriteResult)]),
    "lance_dataset_update": (i32, [P, cstrp, cstrp, sz, cstr, ctypes.POINTER(WriteParams), ctypes.POINTER(P),
                                   ctypes.POINTER(WriteResult)]),
    "lance_merge_insert_init_v2": (i32, [ctypes.POINTER(MergeInsert), sz]),
    "lance_aggregate_init_v2": (i32, [ctypes.POINTER(AggregateSpec), sz]),
    "lance_dataset_aggregate_split": (i32, [P, P, ctypes.POINTER(AggregateSpec), ctypes.POINTER(ArrowArrayStream),
                                            ctypes.POINTER(IoStats)]),
    "lance_dataset_aggregate": (i32, [P, ctypes.POINTER(AggregateSpec), ctypes.POINTER(ArrowArrayStream),
                                      ctypes.POINTER(IoStats)]),
    "lance_aggregate_merge": (i32, [ctypes.POINTER(ArrowArrayStream), sz, ctypes.POINTER(ArrowArrayStream)]),
    "lance_compact_params_init_v2": (i32, [ctypes.POINTER(CompactParams), sz]),
    "lance_dataset_compact": (i32, [P, ctypes.POINTER(CompactParams), ctypes.POINTER(P),
                                    ctypes.POINTER(CompactResult)]),
    "lance_dataset_cleanup": (i32, [P, ctypes.c_uint64, ctypes.c_bool, u64p, u64p]),
    "lance_dataset_create_tag": (i32, [P, cstr, ctypes.c_uint64]),
    "lance_dataset_delete_tag": (i32, [P, cstr]),
    "lance_dataset_tags": (i32, [P, ctypes.POINTER(P)]),
    "lance_tag_list_count": (sz, [P]),
    "lance_tag_list_name": (cstr, [P, sz]),
    "lance_tag_list_version": (ctypes.c_uint64, [P, sz]),
    "lance_tag_list_free": (None, [P]),
    "lance_dataset_open_tag": (P, [cstr, cstrp, cstr]),
    "lance_dataset_open_branch": (P, [cstr, cstrp, cstr, u64]),
    "lance_catalog_open_table_branch": (P, [P, cstrp, sz, cstr, cstr, u64]),
    "lance_catalog_open_table_tag": (P, [P, cstrp, sz, cstr, cstr]),
    "lance_dataset_branch": (cstr, [P]),
    "lance_dataset_create_branch": (i32, [P, cstr, u64, ctypes.POINTER(P)]),
    "lance_dataset_delete_branch": (i32, [P, cstr]),
    "lance_dataset_branches": (i32, [P, ctypes.POINTER(P)]),
    "lance_branch_list_count": (sz, [P]),
    "lance_branch_list_name": (cstr, [P, sz]),
    "lance_branch_list_parent": (cstr, [P, sz]),
    "lance_branch_list_parent_version": (u64, [P, sz]),
    "lance_branch_list_free": (None, [P]),
    "lance_dataset_shallow_clone": (i32, [P, cstr, cstrp, ctypes.POINTER(P)]),
    "lance_dataset_restore": (i32, [P, ctypes.POINTER(P)]),
    "lance_dataset_update_config": (i32, [P, cstrp, cstrp, sz, ctypes.POINTER(WriteParams), ctypes.POINTER(P),
                                          ctypes.POINTER(WriteResult)]),
    "lance_dataset_config": (i32, [P, ctypes.POINTER(P)]),
    "lance_dataset_merge_insert": (i32, [P, StreamP, ctypes.POINTER(MergeInsert), ctypes.POINTER(WriteParams),
                                         ctypes.POINTER(P), ctypes.POINTER(WriteResult)]),
    "lance_dataset_stage_merge_insert": (i32, [P, StreamP, ctypes.POINTER(MergeInsert), ctypes.POINTER(u8p),
                                               ctypes.POINTER(sz), ctypes.POINTER(WriteResult)]),
    "lance_dataset_stage_delete": (i32, [P, P, cstr, ctypes.POINTER(u8p), ctypes.POINTER(sz),
                                         ctypes.POINTER(WriteResult)]),
    "lance_dataset_stage_row_deletes": (i32, [P, ctypes.POINTER(ctypes.c_uint64), sz, ctypes.POINTER(u8p),
                                              ctypes.POINTER(sz), ctypes.POINTER(WriteResult)]),
    "lance_dataset_plan_compaction": (i32, [P, ctypes.POINTER(CompactParams), ctypes.POINTER(P)]),
    "lance_bytes_list_count": (sz, [P]),
    "lance_bytes_list_get": (ctypes.c_void_p, [P, sz, szp]),
    "lance_bytes_list_free": (None, [P]),
    "lance_compaction_task_execute": (i32, [P, cstr, sz, ctypes.POINTER(u8p), ctypes.POINTER(sz)]),
    "lance_dataset_commit_compaction": (i32, [P, ctypes.POINTER(u8p), ctypes.POINTER(sz), sz,
                                              ctypes.POINTER(CompactParams), ctypes.POINTER(P),
                                              ctypes.POINTER(CompactResult)]),
    "lance_dataset_add_columns": (i32, [P, cstrp, cstrp, sz, ctypes.POINTER(P)]),
    "lance_dataset_add_null_columns": (i32, [P, ctypes.POINTER(ArrowSchema), ctypes.POINTER(P)]),
    "lance_dataset_drop_columns": (i32, [P, cstrp, sz, ctypes.POINTER(P)]),
    "lance_vector_index_params_init_v2": (i32, [ctypes.POINTER(VectorIndexParams), sz]),
    "lance_scalar_index_params_init_v2": (i32, [ctypes.POINTER(ScalarIndexParams), sz]),
    "lance_inverted_index_params_init_v2": (i32, [ctypes.POINTER(InvertedIndexParams), sz]),
    "lance_dataset_create_vector_index": (i32, [P, cstr, cstr, ctypes.c_bool, ctypes.POINTER(VectorIndexParams),
                                                ctypes.POINTER(P)]),
    "lance_dataset_create_scalar_index": (i32, [P, cstr, cstr, ctypes.c_bool, ctypes.POINTER(ScalarIndexParams),
                                                ctypes.POINTER(P)]),
    "lance_dataset_create_inverted_index": (i32, [P, cstr, cstr, ctypes.c_bool, ctypes.POINTER(InvertedIndexParams),
                                                  ctypes.POINTER(P)]),
    "lance_dataset_drop_index": (i32, [P, cstr, ctypes.POINTER(P)]),
    "lance_dataset_optimize_indexes": (i32, [P, cstr, ctypes.c_uint32, ctypes.POINTER(P)]),
    "lance_index_build_plan_params_init_v2": (i32, [ctypes.POINTER(IndexBuildPlanParams), sz]),
    "lance_dataset_train_vector_index": (i32, [P, cstr, ctypes.POINTER(VectorIndexParams), ctypes.POINTER(u8p),
                                               ctypes.POINTER(sz), ctypes.POINTER(IoStats)]),
    "lance_dataset_plan_vector_index_build": (i32, [P, cstr, cstr, ctypes.c_bool, cstr, sz,
                                                    ctypes.POINTER(IndexBuildPlanParams), ctypes.POINTER(P)]),
    "lance_dataset_plan_inverted_index_build": (i32, [P, cstr, cstr, ctypes.c_bool, ctypes.POINTER(InvertedIndexParams),
                                                      ctypes.POINTER(IndexBuildPlanParams), ctypes.POINTER(P)]),
    "lance_dataset_plan_scalar_index_build": (i32, [P, cstr, cstr, ctypes.c_bool, ctypes.POINTER(ScalarIndexParams),
                                                    ctypes.POINTER(IndexBuildPlanParams), ctypes.POINTER(P)]),
    "lance_index_build_task_execute": (i32, [P, cstr, sz, ctypes.POINTER(u8p), ctypes.POINTER(sz),
                                             ctypes.POINTER(IoStats)]),
    "lance_dataset_commit_index_build": (i32, [P, ctypes.POINTER(u8p), ctypes.POINTER(sz), sz, ctypes.c_bool,
                                               ctypes.POINTER(P)]),
    "lance_catalog_create_table": (i32, [P, cstrp, sz, cstr, StreamP, ctypes.POINTER(WriteParams), ctypes.POINTER(P),
                                         ctypes.POINTER(WriteResult)]),
    "lance_split_deserialize": (P, [cstr, sz]),
    "lance_split_open_dataset": (P, [P, cstrp]),
    "lance_split_free": (None, [P]),
    "lance_split_count_rows_v2": (i32, [P, P, cstr, u64p, ctypes.POINTER(IoStats)]),
    "lance_stream_io_stats_v2": (i32, [StreamP, ctypes.POINTER(IoStats)]),
    "lance_scan_options_init_v2": (i32, [ctypes.POINTER(ScanOptions), sz]),
    "lance_dynamic_filter_new": (i32, [P, cstrp, sz, ctypes.POINTER(P)]),
    "lance_dynamic_filter_set_sql": (i32, [P, cstr]),
    "lance_dynamic_filter_set_keys": (i32, [P, cstr, ctypes.POINTER(ArrowArray), ctypes.POINTER(ArrowSchema)]),
    "lance_dynamic_filter_generation": (i32, [P, u64p]),
    "lance_dynamic_filter_free": (None, [P]),
    "lance_dataset_scan_v2": (i32, [P, ctypes.POINTER(ScanOptions), StreamP]),
    "lance_dataset_explain_scan_v2": (i32, [P, ctypes.POINTER(ScanOptions), ctypes.POINTER(P)]),
    "lance_split_scan_v2": (i32, [P, P, ctypes.POINTER(ScanOptions), StreamP]),
    "lance_stream_cancel": (i32, [StreamP]),
    "lance_dataset_take_blobs": (i32, [P, cstr, u64p, sz, ctypes.POINTER(P)]),
    "lance_blobs_count": (sz, [P]),
    "lance_blobs_info": (i32, [P, sz, ctypes.POINTER(BlobInfo)]),
    "lance_blobs_read": (i32, [P, sz, u64, u64, ctypes.c_void_p, sz]),
    "lance_blobs_read_alloc": (i32, [P, sz, u64, u64, ctypes.POINTER(u8p), szp]),
    "lance_blobs_io_stats": (i32, [P, ctypes.POINTER(IoStats)]),
    "lance_blobs_free": (None, [P]),
    "lance_stream_poll_next": (i32, [StreamP, ctypes.POINTER(ArrowArray), WAKE, ctypes.c_void_p, ctypes.POINTER(i32)]),
    "lance_vector_query_init_v2": (i32, [ctypes.POINTER(VectorQuery), sz]),
    "lance_split_search_v2": (i32, [P, P, ctypes.POINTER(VectorQuery), StreamP]),
    "lance_split_explain_search_v2": (i32, [P, P, ctypes.POINTER(VectorQuery), ctypes.POINTER(P)]),
    "lance_dataset_refine_v2": (i32, [P, ctypes.POINTER(VectorQuery), StreamP, StreamP]),
    "lance_topk_merge": (i32, [StreamP, sz, u64, u64, StreamP]),
    "lance_session_options_default_v2": (i32, [ctypes.POINTER(SessionOptions), sz]),
    "lance_session_configure_v2": (i32, [ctypes.POINTER(SessionOptions)]),
    "lance_session_stats_v2": (i32, [ctypes.POINTER(SessionStats)]),
    "lance_session_flush_data_cache": (i32, []),
    "lance_call_context_new": (P, [u64]),
    "lance_call_context_enter": (i32, [P]),
    "lance_call_context_cancel": (i32, [P]),
    "lance_call_context_free": (None, [P]),
    "lance_call_context_set_progress": (i32, [P, PROGRESS_CALLBACK, P]),
    "lance_log_set_callback": (i32, [LOG_CALLBACK, P, i32]),
    "lance_credentials_register": (i32, [cstr, cstrp, CREDENTIALS_CALLBACK, P, FREE_USER_DATA]),
    "lance_storage_options_sink_set": (i32, [P, cstr, cstr]),
    "lance_metric_count": (sz, []),
    "lance_metric": (i32, [sz, ctypes.POINTER(cstr), u64p]),
    "lance_dataset_take_rows": (i32, [P, u64p, sz, cstrp, sz, StreamP]),
}


def library_path() -> str:
    """The bundled library next to this package, or $LANCE_HOST_LIB when set (development)."""
    env = os.environ.get("LANCE_HOST_LIB")
    if env:
        return env
    return str(Path(__file__).with_name("liblance_host.so"))


def load() -> ctypes.CDLL:
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            f"liblance_host not found at {path}: install the package with pip (which bundles it) "
            "or set LANCE_HOST_LIB to a built liblance_host.so")
    lib = ctypes.CDLL(path)
    for name, (res, args) in SIGNATURES.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


LIB = load()
