package org.lancehost;

import java.util.List;

/**
 * What a scan returns: columns (empty = all), a Lance SQL filter, a runtime key set, limit and
 * offset, batch size and the row id column. Immutable; each setter returns a copy.
 */
public final class ScanOptions {
  final String[] columns;
  final String filter;
  final long limit;
  final long offset;
  final long batchSize;
  final boolean withRowId;
  final String orderBy;
  final String keyColumn;
  final String[] keys;
  final DynamicFilter dynamicFilter;

  private ScanOptions(String[] columns, String filter, long limit, long offset, long batchSize, boolean withRowId,
      String orderBy, String keyColumn, String[] keys, DynamicFilter dynamicFilter) {
    this.dynamicFilter = dynamicFilter;
    this.keyColumn = keyColumn;
    this.keys = keys;
    this.orderBy = orderBy;
    this.columns = columns;
    this.filter = filter;
    this.limit = limit;
    this.offset = offset;
    this.batchSize = batchSize;
    this.withRowId = withRowId;
  }

  /** Every column, every row. */
  public static ScanOptions all() {
    return new ScanOptions(null, null, -1, 0, 0, false, null, null, null, null);
  }

  /** The columns to read, in this order (null: every column). */
  public ScanOptions columns(List<String> cols) {
    return new ScanOptions(cols == null ? null : cols.toArray(new String[0]), filter, limit, offset, batchSize, withRowId, orderBy, keyColumn, keys, dynamicFilter);
  }

  /** The columns to read, in this order. */
  public ScanOptions columns(String... cols) {
    return new ScanOptions(cols == null ? null : cols.clone(), filter, limit, offset, batchSize, withRowId, orderBy, keyColumn, keys, dynamicFilter);
  }

  /** A Lance SQL predicate such as {@code "id > 10 AND name LIKE 'a%'"}; null = none. */
  public ScanOptions filter(String sql) {
    return new ScanOptions(columns, sql, limit, offset, batchSize, withRowId, orderBy, keyColumn, keys, dynamicFilter);
  }

  /** At most `n` rows; negative = no limit. */
  public ScanOptions limit(long n) {
    return new ScanOptions(columns, filter, n, offset, batchSize, withRowId, orderBy, keyColumn, keys, dynamicFilter);
  }

  /** Skips the first `n` rows (of the scan, or of the split; not with a dynamic filter). */
  public ScanOptions offset(long n) {
    return new ScanOptions(columns, filter, limit, n, batchSize, withRowId, orderBy, keyColumn, keys, dynamicFilter);
  }

  /** Rows per batch; 0 = the library's default. */
  public ScanOptions batchSize(long n) {
    return new ScanOptions(columns, filter, limit, offset, n, withRowId, orderBy, keyColumn, keys, dynamicFilter);
  }

  /**
   * Sort the rows (of the scan, or of each split scanned) before offset and limit — a top-n with
   * a limit: {@code "price DESC, id"}, keys {@code column [ASC|DESC] [NULLS FIRST|LAST]} over
   * returned columns of primitive types; null = storage order.
   */
  public ScanOptions orderBy(String sortKeys) {
    return new ScanOptions(columns, filter, limit, offset, batchSize, withRowId, sortKeys, keyColumn, keys, dynamicFilter);
  }

  /**
   * A runtime key set (a join's build-side keys, known when the scan runs): only rows whose
   * top-level column {@code column} holds one of {@code values} (null entries match nothing;
   * none at all matches no row), ANDed with the filter; a scalar index on the column answers
   * it. The values are text cast exactly to the column's type ({@code "42"}, {@code "2026-01-31"}):
   * one that does not fit is {@link LanceException.InvalidArgument}. Null column = no key set.
   */
  public ScanOptions keys(String column, String... values) {
    return new ScanOptions(columns, filter, limit, offset, batchSize, withRowId, orderBy, column,
        column == null ? null : (values == null ? new String[0] : values.clone()), dynamicFilter);
  }

  /** {@link #keys(String, String...)} for an integer column. */
  public ScanOptions keys(String column, long... values) {
    String[] text = new String[values == null ? 0 : values.length];
    for (int i = 0; i < text.length; i++) text[i] = Long.toString(values[i]);
    return keys(column, text);
  }

  /** Append the {@code _rowid} column. */
  public ScanOptions withRowId(boolean on) {
    return new ScanOptions(columns, filter, limit, offset, batchSize, on, orderBy, keyColumn, keys, dynamicFilter);
  }

  /**
   * A dynamic filter ({@link DynamicFilter}) the host tightens while the scan runs: every batch
   * returned after an update is filtered with it. The scan keeps its own reference; no limit or
   * offset with one. Null = none.
   */
  public ScanOptions dynamicFilter(DynamicFilter f) {
    return new ScanOptions(columns, filter, limit, offset, batchSize, withRowId, orderBy, keyColumn, keys, f);
  }
}
