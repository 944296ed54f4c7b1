package org.lancehost;

import java.util.List;

/**
 * What a scan returns: columns (empty = all), a Lance SQL filter, limit and offset, batch size
 * and the row id column. Immutable; each setter returns a copy.
 */
public final class ScanOptions {
  final String[] columns;
  final String filter;
  final long limit;
  final long offset;
  final long batchSize;
  final boolean withRowId;
  final String orderBy;

  private ScanOptions(String[] columns, String filter, long limit, long offset, long batchSize, boolean withRowId,
      String orderBy) {
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
    return new ScanOptions(null, null, -1, 0, 0, false, null);
  }

  public ScanOptions columns(List<String> cols) {
    return new ScanOptions(cols == null ? null : cols.toArray(new String[0]), filter, limit, offset, batchSize, withRowId, orderBy);
  }

  public ScanOptions columns(String... cols) {
    return new ScanOptions(cols == null ? null : cols.clone(), filter, limit, offset, batchSize, withRowId, orderBy);
  }

  /** A Lance SQL predicate such as {@code "id > 10 AND name LIKE 'a%'"}; null = none. */
  public ScanOptions filter(String sql) {
    return new ScanOptions(columns, sql, limit, offset, batchSize, withRowId, orderBy);
  }

  /** At most `n` rows; negative = no limit. */
  public ScanOptions limit(long n) {
    return new ScanOptions(columns, filter, n, offset, batchSize, withRowId, orderBy);
  }

  public ScanOptions offset(long n) {
    return new ScanOptions(columns, filter, limit, n, batchSize, withRowId, orderBy);
  }

  /** Rows per batch; 0 = the library's default. */
  public ScanOptions batchSize(long n) {
    return new ScanOptions(columns, filter, limit, offset, n, withRowId, orderBy);
  }

  /**
   * Sort the rows (of the scan, or of each split scanned) before offset and limit — a top-n with
   * a limit: {@code "price DESC, id"}, keys {@code column [ASC|DESC] [NULLS FIRST|LAST]} over
   * returned columns of primitive types; null = storage order.
   */
  public ScanOptions orderBy(String keys) {
    return new ScanOptions(columns, filter, limit, offset, batchSize, withRowId, keys);
  }

  /** Append the {@code _rowid} column. */
  public ScanOptions withRowId(boolean on) {
    return new ScanOptions(columns, filter, limit, offset, batchSize, on, orderBy);
  }
}
