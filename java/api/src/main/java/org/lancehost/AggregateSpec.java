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
  public static final int COUNT_STAR = 1, COUNT = 2, SUM = 3, MIN = 4, MAX = 5, AVG = 6, COUNT_DISTINCT = 7,
      APPROX_COUNT_DISTINCT = 8;

  final List<String> groupBy;
  final List<Integer> functions;
  final List<String> columns;
  final List<String> aliases;
  /** Per aggregate: a Lance SQL expression aggregated instead of its column, or null. */
  final List<String> expressions;
  final String filter;

  private AggregateSpec(List<String> groupBy, List<Integer> functions, List<String> columns, List<String> aliases,
      List<String> expressions, String filter) {
    this.groupBy = groupBy;
    this.functions = functions;
    this.columns = columns;
    this.aliases = aliases;
    this.expressions = expressions;
    this.filter = filter;
  }

  /** An empty spec: no group-by columns, no aggregates (add at least one), no filter. */
  public static AggregateSpec create() {
    return new AggregateSpec(List.of(), List.of(), List.of(), List.of(), List.of(), null);
  }

  /** Groups by these columns (scalar columns; NULL keys form their own group). */
  public AggregateSpec groupBy(String... cols) {
    return new AggregateSpec(List.of(cols), functions, columns, aliases, expressions, filter);
  }

  /** Adds COUNT(*) named `alias` (null: {@code count(*)}). */
  public AggregateSpec countStar(String alias) {
    return add(COUNT_STAR, null, alias);
  }

  /** Adds `function` (a LANCE_AGG_* value) over `column`; `alias` null = the default name. */
  public AggregateSpec add(int function, String column, String alias) {
    return with(function, column, null, alias);
  }

  /**
   * Adds `function` (a LANCE_AGG_* value) over a Lance SQL expression of the row, e.g. {@code
   * addExpression(SUM, "l_extendedprice * (1 - l_discount)", "revenue")}; `alias` null = the
   * default name ({@code sum(<expression>)}). Integer arithmetic inside the expression is refused
   * ({@link LanceException.NotSupported}: the engine would wrap an overflow); cast to DECIMAL(38, 0)
   * or DOUBLE. Since 0.15.
   */
  public AggregateSpec addExpression(int function, String expression, String alias) {
    if (expression == null) throw new LanceException.InvalidArgument("expression is null");
    return with(function, null, expression, alias);
  }

  private AggregateSpec with(int function, String column, String expression, String alias) {
    List<Integer> f = new ArrayList<>(functions);
    f.add(function);
    List<String> c = new ArrayList<>(columns);
    c.add(column);
    List<String> a = new ArrayList<>(aliases);
    a.add(alias);
    List<String> e = new ArrayList<>(expressions);
    e.add(expression);
    return new AggregateSpec(groupBy, f, c, a, e, filter);
  }

  /** Adds `function` over `column`; `alias` null = the default name. */
  public AggregateSpec add(AggregateFunction function, String column, String alias) {
    return add(function.code, column, alias);
  }

  /** {@link #addExpression(int, String, String)} with the function as an enum. */
  public AggregateSpec addExpression(AggregateFunction function, String expression, String alias) {
    return addExpression(function.code, expression, alias);
  }

  /** Aggregates only the rows matching a Lance SQL filter (null: every row). */
  public AggregateSpec filter(String sql) {
    return new AggregateSpec(groupBy, functions, columns, aliases, expressions, sql);
  }

  int[] functionArray() {
    int[] out = new int[functions.size()];
    for (int i = 0; i < out.length; i++) out[i] = functions.get(i);
    return out;
  }
}
