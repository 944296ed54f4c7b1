"""The entry points on a table location: open (at a version, timestamp, tag or token), write
in one call, stage and commit, and the coordinator of a distributed index build."""

from __future__ import annotations

import ctypes
from typing import Callable, Mapping, Optional, Sequence

from . import _ffi
from ._ffi import LIB
from .errors import _check, _error
from ._marshal import _kv, ArrowData, SCALAR_INDEX_TYPES, _take_bytes, VECTOR_INDEX_TYPES
from .write import _commit_params, _staged_arrays, StagedWrite, _stream_of, _write_params, WriteResult
from .dataset import Dataset


def open(uri: str, version: Optional[int] = None, storage_options: Optional[Mapping[str, str]] = None,
         branch: Optional[str] = None) -> Dataset:
    """Open `uri` pinned at `version` (latest when None) (lance_dataset_open); with `branch`,
    at `version` of that branch ('main' = the default one; lance_dataset_open_branch)."""
    if branch is not None:
        return Dataset(LIB.lance_dataset_open_branch(uri.encode(), _kv(storage_options), branch.encode(), version or 0))
    return Dataset(LIB.lance_dataset_open(uri.encode(), _kv(storage_options), version or 0))


def open_at_timestamp(uri: str, timestamp_ms: Optional[int] = None, storage_options: Optional[Mapping[str, str]] = None,
                      *, timestamp_us: Optional[int] = None) -> Dataset:
    """The latest version committed at or before `timestamp_ms` (its .000; lance_dataset_open_at_timestamp)
    or, with `timestamp_us`, at or before that microsecond (lance_dataset_open_at_timestamp_us).
    A `datetime` is taken at its microsecond."""
    if (timestamp_ms is None) == (timestamp_us is None):
        raise _error(1, "give one of timestamp_ms and timestamp_us")
    if timestamp_ms is not None and hasattr(timestamp_ms, "timestamp"):  # a datetime
        import datetime as _dt
        t = timestamp_ms if timestamp_ms.tzinfo else timestamp_ms.replace(tzinfo=_dt.timezone.utc)
        timestamp_ms, timestamp_us = None, (t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)
    for name, v in [("timestamp_ms", timestamp_ms), ("timestamp_us", timestamp_us)]:
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise _error(1, f"{name} must be an integer, not {v!r}")
    if timestamp_us is not None:
        return Dataset(LIB.lance_dataset_open_at_timestamp_us(uri.encode(), _kv(storage_options), timestamp_us))
    return Dataset(LIB.lance_dataset_open_at_timestamp(uri.encode(), _kv(storage_options), timestamp_ms))


def open_snapshot(token: bytes, storage_options: Optional[Mapping[str, str]] = None) -> Dataset:
    """Open a shipped snapshot token without reading the manifest (lance_snapshot_open)."""
    return Dataset(LIB.lance_snapshot_open(token, len(token), _kv(storage_options)))


def open_tag(uri: str, tag: str, storage_options: Optional[Mapping[str, str]] = None) -> "Dataset":
    """Open the table pinned at the version `tag` names (lance_dataset_open_tag)."""
    return Dataset(LIB.lance_dataset_open_tag(uri.encode(), _kv(storage_options), tag.encode()))


def write_table(uri: str, data: ArrowData, mode: str = "create", *, at: Optional["Dataset"] = None,
                **params) -> tuple["Dataset", WriteResult]:
    """Write `data` (a pyarrow Table, RecordBatch, RecordBatchReader or Arrow C stream exporter)
    to the table at `uri` as ONE new version (lance_table_write): mode 'create', 'append' or
    'overwrite'. `at` pins the version an append or overwrite is planned at (else the latest).
    Params: max_rows_per_file, max_rows_per_group, max_bytes_per_file, storage_version,
    storage_options, commit_message, transaction_properties, statement_id, commit_retries,
    retry_timeout_ms. Returns the new version pinned and what was written; a failure commits
    nothing."""
    p, keep = _write_params(mode, **params)
    c = _stream_of(data)
    out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
    _check(LIB.lance_table_write(uri.encode(), at._h if at is not None else None, ctypes.byref(c), ctypes.byref(p),
                                 ctypes.byref(out), ctypes.byref(r)))
    return Dataset(out.value), WriteResult._from(r)


def stage_write(uri: str, data: ArrowData, mode: str = "append", *, at: Optional["Dataset"] = None, **params) -> StagedWrite:
    """Write `data` as one worker's share of a write without committing it
    (lance_table_stage_write). Appends need `at`, the coordinator's pinned version (e.g.
    `open_snapshot(token)` on the worker); a create has none. Ship the returned `StagedWrite`
    (it pickles) to the coordinator, which calls `commit` once for all shares."""
    p, keep = _write_params(mode, **params)
    c = _stream_of(data)
    out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
    _check(LIB.lance_table_stage_write(uri.encode(), at._h if at is not None else None, ctypes.byref(c),
                                       ctypes.byref(p), ctypes.byref(out), ctypes.byref(n), ctypes.byref(r)))
    return StagedWrite(_take_bytes(out, n), WriteResult._from(r))


def commit(uri: str, staged: Sequence[StagedWrite], **params) -> tuple["Dataset", WriteResult]:
    """Commit the staged writes of one statement as ONE new version of the table at `uri`
    (lance_table_commit): all rows visible or none. One kind per commit: shares of a create,
    append or overwrite; shares of one delete (`Dataset.stage_delete`); or one merge-insert
    (`Dataset.stage_merge_insert`). With `statement_id`, a statement already
    committed returns that version with `committed=False` and writes nothing. A commit that
    lost to a concurrent writer raises ConflictError. Params: the commit's (statement_id,
    commit_message, transaction_properties, commit_retries, retry_timeout_ms, expected_version,
    required_config) and storage_options; the staged bytes give the mode, and a file-layout
    parameter (max_rows_per_file, ...) — decided when the shares were written — is refused."""
    staged = list(staged)
    p, keep = _commit_params(**params)
    ptrs, lens, bufs = _staged_arrays(staged)
    out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
    _check(LIB.lance_table_commit(uri.encode(), ptrs, lens, len(staged), ctypes.byref(p), ctypes.byref(out),
                                  ctypes.byref(r)))
    return Dataset(out.value), WriteResult._from(r)


def commit_tables(tables: Sequence[tuple]) -> list[tuple["Dataset", WriteResult]]:
    """Commit the staged writes of several tables TOGETHER (lance_commit_tables): every table
    gets its new version, or none does. `tables` holds `(uri, staged)` or
    `(uri, staged, params)` per table (`params` a dict of `commit`'s params: statement_id,
    expected_version, required_config, ...). The tables must be managed by one namespace that
    commits several tables at once (`batch_commit_tables`), each opened through a `Catalog` of
    it in this process; otherwise NotSupportedError and nothing is committed. A table whose
    latest version moved raises ConflictError (nothing committed; commit again). Returns each
    table's new version pinned and what was committed, in order."""
    tables = list(tables)
    n = len(tables)
    uris, ptr_arrays, len_arrays, counts, param_ptrs, keep = [], [], [], [], [], []
    for i, t in enumerate(tables):
        if not isinstance(t, (tuple, list)) or len(t) not in (2, 3) or not isinstance(t[0], str):
            raise _error(1, f"tables[{i}] must be (uri, staged) or (uri, staged, params), not {t!r}")
        uri, staged = t[0], list(t[1])
        params = t[2] if len(t) > 2 and t[2] is not None else {}
        if not isinstance(params, Mapping):
            raise _error(1, f"tables[{i}]: params must be a dict, not {params!r}")
        p, kept = _commit_params(**params)
        ptrs, lens, bufs = _staged_arrays(staged)
        keep += [p, kept, ptrs, lens, bufs]
        uris.append(uri.encode())
        ptr_arrays.append(ctypes.cast(ptrs, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8))))
        len_arrays.append(ctypes.cast(lens, ctypes.POINTER(ctypes.c_size_t)))
        counts.append(len(staged))
        param_ptrs.append(ctypes.pointer(p))
    c_uris = (ctypes.c_char_p * n)(*uris)
    c_ptrs = (ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)) * n)(*ptr_arrays)
    c_lens = (ctypes.POINTER(ctypes.c_size_t) * n)(*len_arrays)
    c_counts = (ctypes.c_size_t * n)(*counts)
    c_params = (ctypes.POINTER(_ffi.WriteParams) * n)(*param_ptrs)
    outs = (ctypes.c_void_p * n)()
    results = [_ffi.WriteResult.new() for _ in range(n)]
    c_results = (ctypes.POINTER(_ffi.WriteResult) * n)(*[ctypes.pointer(r) for r in results])
    _check(LIB.lance_commit_tables(n, c_uris, c_ptrs, c_lens, c_counts, c_params, outs, c_results))
    return [(Dataset(outs[i]), WriteResult._from(results[i])) for i in range(n)]


def abort_staged(staged: Sequence[StagedWrite], storage_options: Optional[Mapping[str, str]] = None) -> int:
    """Delete the files of staged writes that will not be committed (lance_staged_write_abort):
    data files, and deletion files of staged deletes and merge-inserts. A file the table's
    latest version uses is never deleted (an abort after a commit that landed deletes nothing
    it needs). Returns the number of files deleted (0 when repeated)."""
    staged = list(staged)
    ptrs, lens, bufs = _staged_arrays(staged)
    n = ctypes.c_uint64()
    _check(LIB.lance_staged_write_abort(ptrs, lens, len(staged), _kv(storage_options), ctypes.byref(n)))
    return n.value


def build_index(uri: str, column: str, index_type: str, run_tasks: Callable[[list], list], *,
                name: Optional[str] = None, replace: bool = False, num_splits: int = 0,
                unindexed_only: bool = False, merge: bool = False, model: Optional[bytes] = None,
                storage_options: Optional[Mapping[str, str]] = None, **params) -> tuple["Dataset", bytes]:
    """The coordinator of a distributed index build, for any task runner: opens the table,
    trains the model (vector types; or uses `model` from an earlier build), plans the tasks,
    hands them to `run_tasks(tasks) -> segments` (which runs `Dataset.execute_index_build_task`
    of each task anywhere: Spark executors, Ray tasks, processes) and commits the segments as
    one index in one version. `index_type`: a vector type ('IVF_PQ', ...), 'INVERTED', or a
    scalar type ('BTREE', 'BITMAP', 'LABEL_LIST'); `params` are the settings of the matching
    `create_*_index`. Returns the committed version and the model bytes (empty for non-vector
    types) to keep for `unindexed_only` builds after appends. With nothing to index (an
    `unindexed_only` build of a covered table) nothing is committed and the opened version is
    returned."""
    kind = index_type.upper() if isinstance(index_type, str) else index_type
    ds = open(uri, storage_options=storage_options)
    plan_args = dict(name=name, replace=replace, num_splits=num_splits, unindexed_only=unindexed_only)
    if kind in VECTOR_INDEX_TYPES:
        if model is None:
            model = ds.train_vector_index(column, kind, **params)
        tasks = ds.plan_vector_index_build(column, model, **plan_args)
    elif kind == "INVERTED":
        model = b""
        tasks = ds.plan_inverted_index_build(column, **plan_args, **params)
    elif kind in SCALAR_INDEX_TYPES:
        if params:
            raise _error(1, f"a {kind} index takes no settings, not {sorted(params)}")
        model = b""
        tasks = ds.plan_scalar_index_build(column, kind, **plan_args)
    else:
        valid = ", ".join(repr(k) for k in list(VECTOR_INDEX_TYPES) + ["INVERTED"] + list(SCALAR_INDEX_TYPES))
        raise _error(1, f"unknown index type {index_type!r}; valid: {valid}")
    if not tasks:
        return ds, bytes(model)
    segments = list(run_tasks(list(tasks)))
    if len(segments) != len(tasks):
        raise _error(1, f"run_tasks returned {len(segments)} segments for {len(tasks)} tasks")
    return ds.commit_index_build(segments, merge=merge), bytes(model)
