"""lance-host for Python: read Lance tables the way a distributed engine does — pinned snapshots,
splits that travel as bytes, scans, vector and full-text search per split, merges, take,
prewarm — through liblance_host's C ABI (bundled with this package). Arrow data arrives as
`pyarrow` objects without copies (Arrow C Data / C Stream interfaces). No pylance needed.

    import lance_host
    ds = lance_host.open("/data/t.lance")
    for split in ds.plan_scan():          # picklable; ship to workers
        reader = ds.scan_split(split, columns=["id"])

Errors raise `LanceError` (`.code`, `.name`, `.message`), as the subclass for its code that is also
the matching built-in (`ValueError`, `LookupError`, `TimeoutError`, ...); errors pickle. Every function mirrors one or more C
functions of `include/lance_host.h`; their documentation there is normative.

The package is one module per area, re-exported here: `errors`, `stream`, `split`, `query`
(scan and search options), `blobs`, `search`, `aggregate`, `index`, `write`, `dataset`, `tables`
(open, write, commit), `catalog`, `session`; `spark` and `ray` are the engines' layers.
"""

from __future__ import annotations

from . import _ffi  # noqa: F401  (tests and the engine layers reach the C bindings through it)
from ._ffi import LIB
from .errors import (  # noqa: F401
    CancelledError,
    ConflictError,
    CorruptError,
    error_class,
    error_code_name,
    FailedPreconditionError,
    HostStreamError,
    InternalError,
    InvalidArgumentError,
    LanceError,
    LanceIOError,
    LanceTimeoutError,
    NotFoundError,
    NotSupportedError,
    OutOfRangeError,
    PermissionDeniedError,
)
from ._marshal import (  # noqa: F401
    LOG_LEVELS,
    METRICS,
    SCALAR_INDEX_TYPES,
    TEXT_MATCH,
    VECTOR_INDEX_TYPES,
    WHEN_MATCHED,
    WHEN_NOT_MATCHED,
    WHEN_NOT_MATCHED_BY_SOURCE,
    WRITE_MODES,
)
from .stream import IoStats, Stream  # noqa: F401
from .split import (  # noqa: F401
    Split,
    SPLIT_FLAT,
    SPLIT_FTS_FLAT,
    SPLIT_FTS_SEGMENT,
    SPLIT_INDEX_SEGMENT,
    SPLIT_SCAN,
    SplitPlan,
)
from .query import DynamicFilter  # noqa: F401
from .blobs import BLOB_KINDS, BlobInfo, Blobs  # noqa: F401
from .search import merge_fts, merge_top_k, rrf_merge  # noqa: F401
from .aggregate import AGGREGATE_FUNCTIONS, Expression, merge_aggregates  # noqa: F401
from .index import IndexInfo, IndexSegment  # noqa: F401
from .write import CleanupResult, CompactResult, StagedWrite, WriteResult  # noqa: F401
from .dataset import Dataset, FragmentInfo, TableStatistics, VersionInfo  # noqa: F401
from .tables import (  # noqa: F401
    abort_staged,
    build_index,
    commit,
    commit_tables,
    open,
    open_at_timestamp,
    open_snapshot,
    open_tag,
    stage_write,
    write_table,
)
from .catalog import Catalog, TableInfo  # noqa: F401
from .session import (  # noqa: F401
    build_profile,
    build_features,
    CallContext,
    configure_session,
    flush_data_cache,
    metrics,
    register_credentials,
    session_stats,
    SessionOptions,
    set_log_callback,
    version,
    version_number,
)

__all__ = [
    "LanceError", "InvalidArgumentError", "NotFoundError", "LanceIOError", "NotSupportedError", "InternalError",
    "FailedPreconditionError", "PermissionDeniedError", "CorruptError", "LanceTimeoutError", "CancelledError",
    "error_class", "open", "open_at_timestamp", "open_snapshot", "Dataset", "Split", "Stream", "IoStats",
    "Catalog", "TableInfo", "CallContext", "DynamicFilter", "SessionOptions", "configure_session", "session_stats",
    "flush_data_cache", "set_log_callback", "register_credentials", "metrics", "merge_top_k", "merge_fts", "rrf_merge", "version",
    "build_profile", "build_features", "version_number", "error_code_name", "SPLIT_SCAN", "SPLIT_INDEX_SEGMENT", "SPLIT_FLAT", "SPLIT_FTS_SEGMENT",
    "SPLIT_FTS_FLAT", "ConflictError", "HostStreamError", "OutOfRangeError", "merge_aggregates", "AGGREGATE_FUNCTIONS", "Expression", "WriteResult", "StagedWrite", "write_table", "stage_write", "commit",
    "commit_tables", "abort_staged", "CompactResult", "CleanupResult", "open_tag", "build_index", "__version__",
]

#: The loaded library's version ("major.minor.patch"), as `version()` returns it.
__version__ = version()

if build_profile() != "release":
    # once per process (a module is imported once): the speed a user sees is not the library's
    import warnings

    warnings.warn(
        f"lance_host: the loaded library ({LIB._name}) is a {build_profile()} build, many times slower "
        "than a release build (5-38x on scans and index builds); build one with "
        "`scripts/build-wheel.sh --release` (docs/building.md)", RuntimeWarning, stacklevel=2)


def __dir__():
    """The package's public names (`__all__`), not the modules and helpers it imports (PEP 562)."""
    return sorted(set(__all__) | {"spark", "ray", "polars", "daft"})

