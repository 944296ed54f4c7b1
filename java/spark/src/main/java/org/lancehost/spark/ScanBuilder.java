package org.lancehost.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Avg;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.aggregate.Sum;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownTopN;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.lancehost.AggregateSpec;

/**
 * Pushdowns of one query: the columns it reads, the predicates Lance evaluates exactly, a limit,
 * and aggregates Lance computes completely (COUNT(*), COUNT, SUM, MIN, MAX, AVG with GROUP BY
 * over plain columns, where Lance's result is Spark's). One builder per query: nothing pushed
 * here outlives it.
 */
final class ScanBuilder implements org.apache.spark.sql.connector.read.ScanBuilder, SupportsPushDownRequiredColumns,
    SupportsPushDownV2Filters, SupportsPushDownLimit, SupportsPushDownTopN, SupportsPushDownAggregates {
  private final Table table;
  private StructType required;
  private final List<Predicate> pushed = new ArrayList<>();
  private final List<String> pushedSql = new ArrayList<>();
  private long limit = -1;
  private String orderBy;
  private String orderText;
  private boolean allPushed = true;
  private AggregatePlan aggregate;

  ScanBuilder(Table table) {
    this.table = table;
    this.required = table.schema();
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    // Whole top-level columns: Spark may pass a struct with only some of its fields, but the
    // scan returns the column as stored, so the read schema is the table's type of each column.
    List<StructField> fs = new ArrayList<>();
    StructType full = table.schema();
    for (String name : requiredSchema.fieldNames()) {
      if (name.equals(RowLevel.ROW_ADDR) && !java.util.Arrays.asList(full.fieldNames()).contains(name)) {
        fs.add(new StructField(name, DataTypes.LongType, false, Metadata.empty())); // the metadata column
      } else {
        fs.add(full.fields()[full.fieldIndex(name)]);
      }
    }
    required = new StructType(fs.toArray(new StructField[0]));
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] predicates) {
    if (table.readsChanges()) return predicates; // Spark filters the changes (deleted rows are read as they were)
    List<Predicate> rest = new ArrayList<>();
    for (Predicate p : predicates) {
      String sql = Filters.toSql(p, table.schema());
      if (sql == null) {
        rest.add(p);
        allPushed = false;
      } else {
        pushed.add(p);
        pushedSql.add(sql);
      }
    }
    return rest.toArray(new Predicate[0]);
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed.toArray(new Predicate[0]);
  }

  @Override
  public boolean pushLimit(int n) {
    if (table.readsChanges()) return false;
    limit = n;
    return true;
  }

  @Override
  public boolean isPartiallyPushed() {
    return true; // each split stops at the limit (its top n); Spark keeps the global one
  }

  /**
   * ORDER BY ... LIMIT n: each split returns its own top n, sorted by Lance; Spark sorts the
   * splits' rows and keeps the global top n. Pushed only over plain columns Lance orders as Spark
   * does (integers, strings, booleans and dates; not floating point, where Lance orders a NaN with its
   * sign bit set below every number and Spark above), and only when every predicate was pushed
   * (a split's top n must be of the rows Spark keeps).
   */
  @Override
  public boolean pushTopN(SortOrder[] orders, int n) {
    if (!allPushed || aggregate != null || orders.length == 0 || table.readsChanges()) return false;
    List<String> keys = new ArrayList<>();
    List<String> text = new ArrayList<>();
    for (SortOrder o : orders) {
      String col = Filters.column(o.expression(), table.schema());
      if (col == null || col.substring(1, col.length() - 1).contains("`")) return false;
      // Lance orders a NaN with its sign bit set below -inf, Spark every NaN above every number
      if (floatingColumn(col.substring(1, col.length() - 1))) return false;
      String dir = o.direction() == SortDirection.ASCENDING ? "ASC" : "DESC";
      String nulls = o.nullOrdering() == NullOrdering.NULLS_FIRST ? "NULLS FIRST" : "NULLS LAST";
      keys.add(col + " " + dir + " " + nulls);
      text.add(col.substring(1, col.length() - 1) + " " + dir + " " + nulls);
    }
    orderBy = String.join(", ", keys);
    orderText = String.join(", ", text);
    limit = n;
    return true;
  }

  private boolean floatingColumn(String name) {
    org.apache.spark.sql.types.DataType t = table.schema().apply(name).dataType();
    return t.equals(org.apache.spark.sql.types.DataTypes.FloatType)
        || t.equals(org.apache.spark.sql.types.DataTypes.DoubleType);
  }

  @Override
  public boolean supportCompletePushDown(Aggregation agg) {
    return !table.readsChanges() && plan(agg) != null;
  }

  @Override
  public boolean pushAggregation(Aggregation agg) {
    if (table.readsChanges()) return false;
    aggregate = plan(agg);
    return aggregate != null;
  }

  /** The pinned version's rows (from its manifest, read once per scan builder); -1 before. */
  private long liveRows = -1;

  /**
   * Whether a SUM of a column of type `t` stays within int64 whatever the rows hold: a TINYINT,
   * SMALLINT or INT value is at most 2^31 in magnitude, so the sum of fewer than 2^32 rows is
   * below 2^63. Spark's wrapping sum (without ANSI mode) and the library's checked sum then
   * agree on every table of that size. A BIGINT sum can overflow: false.
   */
  private boolean sumCannotOverflow(DataType t) {
    if (!t.equals(DataTypes.ByteType) && !t.equals(DataTypes.ShortType) && !t.equals(DataTypes.IntegerType)) {
      return false;
    }
    if (liveRows < 0) liveRows = table.dataset().countRows();
    return liveRows < (1L << 32);
  }

  /** The aggregate Lance computes with Spark's result types, or null when it is not exactly Spark's. */
  private AggregatePlan plan(Aggregation agg) {
    // Grouping alone (what SELECT DISTINCT or a count over groups asks) is left to Spark: the
    // library's aggregates need at least one function.
    if (agg.aggregateExpressions().length == 0) return null;
    StructType schema = table.schema();
    List<StructField> out = new ArrayList<>();
    AggregateSpec spec = AggregateSpec.create();
    int k = 0;
    for (Expression g : agg.groupByExpressions()) {
      String col = plainColumn(g);
      if (col == null) {
        // a date part of a DATE column: an INT both compute from the calendar date
        String sql = datePartKey(g);
        if (sql == null) return null;
        String name = "__lh_group_" + k++;
        spec = spec.groupByExpression(name, sql);
        out.add(new StructField(name, DataTypes.IntegerType, true, Metadata.empty()));
        continue;
      }
      k++;
      DataType t = schema.fields()[schema.fieldIndex(col)].dataType();
      if (!groupable(t)) return null;
      spec = spec.groupByColumn(col);
      out.add(new StructField(col, t, true, Metadata.empty()));
    }
    int i = 0;
    for (AggregateFunc f : agg.aggregateExpressions()) {
      String alias = "agg_" + i++;
      if (f instanceof CountStar) {
        spec = spec.countStar(alias);
        out.add(new StructField(alias, DataTypes.LongType, false, Metadata.empty()));
        continue;
      }
      Expression arg;
      int fn;
      boolean distinct = false;
      if (f instanceof Count) {
        arg = ((Count) f).column();
        // COUNT(DISTINCT col): exact in the library across splits, NaN and -0.0 counted as
        // Spark normalizes them
        fn = ((Count) f).isDistinct() ? AggregateSpec.COUNT_DISTINCT : AggregateSpec.COUNT;
      } else if (f instanceof Sum) {
        arg = ((Sum) f).column();
        distinct = ((Sum) f).isDistinct();
        fn = AggregateSpec.SUM;
      } else if (f instanceof Avg) {
        arg = ((Avg) f).column();
        distinct = ((Avg) f).isDistinct();
        fn = AggregateSpec.AVG;
      } else if (f instanceof Min) {
        arg = ((Min) f).column();
        fn = AggregateSpec.MIN;
      } else if (f instanceof Max) {
        arg = ((Max) f).column();
        fn = AggregateSpec.MAX;
      } else {
        return null;
      }
      if (distinct) return null;
      String col = plainColumn(arg);
      if (col == null) {
        // an arithmetic expression over double columns: the same IEEE operations in Lance
        String sql = doubleExpression(arg);
        if (sql == null || fn == AggregateSpec.COUNT || fn == AggregateSpec.COUNT_DISTINCT) return null;
        DataType result = resultType(fn, DataTypes.DoubleType);
        if (result == null) return null;
        spec = spec.addExpression(fn, sql, alias);
        out.add(new StructField(alias, result, true, Metadata.empty()));
        continue;
      }
      DataType t = schema.fields()[schema.fieldIndex(col)].dataType();
      DataType result = resultType(fn, t);
      if (result == null) return null;
      // An integer SUM past int64 is an error in the library (never a wrapped value) and in
      // Spark with ANSI mode; without it Spark wraps, so the sum is left to Spark unless it
      // cannot overflow at all.
      if (fn == AggregateSpec.SUM && integral(t) && !org.apache.spark.sql.internal.SQLConf.get().ansiEnabled()
          && !sumCannotOverflow(t)) {
        return null;
      }
      spec = spec.add(fn, col, alias);
      out.add(new StructField(alias, result, fn != AggregateSpec.COUNT && fn != AggregateSpec.COUNT_DISTINCT,
          Metadata.empty()));
    }
    return new AggregatePlan(spec, new StructType(out.toArray(new StructField[0])), describe(agg));
  }

  /**
   * Lance SQL for a Spark group key that extracts the YEAR, QUARTER, MONTH or DAY of a DATE
   * column ({@code year(d)}, {@code quarter(d)}, {@code month(d)}, {@code dayofmonth(d)}), or null.
   * Both sides compute it as an INT from the proleptic Gregorian date (NULL for a NULL date);
   * other parts (day of week, week of year: other numbering conventions) and other expressions
   * are left to Spark.
   */
  private String datePartKey(Expression e) {
    if (!(e instanceof org.apache.spark.sql.connector.expressions.Extract)) return null;
    org.apache.spark.sql.connector.expressions.Extract x = (org.apache.spark.sql.connector.expressions.Extract) e;
    String part;
    switch (x.field().toUpperCase(java.util.Locale.ROOT)) {
      case "YEAR": part = "year"; break;
      case "QUARTER": part = "quarter"; break;
      case "MONTH": part = "month"; break;
      case "DAY": part = "day"; break;
      default: return null;
    }
    String col = plainColumn(x.source());
    if (col == null || !table.schema().fields()[table.schema().fieldIndex(col)].dataType().equals(DataTypes.DateType)) {
      return null;
    }
    return "CAST(date_part('" + part + "', `" + col.replace("`", "``") + "`) AS INT)";
  }

  private static String describe(Aggregation agg) {
    List<String> f = new ArrayList<>();
    for (AggregateFunc a : agg.aggregateExpressions()) f.add(a.toString());
    List<String> g = new ArrayList<>();
    for (Expression e : agg.groupByExpressions()) g.add(e.toString());
    return "[" + String.join(", ", f) + "] GroupBy: [" + String.join(", ", g) + "]";
  }

  private static boolean integral(DataType t) {
    return t.equals(DataTypes.ByteType) || t.equals(DataTypes.ShortType) || t.equals(DataTypes.IntegerType)
        || t.equals(DataTypes.LongType);
  }

  private static boolean groupable(DataType t) {
    return integral(t) || t.equals(DataTypes.StringType) || t.equals(DataTypes.BooleanType)
        || t.equals(DataTypes.DateType) || t.equals(DataTypes.BinaryType);
  }

  /**
   * Spark's result type where Lance's result equals Spark's, else null. Left to Spark: float and
   * double MAX (Spark orders NaN above every number, Lance's MAX skips NaN), decimal SUM/AVG
   * (Spark widens the precision), timestamps, and any other type.
   */
  private static DataType resultType(int fn, DataType t) {
    boolean floating = t.equals(DataTypes.FloatType) || t.equals(DataTypes.DoubleType);
    switch (fn) {
      case AggregateSpec.COUNT:
        return DataTypes.LongType;
      case AggregateSpec.COUNT_DISTINCT:
        return groupable(t) || floating ? DataTypes.LongType : null;
      case AggregateSpec.SUM:
        return integral(t) ? DataTypes.LongType : floating ? DataTypes.DoubleType : null;
      case AggregateSpec.AVG:
        return integral(t) || floating ? DataTypes.DoubleType : null;
      case AggregateSpec.MIN:
        return integral(t) || floating || t.equals(DataTypes.StringType) || t.equals(DataTypes.DateType)
            || t.equals(DataTypes.BooleanType) ? t : null;
      case AggregateSpec.MAX:
        return integral(t) || t.equals(DataTypes.StringType) || t.equals(DataTypes.DateType)
            || t.equals(DataTypes.BooleanType) ? t : null;
      default:
        return null;
    }
  }

  /**
   * Lance SQL for a Spark expression that is +, - (binary or unary) and * over DOUBLE columns and
   * finite double literals, or null. Only those: Spark computes them in IEEE doubles as DataFusion
   * does, row by row (division differs — Spark gives NULL or an error for a zero divisor, Lance
   * infinity — and integer or decimal arithmetic follows other typing rules), so the pushed
   * aggregate sees the values Spark's own would.
   */
  private String doubleExpression(Expression e) {
    if (e instanceof NamedReference) {
      String col = plainColumn(e);
      if (col == null || !table.schema().fields()[table.schema().fieldIndex(col)].dataType().equals(DataTypes.DoubleType)) {
        return null;
      }
      return "`" + col.replace("`", "``") + "`";
    }
    if (e instanceof org.apache.spark.sql.connector.expressions.Literal) {
      org.apache.spark.sql.connector.expressions.Literal<?> l = (org.apache.spark.sql.connector.expressions.Literal<?>) e;
      if (!l.dataType().equals(DataTypes.DoubleType) || !(l.value() instanceof Double)) return null;
      double v = (Double) l.value();
      if (!Double.isFinite(v)) return null;
      // a negative literal as a unary minus: Lance's parser reads "-1.5" after an operator too, but
      // parentheses keep "a - -1.5" unambiguous
      return v < 0 || (v == 0 && 1 / v < 0) ? "(-" + Double.toString(-v) + ")" : Double.toString(v);
    }
    if (e instanceof org.apache.spark.sql.connector.expressions.GeneralScalarExpression) {
      org.apache.spark.sql.connector.expressions.GeneralScalarExpression g =
          (org.apache.spark.sql.connector.expressions.GeneralScalarExpression) e;
      Expression[] c = g.children();
      String op = g.name();
      if (c.length == 1 && op.equals("-")) {
        String x = doubleExpression(c[0]);
        return x == null ? null : "(-" + x + ")";
      }
      if (c.length == 2 && (op.equals("+") || op.equals("-") || op.equals("*"))) {
        String a = doubleExpression(c[0]);
        String b = doubleExpression(c[1]);
        return a == null || b == null ? null : "(" + a + " " + op + " " + b + ")";
      }
    }
    return null;
  }

  private String plainColumn(Expression e) {
    if (!(e instanceof NamedReference)) return null;
    String[] parts = ((NamedReference) e).fieldNames();
    if (parts.length != 1 || !Arrays.asList(table.schema().fieldNames()).contains(parts[0])) return null;
    if (SparkTypes.unsigned(table.schema().fields()[table.schema().fieldIndex(parts[0])])) return null;
    return parts[0];
  }

  @Override
  public Scan build() {
    return new LanceScan(table, required, pushedSql, limit, orderBy, orderText, aggregate);
  }

  /** An aggregate pushed completely: Lance's spec and the rows' Spark schema. */
  static final class AggregatePlan implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final AggregateSpec spec;
    final StructType schema;
    final String description;

    AggregatePlan(AggregateSpec spec, StructType schema, String description) {
      this.spec = spec;
      this.schema = schema;
      this.description = description;
    }
  }
}
