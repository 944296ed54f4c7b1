/* lance-host as a DuckDB extension, written against DuckDB's C extension API (stable API v1.5.6,
 * so any DuckDB from 1.5.6 on loads it). Table functions:
 *
 *   lance_scan(uri [, filter := 'sql'] [, version := n] [, branch := 'name'])
 *       the table at `version` (default: latest, pinned at bind) of `branch` (default: main;
 *       every search function takes `branch` too), read in parallel: lance-host
 *       plans one scan split per fragment and DuckDB's threads take splits in turn. DuckDB
 *       pushes its projection down (only the columns the query uses are read); `filter` is
 *       pushed into Lance's scan (scalar indexes apply). DuckDB's C API has no filter pushdown
 *       of its own, so a WHERE clause is evaluated by DuckDB on the rows the scan returns.
 *       `key_column := 'id', keys := [...]` is a runtime key set (a join's build-side keys):
 *       only rows whose column holds one of the keys are read (a scalar index answers it);
 *       the keys travel as text and are cast exactly to the column's type.
 *   lance_vector_search(uri, column, vector, k [, filter := 'sql'] [, nprobes := n] [, refine := n]
 *                       [, distance_lower := x] [, distance_upper := y])
 *       the k rows nearest to `vector` (a list of numbers): every split of lance-host's vector
 *       plan (index segments and unindexed fragments) is searched and the top-k merged, with
 *       `_distance`; `filter` is a prefilter. Projection is pushed down as for lance_scan.
 *
 *   lance_vector_search_batch(uri, column, vectors, k [, filter := 'sql'] [, nprobes := n] [, refine := n]
 *                             [, distance_lower := x] [, distance_upper := y])
 *       the k nearest rows for each query vector of `vectors` (a list of lists of numbers, all of
 *       one dimension), with `query_index` (0-based position in `vectors`) and `_distance`: every
 *       split of the vector plan is searched once for the whole batch and the results merged per
 *       query. Ordered by query_index, then distance.
 *   lance_blob_read(uri, column, row_id, offset, length)  -- scalar
 *       `length` bytes of row `row_id`'s blob in blob column `column` from `offset`, as a BLOB,
 *       read by range (only those bytes are fetched); NULL for a null blob. A range past the end
 *       of the blob is an error. A query opens each table once per DuckDB thread that runs the
 *       function and reads that version for the rest of the query; rows of one chunk with the
 *       same uri and column share one descriptor take.
 *
 *   lance_fts(uri, column, query, k [, filter := 'sql'] [, operator := 'OR'|'AND'|'PHRASE']
 *             [, slop := n] [, version := n])
 *       the k rows of the table's full-text search with BM25 `_score` (descending): lance-host's
 *       full-text plan (one split per INVERTED segment plus unindexed fragments), the corpus
 *       statistics computed once, every split searched with them and merged — the answer Lance's
 *       own search gives. `filter` is a prefilter.
 *   lance_hybrid_search(uri, vector_column, vector, text_column, query, k [, filter := 'sql']
 *                       [, nprobes := n] [, rrf_k := 60] [, version := n])
 *       the k best rows of a vector search and a full-text search fused by reciprocal rank, with
 *       `_relevance_score`, `_distance` and `_score` (NULL where a row is absent from a list).
 *
 *   lance_changes(uri, since_version, version [, branch := 'name'])
 *       the rows changed after `since_version` up to `version` (0 = latest): the table's
 *       columns, then `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version` and
 *       `_change_type` ('insert', 'update', 'delete'; deleted rows with their values at
 *       `since_version`), read in parallel from lance-host's change splits. Needs a table with
 *       stable row ids (an error names the table otherwise).
 *
 *   lance_host_data_cache([memory_bytes := n] [, block_bytes := n] [, disk_dir := 'path']
 *                         [, disk_bytes := n] [, disabled := true])
 *       one row with the data cache's settings in effect and its figures (hits, misses, bytes
 *       from cache and from storage, evictions, errors, bytes per tier). With any named
 *       parameter it first configures lance-host's process-wide session, which works only
 *       before the first lance_scan/lance_vector_search of the process (0 = the default).
 *
 * One file per function family: lance_duckdb_scan.c, lance_duckdb_search.c (vector, batch, fts,
 * hybrid), lance_duckdb_aggregate.c, lance_duckdb_changes.c, lance_duckdb_cache.c,
 * lance_duckdb_blob.c, the writes (lance_write, lance_delete, index builds) in
 * lance_duckdb_write.c, and what they share in lance_duckdb_common.c / lance_duckdb.h.
 *
 * Rows arrive as Arrow C Data batches from lance-host and are copied into DuckDB vectors.
 * Supported column types: (u)int8..64, float, double, bool, utf8/large utf8 and fixed-size
 * lists of float or double (DuckDB FLOAT[n] / DOUBLE[n]); a query that uses a column of
 * another type fails with an error naming it. */
#include "lance_duckdb.h"

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access* access) {
  if (lance_host_version_number() < LANCE_HOST_VERSION_NUMBER) {
    access->set_error(info, "lance_host: liblance_host is older than the header this extension was built with");
    return false;
  }
  if (!register_function(connection, "lance_scan", scan_bind, scan_init, 0) ||
      !register_function(connection, "lance_vector_search", search_bind, search_init, KIND_VECTOR) ||
      !register_function(connection, "lance_vector_search_batch", batch_bind, search_init, KIND_BATCH) ||
      !register_function(connection, "lance_fts", fts_bind, fts_init, KIND_FTS) ||
      !register_function(connection, "lance_hybrid_search", hybrid_bind, hybrid_init, KIND_HYBRID) ||
      !register_aggregate_function(connection) || !register_blob_function(connection) ||
      !register_cache_function(connection) || !register_changes_function(connection) ||
      !lance_duckdb_register_writes(connection)) {
    access->set_error(info, "lance_host: registering the table functions failed");
    return false;
  }
  duckdb_database* db = access->get_database(info);
  if (!db || !lance_duckdb_write_connect(*db)) {
    access->set_error(info, "lance_host: cannot open the connection lance_write runs its queries on");
    return false;
  }
  return true;
}
