package org.lancehost;

import java.util.ArrayList;
import java.util.List;

/**
 * Aggregates for {@link Dataset#aggregate}: group keys (columns or expressions), aggregate functions over columns
 * (COUNT(*), COUNT, SUM, MIN, MAX, AVG) with optional result names, and a Lance SQL filter.
 * Immutable; each method returns a copy.
 */
public final class AggregateSpec implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  /** LANCE_AGG_* values. */
  public static final int COUNT_STAR = 1, COUNT = 2, SUM = 3, MIN = 4, MAX = 5, AVG = 6, COUNT_DISTINCT = 7,
      APPROX_COUNT_DISTINCT = 8;

  final List<String> groupBy;
  /**
   * Per group key: a Lance SQL expression grouped by (the key's name in {@link #groupBy}), or
   * null for a column. Null when the spec was serialized before 0.15.
   */
  final List<String> groupExpressions;
  final List<Integer> functions;
  final List<String> columns;
  final List<String> aliases;
  /** Per aggregate: a Lance SQL expression aggregated instead of its column, or null. */
  final List<String> expressions;
  final String filter;
  /**
   * A serialized Substrait plan saying the whole spec ({@link #fromSubstrait}), or null. Null
   * too when the spec was serialized before 0.15.
   */
  final byte[] substraitPlan;

  private AggregateSpec(List<String> groupBy, List<String> groupExpressions, List<Integer> functions,
      List<String> columns, List<String> aliases, List<String> expressions, String filter) {
    this(groupBy, groupExpressions, functions, columns, aliases, expressions, filter, null);
  }

  private AggregateSpec(List<String> groupBy, List<String> groupExpressions, List<Integer> functions,
      List<String> columns, List<String> aliases, List<String> expressions, String filter, byte[] substraitPlan) {
    this.substraitPlan = substraitPlan;
    this.groupBy = groupBy;
    this.groupExpressions = groupExpressions;
    this.functions = functions;
    this.columns = columns;
    this.aliases = aliases;
    this.expressions = expressions;
    this.filter = filter;
  }

  /** An empty spec: no group-by columns, no aggregates (add at least one), no filter. */
  public static AggregateSpec create() {
    return new AggregateSpec(List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), null);
  }

  /**
   * The spec a serialized Substrait {@code Plan} says (LanceAggregateSpec.substrait_plan): its
   * root an {@code AggregateRel} with one grouping set over {@code ProjectRel}s and {@code
   * FilterRel}s over one {@code ReadRel} whose {@code base_schema} names the table's columns (its
   * named table is not looked up: the spec runs on the dataset it is given to). {@code
   * RelRoot.names} name the result columns. The plan is copied. A spec made here takes no group
   * keys, aggregates or filter besides (the library refuses them with {@link
   * LanceException.InvalidArgument}); a plan the translation does not take is {@link
   * LanceException.NotSupported} naming what it refused, bytes that are no plan {@link
   * LanceException.InvalidArgument}. Since 0.15.
   *
   * @param plan the serialized plan; not null or empty
   * @return the spec
   * @throws LanceException.InvalidArgument if {@code plan} is null or empty
   */
  public static AggregateSpec fromSubstrait(byte[] plan) {
    if (plan == null || plan.length == 0) {
      throw new LanceException.InvalidArgument("the Substrait plan is null or empty");
    }
    return new AggregateSpec(List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), null, plan.clone());
  }

  /**
   * Groups by these columns (scalar columns; NULL keys form their own group), replacing the keys
   * given before.
   */
  public AggregateSpec groupBy(String... cols) {
    List<String> none = new ArrayList<>();
    for (int i = 0; i < cols.length; i++) none.add(null);
    return new AggregateSpec(List.of(cols), none, functions, columns, aliases, expressions, filter, substraitPlan);
  }

  /**
   * Adds a group key computed by a Lance SQL expression of the row (e.g. {@code
   * groupByExpression("ship_year", "date_part('year', l_shipdate)")}), its result column named
   * `name`. Its type must be one a column key may have; integer arithmetic inside it is refused
   * ({@link LanceException.NotSupported}). Since 0.15.
   */
  public AggregateSpec groupByExpression(String name, String expression) {
    if (name == null) throw new LanceException.InvalidArgument("group key name is null");
    if (expression == null) throw new LanceException.InvalidArgument("group key expression is null");
    return withKey(name, expression);
  }

  /** This spec with one more group key: `name`, computed by `expression` (null: the column). */
  private AggregateSpec withKey(String name, String expression) {
    List<String> g = new ArrayList<>(groupBy);
    g.add(name);
    List<String> e = new ArrayList<>(keyExpressions());
    e.add(expression);
    return new AggregateSpec(g, e, functions, columns, aliases, expressions, filter, substraitPlan);
  }

  /**
   * Adds a group key that is column `column`, after the keys given so far (mixing column and
   * expression keys in their order). Since 0.15.
   */
  public AggregateSpec groupByColumn(String column) {
    if (column == null) throw new LanceException.InvalidArgument("group key column is null");
    return withKey(column, null);
  }

  /** One entry per group key (null: a column), also for a spec serialized before 0.15. */
  List<String> keyExpressions() {
    if (groupExpressions != null) return groupExpressions;
    List<String> none = new ArrayList<>();
    for (int i = 0; i < groupBy.size(); i++) none.add(null);
    return none;
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
    return new AggregateSpec(groupBy, groupExpressions, f, c, a, e, filter, substraitPlan);
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
    return new AggregateSpec(groupBy, groupExpressions, functions, columns, aliases, expressions, sql, substraitPlan);
  }

  int[] functionArray() {
    int[] out = new int[functions.size()];
    for (int i = 0; i < out.length; i++) out[i] = functions.get(i);
    return out;
  }
}
