package org.lancehost.trino;

import io.trino.spi.connector.ConnectorTableHandle;
import java.util.List;

/**
 * A table pinned at one version for the whole query, with what was pushed into its scans.
 *
 * @param schema the Trino schema
 * @param namespace the lance-host namespace of the schema
 * @param table the table's name as the catalog spells it
 * @param version the pinned version
 * @param filter a Lance SQL filter every split's scan applies (null = none): exactly the part of
 *     Trino's constraint that translates (FilterTranslator)
 * @param limit rows each split returns at most (-1 = no limit); Trino still applies its own
 * @param orderBy Lance sort keys each split's scan sorts by before its limit (a top-n; null = none)
 * @param aggregation an aggregation the library computes over the whole version (null = rows)
 * @param update an UPDATE's assignments: column to Lance SQL literal (null = none)
 * @param search a nearest-neighbour search whose rows this handle returns (null = the table's rows)
 */
public record LanceHostTableHandle(String schema, List<String> namespace, String table, long version, String filter,
    long limit, String orderBy, LanceHostAggregation aggregation, java.util.Map<String, String> update,
    LanceHostSearch search) implements ConnectorTableHandle {
  /** A copy with `filter` as its filter. */
  LanceHostTableHandle withFilter(String f) {
    return new LanceHostTableHandle(schema, namespace, table, version, f, limit, orderBy, aggregation, update, search);
  }

  /** A copy with `n` as its limit. */
  LanceHostTableHandle withLimit(long n) {
    return new LanceHostTableHandle(schema, namespace, table, version, filter, n, orderBy, aggregation, update, search);
  }

  /** A copy whose splits each return their top `n` rows by `keys`. */
  LanceHostTableHandle withTopN(String keys, long n) {
    return new LanceHostTableHandle(schema, namespace, table, version, filter, n, keys, aggregation, update, search);
  }

  /** A copy that computes `a` instead of returning rows. */
  LanceHostTableHandle withAggregation(LanceHostAggregation a) {
    return new LanceHostTableHandle(schema, namespace, table, version, filter, limit, orderBy, a, update, search);
  }

  /** A copy that sets `set` (column to Lance SQL literal) in the rows it selects. */
  LanceHostTableHandle withUpdate(java.util.Map<String, String> set) {
    return new LanceHostTableHandle(schema, namespace, table, version, filter, limit, orderBy, aggregation, set, search);
  }

  /** A copy that returns the rows of `s`. */
  LanceHostTableHandle withSearch(LanceHostSearch s) {
    return new LanceHostTableHandle(schema, namespace, table, version, filter, limit, orderBy, aggregation, update, s);
  }

  /** Whether a pushdown may still change what the scans return. */
  boolean plainRows() {
    return search == null && aggregation == null;
  }

  @Override
  public String toString() {
    return "lance_host:" + schema + "." + table + "@v" + version + (filter == null ? "" : " lance_filter=[" + filter + "]")
        + (orderBy == null ? "" : " lance_order=[" + orderBy + "]") + (limit < 0 ? "" : " lance_limit=" + limit)
        + (aggregation == null ? "" : " lance_aggregate=[" + aggregation + "]")
        + (update == null ? "" : " lance_update=" + update) + (search == null ? "" : " lance_search=[" + search + "]");
  }
}
