package org.lancehost;

import java.util.ArrayList;
import java.util.List;

/**
 * Aggregates for {@link Dataset#aggregate}: group-by columns, aggregate functions over columns
 * (COUNT(*), COUNT, SUM, MIN, MAX, AVG) with optional result names, and a Lance SQL filter.
 * Immutable; each method returns a copy.
 */
public final class AggregateSpec implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  /** LANCE_AGG_* values. */
  public static final int COUNT_STAR = 1, COUNT = 2, SUM = 3, MIN = 4, MAX = 5, AVG = 6;

  final List<String> groupBy;
  final List<Integer> functions;
  final List<String> columns;
  final List<String> aliases;
  final String filter;

  private AggregateSpec(List<String> groupBy, List<Integer> functions, List<String> columns, List<String> aliases, String filter) {
    this.groupBy = groupBy;
    this.functions = functions;
    this.columns = columns;
    this.aliases = aliases;
    this.filter = filter;
  }

  public static AggregateSpec create() {
    return new AggregateSpec(List.of(), List.of(), List.of(), List.of(), null);
  }

  public AggregateSpec groupBy(String... cols) {
    return new AggregateSpec(List.of(cols), functions, columns, aliases, filter);
  }

  public AggregateSpec countStar(String alias) {
    return add(COUNT_STAR, null, alias);
  }

  /** Adds `function` (a LANCE_AGG_* value) over `column`; `alias` null = the default name. */
  public AggregateSpec add(int function, String column, String alias) {
    List<Integer> f = new ArrayList<>(functions);
    f.add(function);
    List<String> c = new ArrayList<>(columns);
    c.add(column);
    List<String> a = new ArrayList<>(aliases);
    a.add(alias);
    return new AggregateSpec(groupBy, f, c, a, filter);
  }

  public AggregateSpec filter(String sql) {
    return new AggregateSpec(groupBy, functions, columns, aliases, sql);
  }

  int[] functionArray() {
    int[] out = new int[functions.size()];
    for (int i = 0; i < out.length; i++) out[i] = functions.get(i);
    return out;
  }
}
