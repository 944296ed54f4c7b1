"""Writes and their results: row changes, schema changes and maintenance on a `Dataset`, and the
parameters and results of every write entry point."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _ffi
from ._ffi import LIB
from .errors import _check, _choice, _error
from ._marshal import (
    _byte_arrays, _bytes_list, ArrowData, _cstrings, _keyword_names, _keywords, _kv, _take_bytes, WHEN_MATCHED, WHEN_NOT_MATCHED,
    WHEN_NOT_MATCHED_BY_SOURCE, WRITE_MODES,
)
from .split import Split

if TYPE_CHECKING:  # annotations only: these modules build on this one
    from .dataset import Dataset


@dataclass(frozen=True)
class WriteResult:
    """What a write did (LanceWriteResult): the version committed (0 for a staged write), rows,
    fragments, files and bytes written, rows deleted, updated and inserted, and whether this
    call committed (False for a staged write and for a repeated commit of an already committed
    statement)."""
    version: int
    rows_written: int
    fragments_written: int
    files_written: int
    bytes_written: int
    rows_deleted: int
    rows_updated: int
    rows_inserted: int
    committed: bool

    @staticmethod
    def _from(r) -> "WriteResult":
        return WriteResult(r.version, r.rows_written, r.fragments_written, r.files_written, r.bytes_written,
                           r.rows_deleted, r.rows_updated, r.rows_inserted, bool(r.committed))


class StagedWrite:
    """One worker's uncommitted share of a write (lance_table_stage_write): the staged-write
    bytes, which name the table, the mode and the version the write was planned at, and carry
    the written files' names, never rows or credentials. It pickles (bytes and result);
    `bytes(s)` gives the bytes to ship any other way and `StagedWrite(b)` takes them back.
    `result` is what the worker wrote (None for one rebuilt from bare bytes)."""

    def __init__(self, data: bytes, result: Optional[WriteResult] = None):
        self._bytes = bytes(data)
        self.result = result

    def __bytes__(self) -> bytes:
        return self._bytes

    def __reduce__(self):
        return (StagedWrite, (self._bytes, self.result))

    def __repr__(self):
        return f"StagedWrite({len(self._bytes)} bytes)"


@dataclass(frozen=True)
class CompactResult:
    """What a compaction did (LanceCompactResult): the version (this handle's when there was
    nothing to do), fragments and files removed and added."""
    version: int
    fragments_removed: int
    fragments_added: int
    files_removed: int
    files_added: int

    @staticmethod
    def _from(r) -> "CompactResult":
        return CompactResult(r.version, r.fragments_removed, r.fragments_added, r.files_removed, r.files_added)


def _compact_params(target_rows_per_fragment: int, max_rows_per_group: int, deletion_threshold: float,
                    keep_deletions: bool):
    p = _ffi.CompactParams()
    _check(LIB.lance_compact_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    p.target_rows_per_fragment, p.max_rows_per_group = target_rows_per_fragment, max_rows_per_group
    p.deletion_threshold, p.keep_deletions = deletion_threshold, 1 if keep_deletions else 0
    return p


def _merge_spec(on, when_matched, when_not_matched, when_not_matched_by_source, when_matched_condition,
                by_source_condition):
    """A LanceMergeInsert and the buffers it points into (keep both alive for the call)."""
    keys = [on] if isinstance(on, str) else list(on)
    m = _ffi.MergeInsert()
    _check(LIB.lance_merge_insert_init_v2(ctypes.byref(m), ctypes.sizeof(m)))
    arr, n = _cstrings(keys)
    m.on, m.num_on = arr, n
    m.when_matched = _choice("when_matched", when_matched, WHEN_MATCHED)
    m.when_not_matched = _choice("when_not_matched", when_not_matched, WHEN_NOT_MATCHED)
    m.when_not_matched_by_source = _choice("when_not_matched_by_source", when_not_matched_by_source,
                                           WHEN_NOT_MATCHED_BY_SOURCE)
    if when_matched_condition is not None:
        m.when_matched_condition = when_matched_condition.encode()
    if by_source_condition is not None:
        m.by_source_condition = by_source_condition.encode()
    return m, arr


@dataclass(frozen=True)
class CleanupResult:
    """What a cleanup removed: old versions and bytes."""
    versions_removed: int
    bytes_removed: int


def _write_struct(mode: Optional[str], max_rows_per_file: int = 0, max_rows_per_group: int = 0,
                  max_bytes_per_file: int = 0, storage_version: Optional[str] = None,
                  storage_options: Optional[Mapping[str, str]] = None, commit_message: Optional[str] = None,
                  transaction_properties: Optional[Mapping[str, str]] = None, statement_id: Optional[str] = None,
                  commit_retries: Optional[int] = None, retry_timeout_ms: int = 0, expected_version: int = 0,
                  required_config: Optional[Mapping[str, str]] = None, stable_row_ids: bool = False):
    p = _ffi.WriteParams()
    _check(LIB.lance_write_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    keep = []
    if mode is not None:
        p.mode = _choice("write mode", mode, WRITE_MODES)
    for name, value in [("max_rows_per_file", max_rows_per_file), ("max_rows_per_group", max_rows_per_group),
                        ("max_bytes_per_file", max_bytes_per_file), ("retry_timeout_ms", retry_timeout_ms),
                        ("expected_version", expected_version)]:
        if not isinstance(value, int) or value < 0:
            raise _error(1, f"{name} must be a non-negative integer, not {value!r}")
        setattr(p, name, value)
    if not isinstance(stable_row_ids, bool):
        raise _error(1, f"stable_row_ids must be True or False, not {stable_row_ids!r}")
    p.stable_row_ids = int(stable_row_ids)
    if commit_retries is not None:
        if not isinstance(commit_retries, int) or commit_retries < 0:
            raise _error(1, f"commit_retries must be a non-negative integer, not {commit_retries!r}")
        p.commit_retries = commit_retries if commit_retries > 0 else -1  # C: 0 = default, < 0 = none
    for name, value in [("storage_version", storage_version), ("commit_message", commit_message),
                        ("statement_id", statement_id)]:
        if value is not None:
            setattr(p, name, str(value).encode())
    for name, value in [("storage_options", storage_options), ("transaction_properties", transaction_properties),
                        ("required_config", required_config)]:
        kv = _kv(value)
        keep.append(kv)
        setattr(p, name, ctypes.cast(kv, _ffi.cstrp) if kv is not None else None)
    return p, keep


def _stream_of(data):
    """A C stream the library takes over, from a pyarrow Table, RecordBatch, RecordBatchReader
    or any object with `__arrow_c_stream__`."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        data = data.to_reader()
    elif not isinstance(data, pa.RecordBatchReader):
        if not hasattr(data, "__arrow_c_stream__"):
            raise _error(1, f"data must be a pyarrow Table, RecordBatch, RecordBatchReader or an Arrow C stream "
                            f"exporter, not {type(data).__name__}")
        data = pa.RecordBatchReader.from_stream(data)
    c = _ffi.ArrowArrayStream()
    data._export_to_c(ctypes.addressof(c))
    return c


def _staged_arrays(staged):
    return _byte_arrays([bytes(s) for s in staged])


_WRITE_OPTIONS = _keyword_names(_write_struct, "mode")


def _write_params(mode: Optional[str], **params):
    """The LanceWriteParams of a write or commit; unknown parameter names are refused naming the
    caller."""
    return _write_struct(mode, **_keywords(params, _WRITE_OPTIONS))


# What a one-call row change (delete, update, merge_insert) takes of the write parameters: the
# commit's, not the file layout's (a row change writes with the table's own settings).
_ROW_CHANGE_OPTIONS = ("commit_retries", "retry_timeout_ms", "statement_id", "commit_message",
                       "transaction_properties", "expected_version", "required_config")


# What a commit takes: the commit's parameters and the storage options; the file layout was
# decided when the shares were written.
_COMMIT_OPTIONS = _ROW_CHANGE_OPTIONS + ("storage_options",)


def _commit_params(**params):
    """`_write_params` of a commit of staged writes: a file-layout parameter (which the commit
    would not use) is refused, not ignored."""
    return _write_struct(None, **_keywords(params, _COMMIT_OPTIONS))


def _row_change_params(**params):
    """`_write_params` of a row change: a write parameter it would not use is refused, not ignored."""
    return _write_struct(None, **_keywords(params, _ROW_CHANGE_OPTIONS))


class DatasetWrites:
    """The write methods of `Dataset`: row changes, staged shares, schema changes, compaction."""

    # writes
    def delete(self, predicate: str, **params) -> tuple["Dataset", "WriteResult"]:
        """Delete the rows matching the Lance SQL `predicate` as one new version planned at this
        handle's version (lance_dataset_delete); this handle keeps its version. Returns the new
        version pinned and its `WriteResult` (`rows_deleted`). Params (as for update and
        merge_insert): commit_retries, retry_timeout_ms, statement_id (once per statement),
        commit_message, transaction_properties, and the preconditions expected_version and
        required_config; any other write parameter is refused, not ignored."""
        p, keep = _row_change_params(**params)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_delete(self._h, predicate.encode(), ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return type(self)(out.value), WriteResult._from(r)

    def update(self, values: Mapping[str, str], where: Optional[str] = None, **params) -> tuple["Dataset", "WriteResult"]:
        """`UPDATE t SET column = expression [, ...] WHERE where` (lance_dataset_update):
        `values` maps columns to Lance SQL expressions over the row (e.g. {"price": "price * 2"});
        `where` None updates every row. One new version planned at this handle's version;
        returns it pinned and its `WriteResult` (`rows_updated`)."""
        if not isinstance(values, Mapping) or not values:
            raise _error(1, "values must be a non-empty mapping of column -> SQL expression")
        cols, n = _cstrings(list(values.keys()))
        exprs, _ = _cstrings([str(v) for v in values.values()])
        p, keep = _row_change_params(**params)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_update(self._h, cols, exprs, n, where.encode() if where is not None else None,
                                        ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return type(self)(out.value), WriteResult._from(r)

    def merge_insert(self, data: ArrowData, on: Union[str, Sequence[str]], when_matched: str = "do_nothing",
                     when_not_matched: str = "insert", when_not_matched_by_source: str = "keep", *,
                     when_matched_condition: Optional[str] = None, by_source_condition: Optional[str] = None,
                     **params) -> tuple["Dataset", "WriteResult"]:
        """MERGE INTO this table from `data` (a pyarrow Table, RecordBatchReader, ...) by the key
        column(s) `on` (lance_dataset_merge_insert). `when_matched`: 'do_nothing', 'update_all'
        (upsert), 'update_if' (with `when_matched_condition`), 'delete', 'fail';
        `when_not_matched`: 'insert', 'do_nothing'; `when_not_matched_by_source`: 'keep',
        'delete', 'delete_if' (with `by_source_condition`). One new version planned at this
        handle's version; returns it pinned and its `WriteResult` (rows inserted, updated,
        deleted)."""
        m, keep_m = _merge_spec(on, when_matched, when_not_matched, when_not_matched_by_source,
                                when_matched_condition, by_source_condition)
        p, keep = _row_change_params(**params)
        c = _stream_of(data)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_merge_insert(self._h, ctypes.byref(c), ctypes.byref(m), ctypes.byref(p),
                                              ctypes.byref(out), ctypes.byref(r)))
        return type(self)(out.value), WriteResult._from(r)

    def stage_merge_insert(self, data: ArrowData, on: Union[str, Sequence[str]], when_matched: str = "do_nothing",
                           when_not_matched: str = "insert", when_not_matched_by_source: str = "keep", *,
                           when_matched_condition: Optional[str] = None,
                           by_source_condition: Optional[str] = None) -> "StagedWrite":
        """`merge_insert` without the commit (lance_dataset_stage_merge_insert): the rows it
        writes go to new files, and the returned `StagedWrite` names them. Commit it alone with
        `commit(uri, [staged], ...)` (statement id, commit message and retries apply there), or
        discard it with `abort_staged`. `result` has the rows inserted, updated and deleted."""
        m, keep_m = _merge_spec(on, when_matched, when_not_matched, when_not_matched_by_source,
                                when_matched_condition, by_source_condition)
        c = _stream_of(data)
        out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_stage_merge_insert(self._h, ctypes.byref(c), ctypes.byref(m), ctypes.byref(out),
                                                    ctypes.byref(n), ctypes.byref(r)))
        return StagedWrite(_take_bytes(out, n), WriteResult._from(r))

    def stage_delete(self, predicate: str, split: Optional["Split"] = None) -> "StagedWrite":
        """One worker's share of a delete without the commit (lance_dataset_stage_delete): the
        rows of `split`'s fragments (a scan split of this handle's version; None = every
        fragment) matching `predicate` are marked deleted in new deletion files. Give every
        worker its own split and one predicate; the coordinator commits all shares as one
        delete with `commit(uri, shares)`. `result.rows_deleted` counts the share's rows."""
        out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_stage_delete(self._h, split._h if split is not None else None, predicate.encode(),
                                              ctypes.byref(out), ctypes.byref(n), ctypes.byref(r)))
        return StagedWrite(_take_bytes(out, n), WriteResult._from(r))

    def stage_row_deletes(self, row_addresses: Sequence[int]) -> "StagedWrite":
        """One worker's share of a row-level change without the commit
        (lance_dataset_stage_row_deletes): the rows at `row_addresses` (`_rowaddr` values read
        from this handle's version) are deleted when the coordinator commits. Nothing is written
        now. The rows written instead (new values, inserts) are a `stage_write(uri, rows,
        "append", at=this handle)`; `commit(uri, row_deletes + appends)` lands them all as ONE
        version, or fails with LANCE_ERR_CONFLICT when a concurrent commit changed one of the
        same rows."""
        try:
            addrs = [int(a) for a in row_addresses]
        except (TypeError, ValueError):
            raise _error(1, "row_addresses must be integers (_rowaddr values)") from None
        if any(a < 0 or a >= 2 ** 64 for a in addrs):
            raise _error(1, "a row address must be an unsigned 64-bit integer")
        arr = (ctypes.c_uint64 * len(addrs))(*addrs)
        out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_stage_row_deletes(self._h, arr, len(addrs), ctypes.byref(out), ctypes.byref(n),
                                                   ctypes.byref(r)))
        return StagedWrite(_take_bytes(out, n), WriteResult._from(r))

    # schema changes
    def add_columns(self, columns: Mapping[str, str]) -> "Dataset":
        """Add columns whose values are Lance SQL expressions over each row, e.g.
        {"total": "price * qty"} (lance_dataset_add_columns), as one new version planned at this
        handle's version; returns it pinned."""
        if not isinstance(columns, Mapping) or not columns:
            raise _error(1, "columns must be a non-empty mapping of name -> SQL expression")
        names, n = _cstrings(list(columns.keys()))
        exprs, _ = _cstrings([str(v) for v in columns.values()])
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_add_columns(self._h, names, exprs, n, ctypes.byref(out)))
        return type(self)(out.value)

    def add_null_columns(self, schema: "pa.Schema") -> "Dataset":
        """Add the (nullable) fields of the pyarrow `schema` as columns that are null in every
        existing row (lance_dataset_add_null_columns; metadata only). Returns the new version."""
        if not isinstance(schema, pa.Schema):
            raise _error(1, f"schema must be a pyarrow Schema, not {type(schema).__name__}")
        c = _ffi.ArrowSchema()
        schema._export_to_c(ctypes.addressof(c))
        try:
            out = ctypes.c_void_p()
            _check(LIB.lance_dataset_add_null_columns(self._h, ctypes.byref(c), ctypes.byref(out)))
        finally:
            pa.Schema._import_from_c(ctypes.addressof(c))  # pyarrow takes it back and releases it
        return type(self)(out.value)

    def drop_columns(self, names: Union[str, Sequence[str]]) -> "Dataset":
        """Drop columns (lance_dataset_drop_columns; metadata only: compact and cleanup reclaim
        the space), as one new version; returns it pinned."""
        arr, n = _cstrings([names] if isinstance(names, str) else list(names))
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_drop_columns(self._h, arr, n, ctypes.byref(out)))
        return type(self)(out.value)

    # maintenance
    def compact(self, target_rows_per_fragment: int = 0, max_rows_per_group: int = 0,
                deletion_threshold: float = 0.0, keep_deletions: bool = False) -> tuple["Dataset", "CompactResult"]:
        """Rewrite small fragments (and fragments with many deleted rows) into larger ones as one
        new version planned at this handle's version (lance_dataset_compact); 0 = Lance's
        default. Nothing to do commits nothing (the result's version is this handle's)."""
        p = _compact_params(target_rows_per_fragment, max_rows_per_group, deletion_threshold, keep_deletions)
        out, r = ctypes.c_void_p(), _ffi.CompactResult.new()
        _check(LIB.lance_dataset_compact(self._h, ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return type(self)(out.value), CompactResult._from(r)

    def plan_compaction(self, target_rows_per_fragment: int = 0, max_rows_per_group: int = 0,
                        deletion_threshold: float = 0.0, keep_deletions: bool = False) -> list:
        """Plan a distributed compaction at this handle's version (lance_dataset_plan_compaction):
        a list of tasks as bytes (empty when there is nothing to do). Ship each to a worker, which
        runs `execute_compaction_task`; commit the results once with `commit_compaction`."""
        p = _compact_params(target_rows_per_fragment, max_rows_per_group, deletion_threshold, keep_deletions)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_compaction(self._h, ctypes.byref(p), ctypes.byref(h)))
        return _bytes_list(h)

    def execute_compaction_task(self, task: bytes) -> bytes:
        """Execute one compaction task on a worker (lance_compaction_task_execute): its fragments
        are rewritten into new files, nothing is committed; returns the result as bytes."""
        task = bytes(task)
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_compaction_task_execute(self._h, task, len(task), ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    def commit_compaction(self, results: Sequence[bytes], target_rows_per_fragment: int = 0,
                          max_rows_per_group: int = 0, deletion_threshold: float = 0.0,
                          keep_deletions: bool = False) -> tuple["Dataset", "CompactResult"]:
        """Commit the results of one compaction plan's tasks as ONE new version
        (lance_dataset_commit_compaction; indexes remapped). Results of failed tasks may be left
        out. Pass the options the plan was made with."""
        p = _compact_params(target_rows_per_fragment, max_rows_per_group, deletion_threshold, keep_deletions)
        results = [bytes(b) for b in results]
        ptrs, lens, bufs = _byte_arrays(results)
        out, r = ctypes.c_void_p(), _ffi.CompactResult.new()
        _check(LIB.lance_dataset_commit_compaction(self._h, ptrs, lens, len(results), ctypes.byref(p),
                                                   ctypes.byref(out), ctypes.byref(r)))
        return type(self)(out.value), CompactResult._from(r)

    def cleanup(self, older_than_ms: int, delete_unverified: bool = False) -> "CleanupResult":
        """Remove the table's versions committed more than `older_than_ms` ago and the files only
        they use (lance_dataset_cleanup); the latest and tagged versions stay. A reader pinned to
        a removed version fails on its next read."""
        if not isinstance(older_than_ms, int) or older_than_ms < 0:
            raise _error(1, f"older_than_ms must be a non-negative integer, not {older_than_ms!r}")
        versions, nbytes = ctypes.c_uint64(), ctypes.c_uint64()
        _check(LIB.lance_dataset_cleanup(self._h, older_than_ms, delete_unverified, ctypes.byref(versions),
                                         ctypes.byref(nbytes)))
        return CleanupResult(versions.value, nbytes.value)


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    strings = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    binaries = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
    return any(any(f(a) for f in group) and any(f(b) for f in group) for group in (strings, binaries))


def conform_types(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Engines (Polars, Daft) hand strings and binaries as large (or view) types: for an append to
    a table that stores them otherwise, cast them to the table's type (the values are
    unchanged). Anything else is left for the library to accept or refuse. Used by the engine
    layers' appends."""
    columns = []
    for field, column in zip(data.schema, data.columns):
        index = schema.get_field_index(field.name)
        if index >= 0 and field.type != schema.field(index).type and _same_kind(field.type, schema.field(index).type):
            column = column.cast(schema.field(index).type)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=data.column_names)
