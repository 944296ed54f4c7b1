package org.lancehost;

import java.util.List;

/**
 * A predicate the host tightens while its scans run (a join's growing build side, a top-n's
 * rising threshold): made for one table and the columns its updates may name, handed to scans
 * with {@link ScanOptions#dynamicFilter(DynamicFilter)}. Every batch a running scan returns
 * after an update returned is filtered with that update (or a newer one); batches returned
 * before are not revisited. Thread-safe: update from any thread while others read the scans.
 * Close it when done (running scans keep its last predicate). See docs/distributed.md,
 * "Dynamic filters".
 */
public final class DynamicFilter implements AutoCloseable {
  final Handle handle;

  /**
   * A filter for the table of {@code ds} over its top-level {@code columns}, passing every row
   * until its first update.
   *
   * @throws LanceException.InvalidArgument for no columns, an unknown or repeated column
   */
  public DynamicFilter(Dataset ds, List<String> columns) {
    String[] cols = columns.toArray(new String[0]);
    this.handle = new Handle(ds.withHandle(p -> Native.dynamicFilterNew(p, cols)), "dynamic filter",
        Native::dynamicFilterFree);
  }

  /**
   * Replace the predicate with a Lance SQL condition over the filter's columns (null: every row
   * passes again).
   *
   * @throws LanceException.InvalidArgument for SQL that does not parse or names another column
   *     (the predicate stays as it was)
   */
  public void setSql(String sql) {
    handle.with(f -> {
      Native.dynamicFilterSetSql(f, sql);
      return null;
    });
  }

  /**
   * Replace the predicate with {@code column IN (values)}, the values as text cast exactly to
   * the column's type ({@code "42"}, {@code "2026-01-31"}); null entries match nothing.
   *
   * @throws LanceException.InvalidArgument for a column the filter was not made for or values
   *     that do not fit it (the predicate stays as it was)
   */
  public void setKeys(String column, String... values) {
    String[] keys = values == null ? new String[0] : values.clone();
    handle.with(f -> {
      Native.dynamicFilterSetKeys(f, column, keys);
      return null;
    });
  }

  /** {@link #setKeys(String, String...)} for an integer column. */
  public void setKeys(String column, long... values) {
    String[] text = new String[values == null ? 0 : values.length];
    for (int i = 0; i < text.length; i++) text[i] = Long.toString(values[i]);
    setKeys(column, text);
  }

  /** How many updates were accepted. */
  public long generation() {
    return handle.withLong(Native::dynamicFilterGeneration);
  }

  /** Releases the filter; scans that use it keep their last predicate. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }
}
