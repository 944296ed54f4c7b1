"""Apache Spark data sources over lance-host (pyspark 4.1+, Python Data Source API).

    from lance_host.spark import register
    register(spark)                       # registers "lance_host" and "lance_host_search"
    df = (spark.read.format("lance_host")
          .option("uri", "s3://bucket/wh/t.lance")       # or catalog + table, see below
          .option("version", "12")                       # or "timestamp_ms"; default: latest
          .load())

The planning (schema, filters, splits) runs once where Spark plans the query: it pins one
snapshot, plans one scan split per fragment and exports the snapshot token. Each Spark
partition is one split: its bytes plus the token. An executor opens the snapshot from the token
(no manifest read) and scans its split with the pushed projection and filter; nothing native is
opened on the planning side that a task needs.

Writes (df.write.format("lance_host").option("uri", ...).mode("append" | "overwrite").save()):
every task stages its partition's rows on the driver's pinned version (nothing committed), the
driver commits all shares as ONE new version (exactly once per write) or, when a task failed,
deletes what the finished tasks staged. A task Spark kills while it is staging can leave data
files that no version references (invisible to readers); lance_host's cleanup with
delete_unverified removes them — run it when no write is in progress. A missing table is
created. Options: uri, storage.<key>, max_rows_per_file, commit_message.

Options of "lance_host":
  uri                the table; or `table` ("ns1.ns2.name") with the catalog's properties as
                     catalog.<key> options (catalog.root=..., or catalog.impl=rest + catalog.uri=...)
  version / timestamp_ms / timestamp_us   the snapshot to pin: that version, or the newest
                           committed at or before that instant (default: the latest at planning)
  branch             the branch to read ("main" = the default; `version` is then the branch's)
  tag                the version (and branch) a tag names
  changes_since      read the rows changed after this version up to the pinned one instead of
                     the table (change splits; needs stable row ids): the columns, then
                     `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version` and
                     `_change_type` ('insert', 'update', 'delete'); no `filter` option or pushdown
  storage.<key>      storage options (e.g. storage.aws_endpoint), passed to every open
  columns            comma-separated projection (default: every column Spark can hold)
  filter             a Lance SQL filter applied by Lance, in addition to pushed filters
  target_rows        rows per scan split (default: one split per fragment; a larger fragment
                     is cut into row slices, so one fragment can feed several partitions)
  stats_dir          a directory where each task writes a JSON line (process id, split index,
                     rows the library returned, I/O statistics) — for checking distribution
  pushdown           "false": push no Spark filter even where register(spark,
                     filter_pushdown=True) enabled it ("true" without that registration is an error)

Spark's filters are not pushed by default: pyspark 4.1 to 4.3 reuse the reader a pushed filter
created for every later query of the same DataFrame (a filtered count, then an unfiltered one,
counts the filtered rows), so Spark applies them after the scan and the `filter` option is how
Lance filters. register(spark, filter_pushdown=True) probes the session first and refuses
(NotSupportedError) where Spark reuses the reader; elsewhere it pushes the filters whose Lance
SQL is exact: =, <=>, <, <=, >, >=, IN, IS [NOT] NULL, NOT of those, on top-level columns, with
integer, string, boolean and finite floating-point literals (the rest stays in Spark).

Types Spark cannot hold are converted: unsigned integers widen (uint8 → short, uint16 → int,
uint32 → long, uint64 → long, values above 2^63 - 1 are an error), fixed-size lists become
arrays, large strings/binaries become strings/binaries; dictionary arrays are decoded.

"lance_host_search" (vector search): options `uri` (or catalog + table), `column`, `vector` (a
JSON list of numbers), `k`, `nprobes`, `refine` (refine factor), `filter` (prefilter), `columns`,
`metric`. Its partitions are the vector plan's splits (index segments + unindexed fragments);
each returns its top k with `_distance` and `_rowid`. `ORDER BY _distance LIMIT k` over the
DataFrame is the global top k; `merge_top_k(df, k)` returns exactly the library's merge.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa

from lance_host._vectors import DIM_KEY, conform, parse_dims
from lance_host.spark_filters import _and, push_filters, to_lance_sql  # noqa: F401 (to_lance_sql stays importable from here)

try:
    from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition,
                                        WriterCommitMessage)
    import pyspark.sql
    from pyspark.sql import types as T
except ImportError as e:  # pragma: no cover - reported to the user who imports this module
    raise ImportError("lance_host.spark needs pyspark 4.1 or later (pip install 'pyspark>=4.1')") from e

from lance_host.spark_types import _struct_of, arrow_type_for, for_spark, spark_type  # noqa: E402,F401 (spark_type and arrow_type_for stay importable from here)


# ---- options -----------------------------------------------------------------------------

_COMMON = ("uri", "path", "table", "version", "timestamp_ms", "timestamp_us", "branch", "tag", "columns", "filter", "stats_dir")
_READ_OPTIONS = _COMMON + ("target_rows", "pushdown", "changes_since")
_SEARCH_OPTIONS = _COMMON + ("column", "vector", "k", "nprobes", "refine", "metric", "use_index",
                             "max_partitions")
_WRITE_OPTIONS = ("uri", "path", "max_rows_per_file", "commit_message", "vector_columns", "new_schema")
_PREFIXES = ("storage.", "catalog.")


def _check_options(options, valid, what: str) -> None:
    """InvalidArgumentError for an option `what` does not know (a typo would otherwise be
    ignored: an unfiltered, latest-version or default answer), naming the closest valid one."""
    import difflib

    import lance_host as lh

    prefixes = _PREFIXES if what != "the lance_host writer" else ("storage.",)
    for key in options.keys():
        k = key.lower()
        if k in valid or any(k.startswith(p) and len(k) > len(p) for p in prefixes):
            continue
        close = difflib.get_close_matches(k, list(valid), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise lh.errors._error(1, f"lance_host: unknown option {key!r} for {what}{hint}; valid options: "
                           f"{', '.join(valid)}, {', '.join(p + '<key>' for p in prefixes)}")


def _uri_option(options):
    """The table's URI: option `uri`, or the path given to load(path) / save(path)."""
    return options.get("uri") or options.get("path")


def _storage_options(options) -> dict:
    return {k[len("storage."):]: v for k, v in options.items() if k.lower().startswith("storage.")}


def _open_planning(options):
    """Open the table the options name, pinned as they ask (runs where Spark plans)."""
    return _open_planning_with_storage(options)[0]


def _open_planning_with_storage(options):
    """`_open_planning`, and the storage options it opened with (a catalog's included)."""
    import lance_host as lh

    storage = _storage_options(options) or None
    version = _int_option(options, "version", 0)
    ts = options.get("timestamp_ms")
    ts_us = options.get("timestamp_us")
    if ts is not None and ts_us is not None:
        raise lh.errors._error(1, "lance_host: options 'timestamp_ms' and 'timestamp_us' pin two snapshots: give one")
    if _uri_option(options):
        uri = _uri_option(options)
    elif "table" in options:
        props = {k[len("catalog."):]: v for k, v in options.items() if k.lower().startswith("catalog.")}
        if not props:
            raise lh.errors._error(1, "lance_host: option 'table' needs the catalog's properties as catalog.<key> options")
        *namespace, name = options["table"].split(".")
        info = lh.Catalog(props).describe_table(name, namespace)
        uri, storage = info.location, {**info.storage_options, **(storage or {})} or None
    else:
        raise lh.errors._error(1, "lance_host: set option 'uri', or 'table' with catalog.<key> options")
    branch = options.get("branch")
    tag = options.get("tag")
    if tag is not None:
        if branch is not None or ts is not None or ts_us is not None or version:
            raise lh.errors._error(1, "lance_host: option 'tag' names a version and its branch: give it alone")
        return lh.open_tag(uri, tag, storage_options=storage), storage
    if ts is not None or ts_us is not None:
        if branch is not None:
            raise lh.errors._error(1, "lance_host: options 'timestamp_ms'/'timestamp_us' and 'branch' cannot be combined; pin a version")
        if ts_us is not None:
            return lh.open_at_timestamp(uri, timestamp_us=_int_option(options, "timestamp_us", 0),
                                        storage_options=storage), storage
        return lh.open_at_timestamp(uri, _int_option(options, "timestamp_ms", 0), storage_options=storage), storage
    return lh.open(uri, version=version or None, storage_options=storage, branch=branch), storage


# The columns a change split returns after the table's, as Spark sees them.
_CHANGE_FIELDS = [T.StructField("_rowid", T.LongType(), False),
                  T.StructField("_row_created_at_version", T.LongType(), True),
                  T.StructField("_row_last_updated_at_version", T.LongType(), True),
                  T.StructField("_change_type", T.StringType(), False)]


def _changes_since(options):
    """The `changes_since` option (None when absent), refusing what a change read cannot do."""
    import lance_host as lh

    if options.get("changes_since") is None or str(options.get("changes_since")).strip() == "":
        return None
    since = _int_option(options, "changes_since", 0)
    if since < 0:
        raise lh.errors._error(1, "lance_host: option 'changes_since' must be a version (>= 0)")
    if options.get("filter"):
        raise lh.errors._error(1, "lance_host: option 'filter' cannot be combined with 'changes_since' (the deleted rows "
                           "are read as they were); filter the DataFrame instead")
    return since


def _catalog_table(options):
    """(catalog properties, namespace, table) when the options name a catalog table, else None."""
    if _uri_option(options) or "table" not in options:
        return None
    props = {k[len("catalog."):]: v for k, v in options.items() if k.lower().startswith("catalog.")}
    *namespace, name = options["table"].split(".")
    return props, namespace, name


def _described_storage(options):
    """A catalog table's storage options as a catalog of this process describes them now (the
    `storage.` options over them), reused for a few seconds by the tasks of this process: vended
    credentials are fresh, and the library refreshes them as they expire (issue 60)."""
    from lance_host.catalog import _describe_here

    props, namespace, name = _catalog_table(options)
    return {**_describe_here(props, namespace, name).storage_options, **_storage_options(options)} or None


def _pin(source):
    """Open the table for `schema()` and remember the snapshot: Spark pickles the source after
    `schema()` and plans its reader from that copy, so the partitions are planned on the same
    snapshot (the schema and the rows of one DataFrame come from one version, as with Delta)
    without opening the table a second time. The storage options kept are the ones the table
    opened with — for a catalog table none: the options a catalog vends never travel with a
    task, each process describes the table through a catalog of its own."""
    ds, storage = _open_planning_with_storage(source.options)
    source._snapshot = (ds.export_snapshot(), None if _catalog_table(source.options) else storage)
    return ds


def _task_storage(options, pinned):
    """The storage options a read task opens the snapshot with: a catalog table's as this
    process's catalog describes them, else those `schema()` opened the table with, else the
    `storage.` options."""
    if _catalog_table(options):
        return _described_storage(options)
    if pinned is not None:
        return pinned[1]
    return _storage_options(options) or None


def _planning_snapshot(options, pinned):
    """The table to plan on: the snapshot `schema()` pinned, else opened from the options (a
    schema the user gave means `schema()` never ran)."""
    import lance_host as lh

    if pinned is not None:
        token = pinned[0]
        return lh.open_snapshot(token, storage_options=_task_storage(options, pinned))
    return _open_planning(options)


def _required(options, key: str, what: str) -> str:
    """A required option's value, or InvalidArgumentError saying which option is missing."""
    import lance_host as lh

    value = options.get(key)
    if value is None or str(value) == "":
        raise lh.errors._error(1, f"lance_host_search: option {key!r} ({what}) is required")
    return value


def _int_option(options, key: str, default: int) -> int:
    """An integer option (`default` when absent or empty), or InvalidArgumentError naming it."""
    import lance_host as lh

    value = options.get(key)
    if value is None or str(value).strip() == "":
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        raise lh.errors._error(1, f"lance_host: option {key!r} must be an integer, not {value!r}") from None


def _vector_option(options) -> list:
    """The `vector` option (a JSON list of numbers), or InvalidArgumentError saying what is wrong."""
    import lance_host as lh

    text = _required(options, "vector", "the query vector as a JSON list")
    try:
        vector = json.loads(text)
    except ValueError as e:
        raise lh.errors._error(1, f"lance_host_search: option 'vector' is not JSON ({e}): {text[:80]!r}") from None
    if not isinstance(vector, list) or not vector or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
        raise lh.errors._error(1, f"lance_host_search: option 'vector' must be a non-empty JSON list of numbers, not {text[:80]!r}")
    return vector


def _columns_option(options):
    c = options.get("columns")
    return [x.strip() for x in c.split(",") if x.strip()] if c else None


# ---- the scan source -------------------------------------------------------------------------

class _SplitPartition(InputPartition):
    """One scan split: its bytes, the snapshot token and its position in the plan."""

    def __init__(self, index: int, split: bytes, token: bytes):
        super().__init__(index)
        self.index, self.split, self.token = index, split, token


def _write_stats(options, record):
    d = options.get("stats_dir")
    if d:
        with open(os.path.join(d, f"task-{record['split']}-{os.getpid()}-{id(record)}.json"), "w") as fh:
            json.dump(record, fh)


class LanceHostDataSource(DataSource):
    """spark.read.format("lance_host"): one partition per scan split of a pinned snapshot."""

    @classmethod
    def name(cls) -> str:
        """The format name: spark.read.format("lance_host")."""
        return "lance_host"

    def schema(self) -> "T.StructType":
        """The table's columns (or the `columns` option's) as a Spark schema; opens the table
        once where Spark plans. Raises InvalidArgumentError for an unknown column or option."""
        _check_options(self.options, _READ_OPTIONS, 'format("lance_host")')
        ds = _pin(self)
        struct = _struct_of(ds.schema, _columns_option(self.options))[0]
        if _changes_since(self.options) is not None:
            struct = T.StructType(list(struct.fields) + [f for f in _CHANGE_FIELDS if f.name not in struct.names])
        return struct

    def writer(self, schema: "T.StructType", overwrite: bool) -> "DataSourceArrowWriter":
        """A writer whose tasks stage their rows and whose driver commits them as one version
        (see `_Writer`)."""
        return _Writer(dict(self.options), schema, overwrite)

    def reader(self, schema: "T.StructType") -> "DataSourceReader":
        """A reader whose partitions are the scan splits of one pinned snapshot. It pushes no
        Spark filter (Spark applies them; the `filter` option is applied by Lance) unless the
        source was registered with filter_pushdown=True on a Spark that passed the reuse probe
        (see `register`)."""
        import lance_host as lh

        options = dict(self.options)
        _check_options(options, _READ_OPTIONS, 'format("lance_host")')
        pinned = getattr(self, "_snapshot", None)
        asked = str(options.get("pushdown", "")).strip().lower()
        if asked not in ("", "true", "false"):
            raise lh.errors._error(1, f"lance_host: option 'pushdown' must be 'true' or 'false', not {options['pushdown']!r}")
        if asked == "true" and not self._pushes:
            raise lh.errors._error(1, "lance_host: option pushdown=true needs register(spark, filter_pushdown=True), which "
                               "checks first that this Spark does not reuse a pushed reader for later queries")
        if _changes_since(options) is not None:
            return _ScanReader(options, schema, pinned)  # Spark applies every filter
        if self._pushes and asked != "false":
            return _PushingScanReader(options, schema, pinned)
        return _ScanReader(options, schema, pinned)

    _pushes = False


class _PushingDataSource(LanceHostDataSource):
    """"lance_host" with Spark filter pushdown: registered in its place by
    register(spark, filter_pushdown=True) once the probe found this Spark safe."""

    _pushes = True


class _ScanReader(DataSourceReader):
    """A reader without filter pushdown (option pushdown=false): Spark refuses a reader that
    implements pushFilters while spark.sql.python.filterPushdown.enabled is false."""

    def __init__(self, options, schema, pinned=None):
        self.options = options
        self.since = _changes_since(options)
        change_names = {f.name for f in _CHANGE_FIELDS}
        # a change split returns its own columns after the table's: ask for the table's only
        self.columns = [f.name for f in schema.fields if self.since is None or f.name not in change_names]
        self.pushed: list[str] = []
        self.pinned = pinned

    def partitions(self):
        ds = _planning_snapshot(self.options, self.pinned)
        token = ds.export_snapshot()
        target = _int_option(self.options, "target_rows", 0)
        if self.since is not None:
            splits = ds.plan_changes(self.since, target_rows=target)
        else:
            splits = ds.plan_scan(target)
        return [_SplitPartition(i, bytes(s), token) for i, s in enumerate(splits)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        import lance_host as lh

        ds = lh.open_snapshot(partition.token, storage_options=_task_storage(self.options, self.pinned))
        split = lh.Split.from_bytes(partition.split)
        flt = _and([self.options.get("filter")] + self.pushed)
        rows = 0
        with ds.scan_split_stream(split, columns=self.columns, filter=flt) as s:
            for b in s:
                rows += b.num_rows
                yield for_spark(b)
            io = s.io_stats()
        _write_stats(self.options, {"pid": os.getpid(), "split": partition.index, "rows": rows,
                                    "filter": flt, "read_requests": io.read_requests, "read_bytes": io.read_bytes})


class _PushingScanReader(_ScanReader):
    """The scan reader with filter pushdown: exact translations go to Lance, the rest back to
    Spark."""

    def pushFilters(self, filters):
        return push_filters(filters, self.pushed)


# ---- the vector-search source --------------------------------------------------------------

class LanceHostSearchDataSource(DataSource):
    """spark.read.format("lance_host_search"): one partition per split of the vector plan, each
    returning its top k with `_distance` and `_rowid`."""

    @classmethod
    def name(cls) -> str:
        """The format name: spark.read.format("lance_host_search")."""
        return "lance_host_search"

    def schema(self) -> "T.StructType":
        """The searched table's columns (or the `columns` option's) plus `_distance` and
        `_rowid`; raises InvalidArgumentError for a missing `column` option or unknown column."""
        import lance_host as lh

        _check_options(self.options, _SEARCH_OPTIONS, 'format("lance_host_search")')
        ds = _pin(self)
        st, _, _ = _struct_of(ds.schema, _columns_option(self.options))
        column = _required(self.options, "column", "the vector column to search")
        lh._marshal._check_columns(ds.schema, [column])
        st = T.StructType([f for f in st.fields if f.name != column or _columns_option(self.options)])
        return st.add("_distance", T.FloatType(), True).add("_rowid", T.LongType(), True)

    def reader(self, schema: "T.StructType") -> "DataSourceReader":
        """A reader whose partitions are the vector plan's splits, each returning its top k."""
        _check_options(self.options, _SEARCH_OPTIONS, 'format("lance_host_search")')
        return _SearchReader(dict(self.options), schema, getattr(self, "_snapshot", None))


class _SearchReader(DataSourceReader):
    def __init__(self, options, schema, pinned=None):
        self.options = options
        self.columns = [f.name for f in schema.fields if f.name not in ("_distance", "_rowid")]
        self.pinned = pinned

    def partitions(self):
        import lance_host as lh

        ds = _planning_snapshot(self.options, self.pinned)
        token = ds.export_snapshot()
        use_index = self.options.get("use_index", "true").lower() != "false"
        column = _required(self.options, "column", "the vector column to search")
        # Bad query options fail here, on the driver, not in every task.
        _vector_option(self.options)
        for key, default in (("k", 10), ("nprobes", 0), ("refine", 0)):
            _int_option(self.options, key, default)
        max_partitions = _int_option(self.options, "max_partitions", 0)
        if max_partitions < 0 or (max_partitions == 0 and str(self.options.get("max_partitions") or "").strip()):
            raise lh.errors._error(1, f"lance_host: option 'max_partitions' must be at least 1, not {max_partitions}")
        plan = ds.plan_vector_search(column, self.options.get("metric"), use_index)
        # A partition searching several splits of a kind combined pays for one plan and one
        # re-rank of their merged candidates instead of one per split.
        plan = lh.Split.group(plan, max_partitions or None)
        return [_SplitPartition(i, bytes(s), token) for i, s in enumerate(plan)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        import lance_host as lh

        o = self.options
        ds = lh.open_snapshot(partition.token, storage_options=_task_storage(o, self.pinned))
        split = lh.Split.from_bytes(partition.split)
        vector = _vector_option(o)
        with ds.search_split(split, _required(o, "column", "the vector column to search"), vector, _int_option(o, "k", 10),
                             nprobes=_int_option(o, "nprobes", 0) or None,
                             refine_factor=_int_option(o, "refine", 0) or None,
                             metric=o.get("metric"), prefilter=o.get("filter"),
                             columns=self.columns, with_row_id=True) as s:
            rows = 0
            for b in s:
                rows += b.num_rows
                yield for_spark(b.select(self.columns + ["_distance", "_rowid"]))
        _write_stats(o, {"pid": os.getpid(), "split": partition.index, "rows": rows})


def merge_top_k(df: "pyspark.sql.DataFrame", k: int) -> pa.Table:
    """The library's merge (lance_topk_merge) of a lance_host_search DataFrame's rows: the global
    top k by `_distance`, ties by `_rowid` — what a single process merging the splits gets."""
    import lance_host as lh

    t = df.toArrow()
    t = t.set_column(t.schema.get_field_index("_rowid"), "_rowid", t["_rowid"].cast(pa.uint64()))
    t = t.set_column(t.schema.get_field_index("_distance"), "_distance", t["_distance"].cast(pa.float32()))
    return lh.merge_top_k([t], k).read_all()


def register(spark: "pyspark.sql.SparkSession", filter_pushdown: bool = False) -> None:
    """Register the "lance_host" and "lance_host_search" formats with a SparkSession.

    Spark filters are not pushed to Lance by default: pyspark 4.1 to 4.3 keep the reader a
    pushed filter created on the DataFrame and use it for every later query of that DataFrame
    (`df.where("c = 'a'").count()` then `df.count()` counts only the filtered rows), so a
    pushing source can answer wrong. Spark applies its filters after the scan instead; the
    `filter` option is a Lance SQL filter that Lance applies. With `filter_pushdown=True` the
    session is probed first (a small in-memory Python data source queried filtered, then not);
    when the probe shows the reuse, NotSupportedError is raised and nothing is registered,
    otherwise spark.sql.python.filterPushdown.enabled is set and the formats push filters."""
    import lance_host as lh

    if filter_pushdown:
        previous = spark.conf.get("spark.sql.python.filterPushdown.enabled", None)
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        problem = pushdown_reuse_problem(spark)
        if problem is not None:
            if previous is None:
                spark.conf.unset("spark.sql.python.filterPushdown.enabled")
            else:
                spark.conf.set("spark.sql.python.filterPushdown.enabled", previous)
            import pyspark

            raise lh.errors._error(4, f"lance_host: filter pushdown is not safe on pyspark {pyspark.__version__}: {problem}; "
                                "register(spark) without filter_pushdown reads correctly (Spark applies its "
                                "filters; the 'filter' option is applied by Lance)")
        spark.dataSource.register(_PushingDataSource)
    else:
        spark.dataSource.register(LanceHostDataSource)
    spark.dataSource.register(LanceHostSearchDataSource)


# ---- the pushdown probe -----------------------------------------------------------------------

class _ProbeSource(DataSource):
    """Four in-memory rows whose reader applies a pushed `x = value` itself."""

    @classmethod
    def name(cls):
        return "lance_host_pushdown_probe"

    def schema(self):
        return "x int"

    def reader(self, schema):
        return _ProbeReader()


class _ProbeReader(DataSourceReader):
    def __init__(self):
        self.wanted = None

    def pushFilters(self, filters):
        kept = []
        for f in filters:
            if type(f).__name__ == "EqualTo" and tuple(f.attribute) == ("x",) and isinstance(f.value, int):
                self.wanted = f.value
            else:
                kept.append(f)
        return kept

    def read(self, partition):
        for x in range(4):
            if self.wanted is None or x == self.wanted:
                yield (x,)


def pushdown_reuse_problem(spark: "pyspark.sql.SparkSession") -> str | None:
    """What goes wrong when this session's Spark pushes filters into a Python data source, or
    None: one DataFrame of a probe source is counted with `x = 1` (1 row), then without a
    filter (4 rows). Spark filter pushdown must be enabled in the session."""
    spark.dataSource.register(_ProbeSource)
    df = spark.read.format(_ProbeSource.name()).load()
    filtered = df.where("x = 1").count()
    everything = df.count()
    if filtered != 1:
        return f"a pushed filter x = 1 counted {filtered} rows of 1"
    if everything != 4:
        return (f"the same DataFrame counted without a filter gave {everything} rows of 4 (Spark reused "
                "the reader of the earlier filtered query)")
    return None


# ---- writes ------------------------------------------------------------------------------

@dataclass
class _StagedShare(WriterCommitMessage):
    """What one task staged: the staged-write bytes (no rows) and the rows they hold."""
    staged: bytes
    rows: int


class _Writer(DataSourceArrowWriter):
    """df.write.format("lance_host"): every task stages its partition's Arrow batches on the
    driver's pinned version; the driver commits all shares as ONE new version (statement id =
    the write's id, so a repeated commit is exactly once) or, when a task failed, deletes the
    staged files. mode("append") appends (creating a missing table); mode("overwrite")
    overwrites. Options: uri, storage.<key>, max_rows_per_file, commit_message."""

    def __init__(self, options, schema, overwrite: bool):
        import uuid

        import lance_host as lh

        self.options = options
        _check_options(options, _WRITE_OPTIONS, "the lance_host writer")
        if not _uri_option(options):
            raise lh.errors._error(1, "lance_host: option 'uri' (the table to write) is required; or save(path)")
        self.uri = _uri_option(options)
        self.storage = _storage_options(options) or None
        try:
            planned = lh.open(self.uri, storage_options=self.storage)
            self.token = planned.export_snapshot()
            self.mode = "overwrite" if overwrite else "append"
        except lh.NotFoundError:
            self.token = None
            self.mode = "create"
        self.statement = str(uuid.uuid4())
        self.max_rows_per_file = _int_option(options, "max_rows_per_file", 0)
        # Vector columns: the dimensions a lance_host read left on the columns, then the option's.
        fields = schema.fields if schema is not None else []
        self.dims = {f.name: int(f.metadata[DIM_KEY]) for f in fields if DIM_KEY in (f.metadata or {})}
        self.dims.update(parse_dims(options.get("vector_columns"), "option 'vector_columns'"))
        self.new_schema = str(options.get("new_schema", "false")).strip().lower()
        if self.new_schema not in ("true", "false"):
            raise lh.errors._error(1, f"lance_host: option 'new_schema' must be 'true' or 'false', not {options['new_schema']!r}")
        self.new_schema = self.new_schema == "true"

    def write(self, iterator):
        """Runs in a task: stages this partition's batches (nothing is committed here)."""
        import lance_host as lh

        batches = list(iterator)
        if not batches:
            return _StagedShare(b"", 0)
        table = pa.Table.from_batches(batches)
        at = lh.open_snapshot(self.token, storage_options=self.storage) if self.token else None
        keep = at is not None and (self.mode == "append" or not self.new_schema)
        table = conform(table, at.schema if keep else None, self.dims)
        share = lh.stage_write(self.uri, table, mode=self.mode, at=at, storage_options=self.storage,
                               max_rows_per_file=self.max_rows_per_file)
        return _StagedShare(bytes(share), share.result.rows_written)

    def commit(self, messages):
        """Runs on the driver once every task succeeded: one commit of all shares."""
        import lance_host as lh

        shares = [lh.StagedWrite(m.staged) for m in messages if m is not None and m.staged]
        if not shares:
            return
        lh.commit(self.uri, shares, storage_options=self.storage, statement_id=self.statement,
                  commit_message=self.options.get("commit_message"))

    def abort(self, messages):
        """Runs on the driver when a task failed: deletes the files the other tasks staged."""
        import lance_host as lh

        shares = [lh.StagedWrite(m.staged) for m in messages if m is not None and m.staged]
        if shares:
            lh.abort_staged(shares, storage_options=self.storage)


# ---- index builds ------------------------------------------------------------------------

def _build_segment(args):
    """Runs on an executor: one task's segment."""
    import lance_host as lh

    uri, storage, task = args
    return os.getpid(), lh.open(uri, storage_options=storage or None).execute_index_build_task(task)


def build_index(spark: "pyspark.sql.SparkSession", uri: str, column: str, index_type: str, *, name: str | None = None, replace: bool = False,
                num_splits: int = 0, unindexed_only: bool = False, merge: bool = False, model: bytes | None = None,
                storage_options: dict | None = None, return_pids: bool = False, **params) -> tuple:
    """Build an index with Spark: the driver trains the model (vector types) and plans; one
    Spark task per build split builds its segment on an executor; the driver commits every
    segment as one index in one version (lance_host.build_index). Returns (the new version as
    a lance_host.Dataset, the model bytes to keep for `unindexed_only` builds), and the tasks'
    process ids with `return_pids`. A failed task fails the job; nothing is committed, and the
    files of segments already built are removed by cleanup with delete_unverified."""
    import lance_host as lh

    pids = []

    def run(tasks):
        rdd = spark.sparkContext.parallelize([(uri, storage_options, t) for t in tasks], len(tasks))
        out = rdd.map(_build_segment).collect()
        pids.extend(p for p, _ in out)
        return [bytes(seg) for _, seg in out]

    ds, kept = lh.build_index(uri, column, index_type, run, name=name, replace=replace, num_splits=num_splits,
                              unindexed_only=unindexed_only, merge=merge, model=model,
                              storage_options=storage_options, **params)
    return (ds, kept, pids) if return_pids else (ds, kept)


def _aggregate_split(args):
    import lance_host as lh

    token, split, aggregates, group_by, filter, storage_options = args
    ds = lh.open_snapshot(token, storage_options=storage_options)
    part, _ = ds.aggregate_split(lh.Split.from_bytes(split), aggregates, group_by=group_by, filter=filter)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, part.schema) as w:
        w.write_table(part)
    return os.getpid(), sink.getvalue().to_pybytes()


def aggregate(spark: "pyspark.sql.SparkSession", uri: str, aggregates: Sequence[tuple], *,
              group_by: str | Sequence[str] | None = None, filter: str | None = None, target_rows: int = 0,
              version: int | None = None, storage_options: dict | None = None, return_pids: bool = False) -> pa.Table:
    """A distributed aggregate with Spark: the driver pins the table and plans scan splits, one
    Spark task per split computes its partial states on an executor (only the aggregated,
    grouped and filtered columns are read; a few rows per group travel back as Arrow IPC), and
    the driver merges them (lance_host.merge_aggregates). Arguments as
    `lance_host.Dataset.aggregate`. pyspark's Python data source API has no aggregate pushdown,
    so `df.groupBy().agg()` on a lance_host DataFrame aggregates in Spark; this function is the
    Python route to aggregates inside the splits (the JVM connector's job for Spark SQL).
    Returns a pyarrow Table equal to `Dataset.aggregate` on the pinned version."""
    import lance_host as lh

    ds = lh.open(uri, version=version, storage_options=storage_options)
    plan = ds.plan_scan(target_rows, slices=True)
    if not plan:
        result = ds.aggregate(aggregates, group_by=group_by, filter=filter)
        return (result, []) if return_pids else result
    token = ds.export_snapshot()
    jobs = [(token, bytes(s), aggregates, group_by, filter, storage_options) for s in plan]
    out = spark.sparkContext.parallelize(jobs, len(jobs)).map(_aggregate_split).collect()
    result = lh.merge_aggregates([pa.ipc.open_stream(b).read_all() for _, b in out])
    return (result, [p for p, _ in out]) if return_pids else result
