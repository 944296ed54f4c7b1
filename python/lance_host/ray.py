"""Ray Data over lance-host: read tasks are the scan splits of a pinned snapshot, and a
distributed vector search runs one Ray task per split and merges with the library's merge.

    import ray, lance_host.ray as lhr
    ds = lhr.read_lance_host("s3://bucket/wh/t.lance", columns=["id", "price"], filter="price < 10",
                             storage_options={...})
    top = lhr.vector_search("s3://bucket/wh/t.lance", "vec", query, k=10, nprobes=16, refine=5)

Writes: `write_lance_host(dataset, uri, mode="append")` (or `ds.write_datasink(LanceHostDatasink(...))`)
stages every block on the write tasks and commits all shares once, as one new version.

Planning opens the table once, pins its version, plans the splits and exports the snapshot
token; that is all the I/O before the read tasks run. The token is put into Ray's object store
once and shared by every task (not copied into each); a task opens the snapshot from it (no
manifest read) and scans its split.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

import pyarrow as pa

try:
    import ray
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasink, Datasource, ReadTask
except ImportError as e:  # pragma: no cover - reported to the user who imports this module
    raise ImportError("lance_host.ray needs Ray Data (pip install 'ray[data]')") from e

import lance_host as lh
from lance_host._marshal import VectorLike
from lance_host._vectors import conform

# Fewest rows a default row slice holds (smaller tables are not cut).
MIN_SLICE_ROWS = 65_536


def _metadata(rows: int) -> BlockMetadata:
    """Block metadata across Ray versions (the constructor's fields changed over time)."""
    fields = getattr(BlockMetadata, "__dataclass_fields__", {})
    kw = {"num_rows": rows, "size_bytes": None, "input_files": None, "exec_stats": None}
    if "schema" in fields:
        kw["schema"] = None
    return BlockMetadata(**{k: v for k, v in kw.items() if k in fields or not fields})


class _CatalogTable(NamedTuple):
    """A catalog table as a task carries it: the catalog's properties and the table's name (and the
    caller's own storage options), never the storage options the catalog vended."""
    properties: dict
    namespace: list
    name: str
    storage_options: dict


def _catalog_table(table: str, catalog, storage_options, what: str) -> tuple[_CatalogTable, str, Optional[dict]]:
    """The catalog table `table` ("name" or "namespace.name") of the catalog with properties
    `catalog`, described here: (what tasks carry, its location, the options to open it with)."""
    from lance_host.catalog import _describe_here

    if not isinstance(catalog, Mapping) or not catalog:
        raise lh.errors._error(1, f"{what}: catalog must be the catalog's properties (a non-empty mapping), not {catalog!r}")
    *namespace, name = table.split(".")
    t = _CatalogTable({str(k): str(v) for k, v in catalog.items()}, namespace, name, dict(storage_options or {}))
    info = _describe_here(t.properties, t.namespace, t.name, reuse_s=0)
    return t, info.location, {**info.storage_options, **t.storage_options} or None


def _open_for_tasks(uri: str, version, storage_options, catalog, what: str):
    """(what tasks carry to open the table, the table pinned here): the storage options given,
    or, with `catalog`, the catalog table itself (tasks describe it where they run)."""
    if catalog is None:
        return storage_options, lh.open(uri, version=version, storage_options=storage_options)
    table, location, options = _catalog_table(uri, catalog, storage_options, what)
    return table, lh.open(location, version=version, storage_options=options)


def _task_options(storage):
    """The storage options a task opens with: those given, or a catalog table's as a catalog of
    this worker process describes it now (reused 5 s by the process's tasks; issue 60)."""
    if isinstance(storage, _CatalogTable):
        from lance_host.catalog import _describe_here

        info = _describe_here(storage.properties, storage.namespace, storage.name)
        return {**info.storage_options, **storage.storage_options} or None
    return storage


def _scan_task(token_ref, split: bytes, index: int, columns, filter, storage_options, keys=None):
    def read() -> Iterable[pa.Table]:
        token = ray.get(token_ref)
        ds = lh.open_snapshot(token, storage_options=_task_options(storage_options))
        s = lh.Split.from_bytes(split)
        rows = 0
        with ds.scan_split_stream(s, columns=columns, filter=filter,
                                  keys=None if keys is None else ray.get(keys)) as st:
            for b in st:
                rows += b.num_rows
                yield pa.Table.from_batches([b])
            io = st.io_stats()
        stats_dir = os.environ.get("LANCE_HOST_RAY_STATS_DIR")
        if stats_dir:
            import json

            with open(os.path.join(stats_dir, f"task-{index}-{os.getpid()}.json"), "w") as fh:
                json.dump({"pid": os.getpid(), "split": index, "rows": rows, "read_requests": io.read_requests}, fh)

    return read


class LanceHostDatasource(Datasource):
    """A Ray Data source whose read tasks are lance-host's scan splits."""

    def __init__(self, uri: str, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None,
                 version: Optional[int] = None, storage_options: Optional[dict] = None, target_rows: int = 0,
                 branch: Optional[str] = None, changes_since: Optional[int] = None, tag: Optional[str] = None,
                 keys: Optional[tuple[str, Any]] = None, catalog: Optional[Mapping[str, str]] = None):
        self._task_storage = storage_options
        if catalog is not None:  # `uri` names a table of that catalog
            self._task_storage, uri, storage_options = _catalog_table(uri, catalog, storage_options, "read_lance_host")
        if keys is not None:
            if not isinstance(keys, tuple) or len(keys) != 2 or not isinstance(keys[0], str):
                raise lh.errors._error(1, f"read_lance_host: keys must be (column, values), not {keys!r}")
            if changes_since is not None:
                raise lh.errors._error(1, "read_lance_host: keys cannot be combined with changes_since")
            values = keys[1]
            if not isinstance(values, (pa.Array, pa.ChunkedArray)):
                try:
                    values = pa.array(values)
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
                    raise lh.errors._error(1, f"read_lance_host: keys must be a pyarrow array or a list of one type: {e}") from None
            keys = (keys[0], values)
        if tag is not None:
            if version is not None or branch is not None:
                raise lh.errors._error(1, "read_lance_host: tag names a version and its branch: give it alone")
            ds = lh.open_tag(uri, tag, storage_options=storage_options)
        else:
            ds = lh.open(uri, version=version, storage_options=storage_options, branch=branch)
        lh._marshal._check_columns(ds.schema, columns)
        self.version = ds.version
        self._token = ds.export_snapshot()
        if changes_since is not None:
            if filter is not None:
                raise lh.errors._error(1, "read_lance_host: filter cannot be combined with changes_since (deleted rows are "
                                   "read as they were); filter the Ray dataset instead")
            splits = ds.plan_changes(changes_since, target_rows=target_rows)
        else:
            splits = ds.plan_scan(target_rows)
        # a change split's row count is a weight (its fragments hold unchanged rows too)
        self._splits = [(bytes(s), None if changes_since is not None else s.row_count) for s in splits]
        # without target_rows, a table with fewer fragments than Ray asks tasks for is cut into
        # row slices when Ray asks (get_read_tasks)
        self._slice_by_default = target_rows == 0 and changes_since is None
        self._columns = list(columns) if columns else None
        self._filter = filter
        self._keys = keys
        self._storage = storage_options

    @property
    def splits(self) -> int:
        """The number of scan splits, which is the number of read tasks."""
        return len(self._splits)

    def estimate_inmemory_data_size(self) -> Optional[int]:
        """Not estimated (None): Ray then sizes blocks as they are read."""
        return None

    def _default_splits(self, parallelism: int) -> list:
        """The splits to read: those planned, or — without `target_rows`, when the table has
        fewer fragments than Ray asks tasks for — row slices of about rows / parallelism (at
        least MIN_SLICE_ROWS), so that a one-fragment table is not read by one task."""
        if not self._slice_by_default or len(self._splits) >= parallelism:
            return self._splits
        rows = sum(r or 0 for _, r in self._splits)
        if rows < 2 * MIN_SLICE_ROWS:
            return self._splits
        target = max(MIN_SLICE_ROWS, -(-rows // parallelism))
        ds = lh.open_snapshot(self._token, storage_options=self._storage)
        return [(bytes(s), s.row_count) for s in ds.plan_scan(target)]

    def get_read_tasks(self, parallelism: int, **kwargs) -> list:
        """One read task per scan split (see `_default_splits`); the snapshot token is put into
        the object store once and shared by all tasks."""
        splits = self._default_splits(parallelism)
        token_ref = ray.put(self._token)  # once, shared by every task
        keys_ref = None if self._keys is None else ray.put(self._keys)  # a join's keys, once
        # A split's visible row count is exact without a filter (Ray may answer count() from
        # it); with a filter the number is unknown until the task runs.
        return [
            ReadTask(_scan_task(token_ref, split, i, self._columns, self._filter, self._task_storage, keys_ref),
                     _metadata(None if self._filter or self._keys is not None or rows is None else rows))
            for i, (split, rows) in enumerate(splits)
        ]


_RAY_READ_ARGS = {"ray_remote_args", "concurrency", "override_num_blocks"}


def read_lance_host(uri: str, *, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None,
                    version: Optional[int] = None, storage_options: Optional[dict] = None,
                    target_rows: int = 0, branch: Optional[str] = None, changes_since: Optional[int] = None,
                    tag: Optional[str] = None, keys: Optional[tuple[str, Any]] = None,
                    catalog: Optional[Mapping[str, str]] = None, **read_args) -> "ray.data.Dataset":
    """A `ray.data.Dataset` of the table at `version` (latest when None) of `branch` (main when
    None), or at the version `tag` names: one read task per scan split (`target_rows` cuts larger fragments into row slices),
    with the projection and the Lance SQL filter applied by Lance. With `changes_since`, the rows
    changed after that version instead, one task per change split, each row with `_rowid`,
    `_row_created_at_version`, `_row_last_updated_at_version` and `_change_type` (needs stable
    row ids; no `filter`). `keys=(column, values)`: a runtime key set (a join's build-side keys as
    a pyarrow array or a list), put into Ray's object store once and applied by every task's
    scan like `Dataset.scan(keys=...)`. Other keywords go to `ray.data.read_datasource`
    (ray_remote_args, concurrency, override_num_blocks); any other is InvalidArgumentError naming
    the valid ones (Ray would hand it to the source, which would ignore it). With `catalog` (a
    catalog's properties, as `lance_host.Catalog` takes them), `uri` names a table of that catalog
    ("name" or "namespace.name"): the driver describes it to plan, and every read task describes
    it through a catalog of its own worker process — the storage options the catalog vends never
    travel with a task, and expiring ones are refreshed where they are used."""
    unknown = sorted(set(read_args) - _RAY_READ_ARGS)
    if unknown:
        import difflib

        valid = ["columns", "filter", "keys", "version", "storage_options", "target_rows", "branch", "tag", "changes_since",
                 "catalog",
                 *sorted(_RAY_READ_ARGS)]
        close = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise lh.errors._error(1, f"read_lance_host: unknown keyword {unknown[0]!r}{hint}; valid: {', '.join(valid)}")
    source = LanceHostDatasource(uri, columns, filter, version, storage_options, target_rows, branch, changes_since, tag,
                                 keys=keys, catalog=catalog)
    read_args.setdefault("override_num_blocks", max(source.splits, 1))
    return ray.data.read_datasource(source, **read_args)


@ray.remote
def _search_split(token, split: bytes, column: str, vector, k: int, query: dict, storage_options):
    ds = lh.open_snapshot(token, storage_options=_task_options(storage_options))
    with ds.search_split(lh.Split.from_bytes(split), column, vector, k, **query) as s:
        return os.getpid(), s.read_all()


def _tasks(plan, max_tasks: Optional[int]) -> list:
    try:
        return lh.Split.group(plan, max_tasks)
    except lh.InvalidArgumentError:
        raise lh.errors._error(1, f"max_tasks must be at least 1, got {max_tasks}") from None


def vector_search(uri: str, column: str, vector: VectorLike, k: int = 10, *, nprobes: Optional[int] = None,
                  refine: Optional[int] = None, filter: Optional[str] = None,
                  columns: Optional[Sequence[str]] = None, metric: Optional[str] = None,
                  use_index: bool = True, version: Optional[int] = None,
                  storage_options: Optional[dict] = None, return_pids: bool = False,
                  max_tasks: Optional[int] = None,
                  catalog: Optional[Mapping[str, str]] = None) -> Union[pa.Table, tuple[pa.Table, list]]:
    """Distributed vector search: one Ray task per split of the vector plan (index segments and
    unindexed fragments), merged with the library's top-k merge. Returns a pyarrow Table of the
    global top k (projected columns, `_distance`, `_rowid`). `max_tasks` caps the tasks (at least
    one per split kind): a task then searches several splits combined into one (`Split.combine`:
    one plan, its segments' candidates merged before the re-rank). With `catalog`, `uri` names a
    table of that catalog, as for `read_lance_host`: every task describes it through a catalog of
    its own process, so vended credentials never travel with a task."""
    storage_options, ds = _open_for_tasks(uri, version, storage_options, catalog, "vector_search")
    lh._marshal._check_columns(ds.schema, [column] + (list(columns) if columns else []))
    token = ray.put(ds.export_snapshot())
    plan = _tasks(ds.plan_vector_search(column, metric, use_index), max_tasks)
    query = {"nprobes": nprobes, "refine_factor": refine, "prefilter": filter, "metric": metric,
             "columns": list(columns) if columns else None, "with_row_id": True}
    parts = ray.get([_search_split.remote(token, bytes(s), column, list(vector), k, query, storage_options)
                     for s in plan])
    merged = lh.merge_top_k([t for _, t in parts], k).read_all()
    return (merged, [p for p, _ in parts]) if return_pids else merged


@ray.remote
def _aggregate_split(token, split: bytes, aggregates, group_by, filter, storage_options):
    ds = lh.open_snapshot(token, storage_options=_task_options(storage_options))
    part, io = ds.aggregate_split(lh.Split.from_bytes(split), aggregates, group_by=group_by, filter=filter)
    return os.getpid(), part, io.read_requests


def aggregate(uri: str, aggregates: Sequence[tuple], *, group_by: Union[str, Sequence[str], None] = None, filter: Optional[str] = None, target_rows: int = 0,
              version: Optional[int] = None, storage_options: Optional[dict] = None,
              return_pids: bool = False,
              catalog: Optional[Mapping[str, str]] = None) -> Union[pa.Table, tuple[pa.Table, list]]:
    """Distributed aggregate: the driver pins the table and plans scan splits (row slices of
    about `target_rows` visible rows; 0 = one per fragment), one Ray task per split computes the
    split's partial states (a few rows per group; only the aggregated, grouped and filtered
    columns are read), and the driver merges them (`lance_host.merge_aggregates`). `aggregates`,
    `group_by` and `filter` as `Dataset.aggregate`. Returns a pyarrow Table equal to
    `Dataset.aggregate` on the pinned version (with `return_pids`, also the worker pids). With
    `catalog`, `uri` names a table of that catalog, described by every task's own process (as for
    `read_lance_host`)."""
    storage_options, ds = _open_for_tasks(uri, version, storage_options, catalog, "aggregate")
    token = ray.put(ds.export_snapshot())
    plan = ds.plan_scan(target_rows, slices=True)
    parts = ray.get([_aggregate_split.remote(token, bytes(s), aggregates, group_by, filter, storage_options)
                     for s in plan])
    if not parts:
        merged = ds.aggregate(aggregates, group_by=group_by, filter=filter)
    else:
        merged = lh.merge_aggregates([t for _, t, _ in parts])
    return (merged, [p for p, _, _ in parts]) if return_pids else merged


class LanceHostDatasink(Datasink):
    """A Ray Data sink with the staged protocol: the driver pins the table's version (or plans a
    create when the table does not exist), each write task stages its blocks on it (nothing
    committed), and `on_write_complete` commits all shares as ONE new version with the write's
    id as statement id (exactly once). When the write fails, Ray gives the sink no task results,
    so shares staged by finished tasks stay as data files no version references (invisible);
    `Dataset.cleanup(..., delete_unverified=True)` removes them when no write is in progress."""

    def __init__(self, uri: str, mode: str = "append", storage_options: Optional[dict] = None,
                 max_rows_per_file: int = 0, commit_message: Optional[str] = None,
                 vector_columns: Optional[dict] = None, new_schema: bool = False):
        import uuid

        if mode not in ("append", "overwrite"):
            raise lh.errors._error(1, f"unknown write mode {mode!r}; valid: 'append', 'overwrite'")
        self.dims = dict(vector_columns or {})
        if any(not isinstance(n, int) or isinstance(n, bool) or n <= 0 for n in self.dims.values()):
            raise lh.errors._error(1, f"vector_columns must map column names to dimensions >= 1, not {vector_columns!r}")
        self.new_schema = bool(new_schema)
        self.uri, self.storage = uri, storage_options
        self.max_rows_per_file, self.commit_message = max_rows_per_file, commit_message
        try:
            self.token = lh.open(uri, storage_options=storage_options).export_snapshot()
            self.mode = mode
        except lh.NotFoundError:
            self.token, self.mode = None, "create"
        self.statement = str(uuid.uuid4())
        self.result: Optional[lh.WriteResult] = None

    def get_name(self) -> str:
        """The sink's name in Ray's progress output."""
        return "LanceHost"

    def write(self, blocks: Iterable, ctx: Any) -> bytes:
        """Runs in a write task: stages the task's blocks; returns the staged-write bytes."""
        from ray.data.block import BlockAccessor

        tables = [BlockAccessor.for_block(b).to_arrow() for b in blocks]
        tables = [t for t in tables if t.num_rows]
        if not tables:
            return b""
        at = lh.open_snapshot(self.token, storage_options=self.storage) if self.token else None
        keep = at is not None and (self.mode == "append" or not self.new_schema)
        table = conform(pa.concat_tables(tables), at.schema if keep else None, self.dims)
        share = lh.stage_write(self.uri, table, mode=self.mode, at=at,
                               storage_options=self.storage, max_rows_per_file=self.max_rows_per_file)
        return bytes(share)

    def on_write_complete(self, write_result: Any) -> None:
        """Runs on the driver after every task succeeded: one commit of all shares."""
        returns = getattr(write_result, "write_returns", write_result)
        shares = [lh.StagedWrite(b) for b in returns if b]
        if shares:
            self.result = lh.commit(self.uri, shares, storage_options=self.storage, statement_id=self.statement,
                                    commit_message=self.commit_message)[1]


def write_lance_host(dataset: "ray.data.Dataset", uri: str, mode: str = "append", *, storage_options: Optional[dict] = None,
                     max_rows_per_file: int = 0, commit_message: Optional[str] = None,
                     vector_columns: Optional[dict] = None, new_schema: bool = False) -> Optional[lh.WriteResult]:
    """Write a `ray.data.Dataset` to the table at `uri` ('append' creates a missing table;
    'overwrite'): every write task stages, one commit makes one new version. Returns the
    commit's WriteResult (None when there was nothing to write).

    Vectors are written as `fixed_size_list<T, n>`: numpy/tensor columns of one dimension by
    their shape (Ray's variable-shaped tensors, which `map_batches(batch_format="numpy")` gives
    a vector column back as, by their rows' one length; ragged rows are written as lists; a
    column of pickled Python objects is refused), list columns named in `vector_columns` ({"vec": 16}), and on an append or an
    overwrite every column the table holds as a fixed-size list (an overwrite keeps the table's
    vector types unless `new_schema=True`). A row of another length is InvalidArgumentError."""
    sink = LanceHostDatasink(uri, mode, storage_options, max_rows_per_file, commit_message, vector_columns, new_schema)
    dataset.write_datasink(sink)
    return sink.result


@ray.remote
def _build_segment(uri: str, task: bytes, storage_options):
    ds = lh.open(uri, storage_options=storage_options)
    return os.getpid(), ds.execute_index_build_task(task)


def build_index(uri: str, column: str, index_type: str, *, name: Optional[str] = None, replace: bool = False,
                num_splits: int = 0, unindexed_only: bool = False, merge: bool = False,
                model: Optional[bytes] = None, storage_options: Optional[dict] = None,
                return_pids: bool = False, **params) -> tuple:
    """Build an index with Ray: the driver trains the model (vector types) and plans; one Ray
    task per build split builds its segment; the driver commits every segment as one index in
    one version (lance_host.build_index). Returns (the new version as a lance_host.Dataset,
    the model bytes to keep for `unindexed_only` builds), and the tasks' process ids with
    `return_pids`."""
    pids = []

    def run(tasks):
        out = ray.get([_build_segment.remote(uri, t, storage_options) for t in tasks])
        pids.extend(p for p, _ in out)
        return [seg for _, seg in out]

    ds, kept = lh.build_index(uri, column, index_type, run, name=name, replace=replace, num_splits=num_splits,
                              unindexed_only=unindexed_only, merge=merge, model=model,
                              storage_options=storage_options, **params)
    return (ds, kept, pids) if return_pids else (ds, kept)
