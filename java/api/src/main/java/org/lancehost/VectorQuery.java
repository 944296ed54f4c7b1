package org.lancehost;

import java.util.List;

/**
 * A nearest-neighbour query for {@link Dataset#search}: the column, the query vector, k per
 * split, the metric (0 = the plan's), IVF partitions to probe (0 = Lance's default), the
 * re-rank factor, a prefilter and the columns to return. Immutable; setters return copies.
 */
public final class VectorQuery {
  /** LANCE_METRIC_* values. */
  public static final int METRIC_DEFAULT = 0, L2 = 1, COSINE = 2, DOT = 3, HAMMING = 4;

  final String column;
  final float[] vector;
  final long k;
  final int metric;
  final int nprobes;
  final int refineFactor;
  final String prefilter;
  final String[] columns;
  final boolean withRowId;

  private VectorQuery(String column, float[] vector, long k, int metric, int nprobes, int refineFactor,
      String prefilter, String[] columns, boolean withRowId) {
    this.column = column;
    this.vector = vector;
    this.k = k;
    this.metric = metric;
    this.nprobes = nprobes;
    this.refineFactor = refineFactor;
    this.prefilter = prefilter;
    this.columns = columns;
    this.withRowId = withRowId;
  }

  /** The `k` nearest rows of `column` to `vector` (its dimension must be the column's). */
  public static VectorQuery of(String column, float[] vector, long k) {
    return new VectorQuery(column, vector == null ? null : vector.clone(), k, METRIC_DEFAULT, 0, 0, null, null, true);
  }

  /** The distance (METRIC_DEFAULT: the index's own, L2 without one; or {@link Metric}). */
  public VectorQuery metric(int m) {
    return new VectorQuery(column, vector, k, m, nprobes, refineFactor, prefilter, columns, withRowId);
  }

  /** IVF partitions an index segment search probes (0: Lance's default). */
  public VectorQuery nprobes(int n) {
    return new VectorQuery(column, vector, k, metric, n, refineFactor, prefilter, columns, withRowId);
  }

  /** Re-rank `k * r` candidates by their exact distance (0: no re-rank). */
  public VectorQuery refineFactor(int r) {
    return new VectorQuery(column, vector, k, metric, nprobes, r, prefilter, columns, withRowId);
  }

  /** Searches only the rows matching a Lance SQL filter (applied before the search). */
  public VectorQuery prefilter(String sql) {
    return new VectorQuery(column, vector, k, metric, nprobes, refineFactor, sql, columns, withRowId);
  }

  /** {@link #refineFactor}, under the name every surface uses (Python, Ray, Spark, DuckDB). */
  public VectorQuery refine(int r) {
    return refineFactor(r);
  }

  /** {@link #prefilter}, under the name every surface uses (Python, Ray, Spark, DuckDB). */
  public VectorQuery filter(String sql) {
    return prefilter(sql);
  }

  /** Columns besides {@code _distance}; empty = every column. */
  public VectorQuery columns(List<String> cols) {
    return new VectorQuery(column, vector, k, metric, nprobes, refineFactor, prefilter,
        cols == null ? null : cols.toArray(new String[0]), withRowId);
  }

  /** Append {@code _rowid} (on by default: merges and take need it). */
  public VectorQuery withRowId(boolean on) {
    return new VectorQuery(column, vector, k, metric, nprobes, refineFactor, prefilter, columns, on);
  }
}
