"""Catalogs: namespaces and tables of a directory or REST catalog, and DDL."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from . import _ffi
from ._ffi import LIB
from .errors import _check, _error, _ptr
from ._marshal import _cstrings, _kv, ArrowData
from .write import _stream_of, _write_params, WriteResult
from .dataset import Dataset


@dataclass(frozen=True)
class TableInfo:
    """A catalog table as `Catalog.describe_table` reports it: its location, its latest version
    and the storage options to open it with (credentials a REST namespace vended included)."""

    location: str
    latest_version: int
    storage_options: dict


class Catalog:
    """A directory or REST namespace (lance_catalog_open); properties as in the README."""

    def __init__(self, properties: Mapping[str, str]):
        self._h = _ptr(LIB.lance_catalog_open(_kv(properties)))

    def _ns(self, namespace):
        arr, n = _cstrings(list(namespace or []))
        return arr, n

    def list_namespaces(self, namespace: Sequence[str] = (), recursive: bool = False) -> list[list[str]]:
        """Child namespaces of `namespace` (the root by default), each as its path of names;
        `recursive` lists all descendants."""
        arr, n = self._ns(namespace)
        h = ctypes.c_void_p()
        _check(LIB.lance_catalog_list_namespaces(self._h, arr, n, recursive, ctypes.byref(h)))
        try:
            return [[LIB.lance_namespace_list_part(h, i, j).decode() for j in range(LIB.lance_namespace_list_depth(h, i))]
                    for i in range(LIB.lance_namespace_list_count(h))]
        finally:
            LIB.lance_namespace_list_free(h)

    def list_tables(self, namespace: Sequence[str] = ()) -> list[str]:
        """Names of the tables in `namespace` (the root by default)."""
        arr, n = self._ns(namespace)
        h = ctypes.c_void_p()
        _check(LIB.lance_catalog_list_tables(self._h, arr, n, ctypes.byref(h)))
        try:
            return [LIB.lance_string_list_get(h, i).decode() for i in range(LIB.lance_string_list_count(h))]
        finally:
            LIB.lance_string_list_free(h)

    def describe_table(self, table: str, namespace: Sequence[str] = ()) -> TableInfo:
        """Where a table lives (location), its latest version and the storage options the catalog
        gives for it."""
        arr, n = self._ns(namespace)
        h = ctypes.c_void_p()
        _check(LIB.lance_catalog_describe_table(self._h, arr, n, table.encode(), ctypes.byref(h)))
        try:
            kv = LIB.lance_table_info_storage_options(h)
            opts, i = {}, 0
            while kv and kv[i] is not None:
                opts[kv[i].decode()] = kv[i + 1].decode()
                i += 2
            return TableInfo(LIB.lance_table_info_location(h).decode(), LIB.lance_table_info_latest_version(h), opts)
        finally:
            LIB.lance_table_info_free(h)

    def open_table(self, table: str, namespace: Sequence[str] = (), version: Optional[int] = None, *,
                   branch: Optional[str] = None, tag: Optional[str] = None) -> Dataset:
        """Opens a table pinned at `version` (None = its latest), of `branch` when given
        (lance_catalog_open_table_branch), or at the version `tag` names
        (lance_catalog_open_table_tag)."""
        arr, n = self._ns(namespace)
        if tag is not None:
            if branch is not None or version is not None:
                raise _error(1, "a tag names its version and branch: give tag alone")
            return Dataset(LIB.lance_catalog_open_table_tag(self._h, arr, n, table.encode(), tag.encode()))
        if branch is not None:
            return Dataset(LIB.lance_catalog_open_table_branch(self._h, arr, n, table.encode(), branch.encode(),
                                                               version or 0))
        return Dataset(LIB.lance_catalog_open_table(self._h, arr, n, table.encode(), version or 0))

    def create_namespace(self, namespace: Sequence[str], exist_ok: bool = False,
                         properties: Optional[Mapping[str, str]] = None) -> None:
        """Create `namespace` (a path of names; its parent must exist) with optional
        `properties` (lance_catalog_create_namespace). An existing one raises
        InvalidArgumentError unless `exist_ok`."""
        arr, n = self._ns(namespace)
        _check(LIB.lance_catalog_create_namespace(self._h, arr, n, exist_ok, _kv(properties)))

    def drop_namespace(self, namespace: Sequence[str], cascade: bool = False, missing_ok: bool = False) -> None:
        """Drop `namespace` (lance_catalog_drop_namespace): it must be empty unless `cascade`
        (then its tables, data included, and child namespaces go first)."""
        arr, n = self._ns(namespace)
        _check(LIB.lance_catalog_drop_namespace(self._h, arr, n, cascade, missing_ok))

    def create_table(self, table: str, data: ArrowData, namespace: Sequence[str] = (), **params) -> tuple[Dataset, "WriteResult"]:
        """CREATE TABLE `table` in `namespace` AS `data` (a pyarrow Table, RecordBatchReader,
        ...; lance_catalog_create_table): the catalog declares it and the rows are written as
        version 1. Params as for `write_table` (mode is always create). A failed write leaves
        nothing in the catalog. Returns the table pinned and what was written."""
        arr, n = self._ns(namespace)
        p, keep = _write_params(None, **params)
        c = _stream_of(data)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_catalog_create_table(self._h, arr, n, table.encode(), ctypes.byref(c), ctypes.byref(p),
                                              ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def drop_table(self, table: str, namespace: Sequence[str] = (), missing_ok: bool = False) -> None:
        """DROP TABLE (lance_catalog_drop_table): the table leaves the catalog and its data is
        deleted. A missing table raises NotFoundError unless `missing_ok`."""
        arr, n = self._ns(namespace)
        _check(LIB.lance_catalog_drop_table(self._h, arr, n, table.encode(), missing_ok))

    def close(self) -> None:
        """Frees the catalog (tables it opened stay usable). Idempotent; also done on garbage
        collection."""
        if getattr(self, "_h", None):
            LIB.lance_catalog_free(self._h)
            self._h = None

    def __del__(self):
        self.close()


_DESCRIBED: dict = {}  # (properties, namespace, table) -> (when, TableInfo): this process's describes
_DESCRIBED_LOCK = threading.Lock()
_CATALOGS: dict = {}  # properties -> Catalog: this process's catalogs


def _describe_here(properties: Mapping[str, str], namespace: Sequence[str], table: str,
                   reuse_s: float = 5.0) -> TableInfo:
    """A catalog table as a catalog of this process describes it, reused for `reuse_s` seconds by
    the tasks of this process (an engine's worker describes through its own catalog: vended
    credentials are fresh when it opens a shipped snapshot, and the library refreshes them as they
    expire; nothing vended travels with a task)."""
    import time

    key = (tuple(sorted(properties.items())), tuple(namespace), table)
    with _DESCRIBED_LOCK:
        hit = _DESCRIBED.get(key)
        if hit is not None and time.monotonic() - hit[0] <= reuse_s:
            return hit[1]
        catalog = _CATALOGS.get(key[0])
        if catalog is None:
            catalog = _CATALOGS[key[0]] = Catalog(dict(properties))
    info = catalog.describe_table(table, list(namespace))
    with _DESCRIBED_LOCK:
        _DESCRIBED[key] = (time.monotonic(), info)
    return info


def _check_source_options(what: str, catalog, namespace, storage_options) -> None:
    """`namespace` names a catalog's namespace; a catalog gives its own storage options
    (`storage.<key>` properties): refuse what would be ignored."""
    if catalog is None and namespace:
        raise _error(1, f"{what}: namespace= names a namespace of a catalog; give catalog= too")
    if catalog is not None and storage_options:
        raise _error(1, f"{what}: with catalog=, storage options are the catalog's properties (storage.<key>), "
                        "not storage_options=")
