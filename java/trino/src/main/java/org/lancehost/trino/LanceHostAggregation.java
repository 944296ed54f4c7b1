package org.lancehost.trino;

import java.util.List;
import org.lancehost.AggregateSpec;

/**
 * An aggregation computed by the library over the whole pinned version (its final result, one
 * split): the group-by columns and each aggregate's function, input column and result name.
 *
 * @param groupBy the group-by columns as the table spells them
 * @param functions each aggregate's {@code AggregateSpec} function code
 * @param columns each aggregate's input column (null for COUNT(*))
 * @param aliases each aggregate's result column name
 */
public record LanceHostAggregation(List<String> groupBy, List<Integer> functions, List<String> columns,
    List<String> aliases) {
  /** The library's spec of this aggregation, with `filter` (Lance SQL, may be null). */
  AggregateSpec spec(String filter) {
    AggregateSpec s = AggregateSpec.create().groupBy(groupBy.toArray(new String[0]));
    for (int i = 0; i < functions.size(); i++) {
      if (functions.get(i) == AggregateSpec.COUNT_STAR) {
        s = s.countStar(aliases.get(i));
      } else {
        s = s.add(functions.get(i), columns.get(i), aliases.get(i));
      }
    }
    return filter == null ? s : s.filter(filter);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < functions.size(); i++) {
      if (i > 0) b.append(", ");
      b.append(aliases.get(i)).append('=').append(switch (functions.get(i)) {
        case AggregateSpec.COUNT_STAR -> "count(*)";
        case AggregateSpec.COUNT -> "count(" + columns.get(i) + ")";
        case AggregateSpec.SUM -> "sum(" + columns.get(i) + ")";
        case AggregateSpec.MIN -> "min(" + columns.get(i) + ")";
        case AggregateSpec.MAX -> "max(" + columns.get(i) + ")";
        default -> "f" + functions.get(i) + "(" + columns.get(i) + ")";
      });
    }
    return (groupBy.isEmpty() ? "" : "group by " + groupBy + ": ") + b;
  }
}
