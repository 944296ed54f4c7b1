package org.lancehost.trino;

import java.util.Arrays;

/**
 * A nearest-neighbour search the library runs over the whole pinned version: every split of
 * the search plan (one per index segment, flat splits for unindexed rows), merged into the
 * exact global top `k`.
 *
 * @param column the vector column as the table spells it
 * @param query the query vector
 * @param k how many rows
 */
public record LanceHostSearch(String column, float[] query, long k) {
  @Override
  public boolean equals(Object o) {
    return o instanceof LanceHostSearch s && s.column.equals(column) && Arrays.equals(s.query, query) && s.k == k;
  }

  @Override
  public int hashCode() {
    return column.hashCode() * 31 + Arrays.hashCode(query) * 7 + Long.hashCode(k);
  }

  @Override
  public String toString() {
    return "nearest " + k + " by " + column;
  }
}
