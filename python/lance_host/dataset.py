"""`Dataset`: a table pinned at one version, and the facts it reports (fragments, versions,
indexes, statistics)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import pyarrow as pa

from . import _ffi
from ._ffi import LIB
from .errors import _check, _error, _ptr
from ._marshal import _cstrings, _kv, _take_bytes, _take_string, Handle
from .stream import _import_reader, IoStats, Stream
from .split import _plan, Split
from .query import _scan_options
from .blobs import Blobs
from .search import DatasetSearch
from .aggregate import DatasetAggregates
from .index import DatasetIndexes
from .write import DatasetWrites, _write_params, WriteResult


@dataclass(frozen=True)
class FragmentInfo:
    """One fragment of the pinned version: its id, rows visible and stored, rows deleted and
    number of data files."""

    id: int
    logical_rows: int
    physical_rows: int
    deleted_rows: int
    data_file_count: int


@dataclass(frozen=True)
class VersionInfo:
    """One version of the table: its number and commit time (milliseconds since the epoch)."""

    version: int
    timestamp_ms: int


@dataclass(frozen=True)
class TableStatistics:
    """What a planner needs of the pinned version (`Dataset.statistics`): per fragment
    `(fragment_id, physical_rows, deleted_rows, bytes_on_disk or None)`, per column
    `(name, bytes_on_disk or None)`, and the I/O made to gather them."""

    fragments: list = field(default_factory=list)  # (fragment_id, physical_rows, deleted_rows, bytes_on_disk or None)
    columns: list = field(default_factory=list)    # (name, bytes_on_disk or None)
    io: IoStats = IoStats()


class Dataset(DatasetAggregates, DatasetSearch, DatasetIndexes, DatasetWrites):
    """A table pinned at one version (LanceDataset). Thread-safe; free with `close()` or by GC."""

    def __init__(self, handle: Handle):
        self._h = _ptr(handle)

    # identity
    @property
    def version(self) -> int:
        """The pinned version this handle reads (it never moves)."""
        return LIB.lance_dataset_version(self._h)

    @property
    def uri(self) -> str:
        """The table's URI."""
        return LIB.lance_dataset_uri(self._h).decode()

    @property
    def storage_format(self) -> str:
        """The data storage format version of the table's files, e.g. '2.0'."""
        return LIB.lance_dataset_storage_format(self._h).decode()

    @property
    def schema(self) -> pa.Schema:
        """The table's Arrow schema at the pinned version."""
        s = _ffi.ArrowSchema()
        _check(LIB.lance_dataset_schema(self._h, ctypes.byref(s)))
        return pa.Schema._import_from_c(ctypes.addressof(s))

    def latest_version(self) -> int:
        """The table's latest committed version now (reads the store; the handle stays pinned)."""
        out = ctypes.c_uint64()
        _check(LIB.lance_dataset_latest_version(self._h, ctypes.byref(out)))
        return out.value

    def versions(self) -> list[VersionInfo]:
        """Every version of the table with its commit time, oldest first."""
        p, n = ctypes.POINTER(_ffi.VersionInfo)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_versions(self._h, ctypes.byref(p), ctypes.byref(n)))
        try:
            return [VersionInfo(p[i].version, p[i].timestamp_ms) for i in range(n.value)]
        finally:
            LIB.lance_version_info_list_free(p, n.value)

    def fragments(self) -> list[FragmentInfo]:
        """The fragments of the pinned version: id, logical/physical/deleted rows, data files."""
        p, n = ctypes.POINTER(_ffi.FragmentInfo)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_fragments(self._h, ctypes.byref(p), ctypes.byref(n)))
        try:
            return [FragmentInfo(p[i].id, p[i].logical_rows, p[i].physical_rows, p[i].deleted_rows,
                                 p[i].data_file_count) for i in range(n.value)]
        finally:
            LIB.lance_fragment_info_list_free(p, n.value)

    def export_snapshot(self) -> bytes:
        """A token a worker opens without reading the manifest (lance_dataset_export_snapshot)."""
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_export_snapshot(self._h, ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    def export_split_snapshot(self, split: Split) -> bytes:
        """A token carrying only what scan split `split` reads: the manifest cut down to its
        fragments (lance_dataset_export_split_snapshot). The dataset `open_snapshot` makes of it
        runs scan splits of those fragments and refuses whole-table calls."""
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_export_split_snapshot(self._h, split._h, ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    def statistics(self) -> TableStatistics:
        """Per-fragment rows and bytes and per-column bytes on disk, with the I/O made to get them."""
        h, io = ctypes.c_void_p(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_statistics_v2(self._h, ctypes.byref(h), ctypes.byref(io)))
        try:
            frags, cols = [], []
            for i in range(LIB.lance_table_stats_fragment_count(h)):
                f = _ffi.FragmentStats.new()
                _check(LIB.lance_table_stats_fragment_v2(h, i, ctypes.byref(f)))
                frags.append((f.fragment_id, f.physical_rows, f.deleted_rows,
                              f.bytes_on_disk if f.has_bytes_on_disk else None))
            for i in range(LIB.lance_table_stats_column_count(h)):
                c = _ffi.ColumnStats.new()
                _check(LIB.lance_table_stats_column_v2(h, i, ctypes.byref(c)))
                cols.append((c.name.decode(), c.bytes_on_disk if c.has_bytes_on_disk else None))
            return TableStatistics(frags, cols, IoStats._from(io))
        finally:
            LIB.lance_table_stats_free(h)

    # scans
    def scan(self, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, **options) -> pa.RecordBatchReader:
        """Scan as a `pyarrow.RecordBatchReader` (zero copy). Options: substrait, limit, offset,
        batch_size, with_row_id, with_row_addr, fragment_ids, scan_in_order, batch_readahead,
        fragment_readahead, io_buffer_bytes, order_by ('price DESC, id': sorted before offset
        and limit, a top-n with a limit), keys (a runtime key-set filter: `(column, values)`,
        values a pyarrow array or a list; only rows whose column holds one of them, ANDed with
        `filter` and `substrait`, which may be given together) (see LanceScanOptions)."""
        return self.scan_stream(columns, filter, **options).reader()

    def scan_stream(self, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, **options) -> Stream:
        """`scan` as a `Stream` (I/O statistics, cancellation)."""
        o, keep = _scan_options(columns, filter, **options)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_dataset_scan_v2(self._h, ctypes.byref(o), ctypes.byref(out)))
        return Stream(out)

    def explain_scan(self, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, **options) -> str:
        """The scan plan `scan(columns, filter, **options)` would run, as text."""
        o, keep = _scan_options(columns, filter, **options)
        p = ctypes.c_void_p()
        _check(LIB.lance_dataset_explain_scan_v2(self._h, ctypes.byref(o), ctypes.byref(p)))
        return _take_string(p)

    def scan_split(self, split: Split, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, **options) -> pa.RecordBatchReader:
        """Scan one scan split (lance_split_scan_v2) as a `pyarrow.RecordBatchReader`."""
        return self.scan_split_stream(split, columns, filter, **options).reader()

    def scan_split_stream(self, split: Split, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, **options) -> Stream:
        """`scan_split` as a `Stream` (I/O statistics, cancellation)."""
        o, keep = _scan_options(columns, filter, **options)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_split_scan_v2(self._h, split._h, ctypes.byref(o), ctypes.byref(out)))
        return Stream(out)

    def take(self, row_ids: Sequence[int], columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Rows by `_rowid`, in request order (lance_dataset_take_rows)."""
        ids = (ctypes.c_uint64 * len(row_ids))(*row_ids)
        cols, n = _cstrings(columns)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_dataset_take_rows(self._h, ids, len(row_ids), cols, n, ctypes.byref(out)))
        return _import_reader(out).read_all()

    def take_blobs(self, column: str, row_ids: Sequence[int]) -> "Blobs":
        """The blobs of a blob column for `row_ids` (lance_dataset_take_blobs): descriptors
        only; read byte ranges with `Blobs.read`."""
        ids = (ctypes.c_uint64 * len(row_ids))(*row_ids)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_take_blobs(self._h, column.encode(), ids, len(row_ids), ctypes.byref(h)))
        return Blobs(h)

    # planning
    def plan_scan(self, target_rows: int = 0, *, slices: bool = True) -> list[Split]:
        """Scan splits covering the pinned version, about `target_rows` rows each (0 = one per
        fragment): fragments are grouped, and a fragment of more than `target_rows` rows is cut
        into row slices (`Split.row_slice`; lance_dataset_plan_scan_slices). `slices=False`
        keeps whole fragments (lance_dataset_plan_scan), as a staged delete needs. Splits pickle;
        scan them on any worker with `scan_split`."""
        h = ctypes.c_void_p()
        plan = LIB.lance_dataset_plan_scan_slices if slices else LIB.lance_dataset_plan_scan
        _check(plan(self._h, target_rows, ctypes.byref(h)))
        return _plan(h).splits

    def plan_changes(self, since_version: int = 0, *, since_timestamp_ms: Optional[int] = None,
                     types: Sequence[str] = ("insert", "update", "delete"), target_rows: int = 0) -> list[Split]:
        """Splits of the rows changed after `since_version` (or after the last version committed
        before `since_timestamp_ms`) up to this handle's version (lance_dataset_plan_changes):
        `types` among 'insert', 'update', 'delete'. Read each with `scan_split` on this version
        (any worker): the columns asked for, then `_rowid`, `_row_created_at_version`,
        `_row_last_updated_at_version` and `_change_type`. Needs a table with stable row ids."""
        bits = {"insert": 1, "update": 2, "delete": 4}
        if isinstance(types, str) or not types or any(t not in bits for t in types):
            raise _error(1, f"types must be a non-empty sequence of 'insert', 'update', 'delete', not {types!r}")
        p = _ffi.ChangesParams()
        _check(LIB.lance_changes_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
        p.since_version = since_version
        p.since_timestamp_ms = since_timestamp_ms or 0
        p.change_types = sum({bits[t] for t in types})
        p.target_rows = target_rows
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_changes(self._h, ctypes.byref(p), ctypes.byref(h)))
        return _plan(h).splits

    def changes(self, since_version: int = 0, columns: Optional[Sequence[str]] = None, **kw) -> pa.Table:
        """Every row changed after `since_version` up to this version, read here: the splits of
        `plan_changes` (same keywords) scanned one after another."""
        parts = [self.scan_split(s, columns).read_all() for s in self.plan_changes(since_version, **kw)]
        if not parts:
            raise _error(1, f"no changes after version {since_version}: this handle is at that version")
        return pa.concat_tables(parts)

    def create_tag(self, name: str, version: int = 0) -> None:
        """Tag `version` of the table (0 = this handle's) as `name` (lance_dataset_create_tag):
        kept from cleanup, opened with `open_tag`; pylance sees it."""
        _check(LIB.lance_dataset_create_tag(self._h, name.encode(), version))

    def delete_tag(self, name: str) -> None:
        """Delete tag `name` (lance_dataset_delete_tag)."""
        _check(LIB.lance_dataset_delete_tag(self._h, name.encode()))

    def tags(self) -> dict:
        """The table's tags: name -> version (lance_dataset_tags)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_tags(self._h, ctypes.byref(h)))
        try:
            return {LIB.lance_tag_list_name(h, i).decode(): LIB.lance_tag_list_version(h, i)
                    for i in range(LIB.lance_tag_list_count(h))}
        finally:
            LIB.lance_tag_list_free(h)

    @property
    def branch(self) -> str:
        """The branch this handle is on ('main' for the default branch; lance_dataset_branch)."""
        return LIB.lance_dataset_branch(self._h).decode()

    def create_branch(self, name: str, version: int = 0) -> "Dataset":
        """Create branch `name` from `version` of this handle's branch (0 = this handle's
        version) (lance_dataset_create_branch); returns the branch at its first version."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_create_branch(self._h, name.encode(), version, ctypes.byref(out)))
        return Dataset(out.value)

    def delete_branch(self, name: str) -> None:
        """Delete branch `name` of the table (lance_dataset_delete_branch)."""
        _check(LIB.lance_dataset_delete_branch(self._h, name.encode()))

    def branches(self) -> dict:
        """The table's branches: name -> (parent branch, parent version) (lance_dataset_branches)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_branches(self._h, ctypes.byref(h)))
        try:
            return {LIB.lance_branch_list_name(h, i).decode(): (LIB.lance_branch_list_parent(h, i).decode(),
                                                               LIB.lance_branch_list_parent_version(h, i))
                    for i in range(LIB.lance_branch_list_count(h))}
        finally:
            LIB.lance_branch_list_free(h)

    def shallow_clone(self, target_uri: str, storage_options: Optional[Mapping[str, str]] = None) -> "Dataset":
        """Clone this version into a new table at `target_uri` that references this table's
        files (lance_dataset_shallow_clone); returns the clone."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_shallow_clone(self._h, target_uri.encode(), _kv(storage_options), ctypes.byref(out)))
        return Dataset(out.value)

    def config(self) -> dict:
        """The table's config at this handle's version, as pylance's `config()` shows it
        (lance_dataset_config)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_config(self._h, ctypes.byref(h)))
        try:
            items = [LIB.lance_string_list_get(h, i).decode() for i in range(LIB.lance_string_list_count(h))]
            return dict(zip(items[0::2], items[1::2]))
        finally:
            LIB.lance_string_list_free(h)

    def update_config(self, set: Optional[Mapping[str, str]] = None, remove: Sequence[str] = (),
                      **params) -> tuple["Dataset", "WriteResult"]:
        """Set and remove keys of the table's config as one new version planned at this handle's
        version (lance_dataset_update_config). Params as for `write_table`, among them the
        preconditions `expected_version` and `required_config` (move a fencing token with a
        compare-and-set: require the old value, set the new one)."""
        if isinstance(remove, str) or not all(isinstance(k, str) for k in remove):
            raise _error(1, "remove must be a sequence of config keys")
        keys, n = _cstrings(list(remove))
        kv = _kv(set)
        p, keep = _write_params(None, **params)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_update_config(self._h, ctypes.cast(kv, _ffi.cstrp) if kv is not None else None,
                                               keys, n, ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def restore(self) -> "Dataset":
        """Make this handle's version the table's latest again, as a new version
        (lance_dataset_restore); returns it pinned."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_restore(self._h, ctypes.byref(out)))
        return Dataset(out.value)

    def close(self) -> None:
        """Frees the handle (streams it opened keep working). Idempotent; also done by `with` and on
        garbage collection."""
        if getattr(self, "_h", None):
            LIB.lance_dataset_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"lance_host.Dataset({self.uri!r}, version={self.version})"
