"""Arguments into C and results out of it: the option vocabularies (metrics, write modes,
index types, merge clauses), string and key-value arrays, bytes and strings the library
allocated."""

from __future__ import annotations

import ctypes
from typing import Any, Mapping, Optional, Sequence, Union

import pyarrow as pa

from ._ffi import LIB
from .errors import _choice, _error, _ptr, _UnknownKeywordError


#: What a write takes as rows: a pyarrow Table, RecordBatch, RecordBatchReader, or any object
#: exporting an Arrow C stream (`__arrow_c_stream__`: polars, DuckDB, ...).
ArrowData = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, Any]
#: A query vector (a sequence of numbers or a 1-d numpy array), or a batch of them (one per row).
VectorLike = Union[Sequence[float], Sequence[Sequence[float]], Any]
#: A raw handle the library returned (a ctypes pointer or its address).
Handle = Union[ctypes.c_void_p, int, None]

METRICS = {None: 0, "l2": 1, "cosine": 2, "dot": 3, "hamming": 4}
WRITE_MODES = {"create": 0, "append": 1, "overwrite": 2}
VECTOR_INDEX_TYPES = {"IVF_PQ": 0, "IVF_FLAT": 1, "IVF_SQ": 2, "IVF_HNSW_FLAT": 3, "IVF_HNSW_PQ": 4, "IVF_HNSW_SQ": 5}
SCALAR_INDEX_TYPES = {"BTREE": 0, "BITMAP": 1, "LABEL_LIST": 2}
WHEN_MATCHED = {"do_nothing": 0, "update_all": 1, "update_if": 2, "delete": 3, "fail": 4}
WHEN_NOT_MATCHED = {"insert": 0, "do_nothing": 1}
WHEN_NOT_MATCHED_BY_SOURCE = {"keep": 0, "delete": 1, "delete_if": 2}
TEXT_MATCH = {"or": 0, "any": 0, "and": 1, "all": 1, "phrase": 2}
LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4, "trace": 5}
_ELEMENTS = {"float16": (1, ctypes.c_uint16), "float32": (2, ctypes.c_float), "float64": (3, ctypes.c_double),
             "uint8": (4, ctypes.c_uint8), "int8": (5, ctypes.c_int8)}

def _check_columns(schema: pa.Schema, columns: Optional[Sequence[str]]) -> None:
    """InvalidArgumentError naming every column of `columns` that `schema` lacks, and the
    table's columns (for projections the Spark and Ray layers check before they plan)."""
    if columns is None:
        return
    if isinstance(columns, str):
        raise _error(1, f"columns must be a list of column names, not the string {columns!r}")
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise _error(1, f"unknown column{'s' if len(missing) > 1 else ''} {', '.join(repr(c) for c in missing)}; "
                        f"the table's columns: {', '.join(schema.names)}")


def _metric(metric: Optional[str]) -> int:
    if metric is not None and not isinstance(metric, str):
        raise _error(1, f"metric must be a string, not {type(metric).__name__}")
    return _choice("metric", metric.lower() if metric else None, METRICS)


def _cstrings(items: Optional[Sequence[str]]):
    if not items:
        return None, 0
    arr = (ctypes.c_char_p * len(items))(*[s.encode() for s in items])
    return arr, len(items)


def _kv(options: Optional[Mapping[str, str]]):
    if not options:
        return None
    flat = []
    for k, v in options.items():
        flat += [str(k).encode(), str(v).encode()]
    return (ctypes.c_char_p * (len(flat) + 1))(*flat, None)


def _take_bytes(out, n) -> bytes:
    data = ctypes.string_at(out, n.value)
    LIB.lance_bytes_free(out, n.value)
    return data


def _take_string(p) -> str:
    s = ctypes.string_at(p).decode()
    LIB.lance_string_free(p)
    return s


def _bytes_list(h) -> list:
    """The byte strings of a LanceBytesList, which this frees."""
    try:
        items = []
        for i in range(LIB.lance_bytes_list_count(h)):
            n = ctypes.c_size_t()
            ptr = _ptr(LIB.lance_bytes_list_get(h, i, ctypes.byref(n)))
            items.append(ctypes.string_at(ptr, n.value))
        return items
    finally:
        LIB.lance_bytes_list_free(h)


def _u32(field: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 32:
        raise _error(1, f"{field} must be a non-negative integer below 2**32, not {value!r}")
    return value


def _byte_arrays(blobs):
    """C arrays of pointers and lengths over byte strings (and the buffers, to keep alive)."""
    bufs = [(ctypes.c_uint8 * len(b)).from_buffer_copy(b) for b in blobs]
    ptrs = (ctypes.POINTER(ctypes.c_uint8) * len(bufs))(*[ctypes.cast(b, ctypes.POINTER(ctypes.c_uint8)) for b in bufs])
    lens = (ctypes.c_size_t * len(bufs))(*[len(b) for b in blobs])
    return ptrs, lens, bufs


def _public_caller() -> str:
    """The package function the user called, for messages: the outermost frame on the stack that
    runs a public function or method of the package (`Dataset.search_split`,
    `lance_host.write_table`, `lance_host.ray.vector_search`)."""
    import sys

    name, f = "lance_host", sys._getframe(1)
    while f is not None:
        module, code = f.f_globals.get("__name__", ""), f.f_code.co_name
        if module.startswith("lance_host.") and not code.startswith("_") and code != "<module>":
            self = f.f_locals.get("self")
            if self is not None and type(self).__module__.startswith("lance_host."):
                name = f"{type(self).__name__}.{code}"
            elif module in ("lance_host.spark", "lance_host.ray"):
                name = f"{module}.{code}"
            else:
                name = f"lance_host.{code}"
        f = f.f_back
    return name


def _keywords(options: Mapping, valid, aliases: Mapping[str, str] = {}, named: Sequence[str] = ()) -> dict:
    """`options` (keyword arguments a public function passes on) with documented aliases renamed
    to their names; a keyword that is none of `valid` (or an alias) raises an error that names
    the public function called and the closest keyword it takes (`named`: its own parameters,
    suggested too); one option given under two names is refused."""
    out, given = {}, {}
    for key, value in options.items():
        name = aliases.get(key, key)
        if name not in valid:
            import difflib

            close = difflib.get_close_matches(key, list(named) + list(valid) + list(aliases), 1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            takes = ", ".join(sorted(valid) + [f"{a} (= {n})" for a, n in sorted(aliases.items())])
            raise _UnknownKeywordError(1, f"{_public_caller()}() got an unknown keyword {key!r}{hint} (options: {takes})")
        if name in out:
            raise _error(1, f"{_public_caller()}() got the option {name!r} twice, as {given[name]!r} and {key!r}")
        out[name], given[name] = value, key
    return out


def _keyword_names(fn, *positional: str) -> tuple:
    """The keyword parameters of a helper, less those its callers pass positionally."""
    import inspect

    return tuple(p for p in inspect.signature(fn).parameters if p not in positional)
