package org.lancehost.trino;

import java.util.Arrays;

/**
 * A search the library runs over the whole pinned version: a nearest-neighbour search (`query`)
 * or a full-text search (`text`), every split of its plan (one per index segment, flat splits
 * for unindexed rows) merged into the global top `k` (full text: scored with the version's
 * corpus statistics, shipped to every split).
 *
 * @param column the vector or text column as the table spells it
 * @param query the query vector (null for a full-text search)
 * @param text the query text (null for a vector search)
 * @param k how many rows
 * @param filter a Lance SQL filter the rows must pass before they are searched (a prefilter: the
 *     top k of the matching rows), or null
 */
public record LanceHostSearch(String column, float[] query, String text, long k, String filter) {
  @Override
  public boolean equals(Object o) {
    return o instanceof LanceHostSearch s && s.column.equals(column) && Arrays.equals(s.query, query)
        && java.util.Objects.equals(s.text, text) && s.k == k && java.util.Objects.equals(s.filter, filter);
  }

  @Override
  public int hashCode() {
    return column.hashCode() * 31 + Arrays.hashCode(query) * 7 + java.util.Objects.hashCode(text) + Long.hashCode(k)
        + java.util.Objects.hashCode(filter) * 13;
  }

  @Override
  public String toString() {
    String what = text == null ? "nearest " + k + " by " + column : "best " + k + " by " + column + " matching " + text;
    return filter == null ? what : what + " where " + filter;
  }
}
