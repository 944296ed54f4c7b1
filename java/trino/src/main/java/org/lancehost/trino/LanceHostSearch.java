package org.lancehost.trino;

import java.util.Arrays;
import org.lancehost.TextMatch;

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
 * @param match how a full-text query's terms match (any, all, the phrase; null for a vector search)
 * @param slop for a phrase: how many other terms may come between the phrase's terms
 */
public record LanceHostSearch(String column, float[] query, String text, long k, String filter, TextMatch match,
    int slop) {
  /** A nearest-neighbour search. */
  static LanceHostSearch vector(String column, float[] query, long k, String filter) {
    return new LanceHostSearch(column, query, null, k, filter, null, 0);
  }

  /** The same search of the column as the table spells it. */
  LanceHostSearch withColumn(String name) {
    return new LanceHostSearch(name, query, text, k, filter, match, slop);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LanceHostSearch s && s.column.equals(column) && Arrays.equals(s.query, query)
        && java.util.Objects.equals(s.text, text) && s.k == k && java.util.Objects.equals(s.filter, filter)
        && s.match == match && s.slop == slop;
  }

  @Override
  public int hashCode() {
    return column.hashCode() * 31 + Arrays.hashCode(query) * 7 + java.util.Objects.hashCode(text) + Long.hashCode(k)
        + java.util.Objects.hashCode(filter) * 13 + java.util.Objects.hashCode(match) * 17 + slop;
  }

  @Override
  public String toString() {
    String how = match == TextMatch.PHRASE ? " the phrase" + (slop == 0 ? "" : " (slop " + slop + ")")
        : match == TextMatch.ALL ? " all of" : "";
    String what = text == null ? "nearest " + k + " by " + column : "best " + k + " by " + column + " matching" + how + " " + text;
    return filter == null ? what : what + " where " + filter;
  }
}
