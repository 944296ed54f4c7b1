package org.lancehost.spark;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark predicates to Lance SQL, exactly where the translation keeps Spark's meaning:
 * comparisons (=, <>, <, <=, >, >=, <=>), IN, IS [NOT] NULL, AND, OR and NOT over top-level
 * columns of integer, floating-point, string, boolean and date type, with literals of those types
 * (floating-point ones finite, dates of the years 1 to 9999, written {@code DATE 'yyyy-mm-dd'}). Order comparisons of floating-point columns are written with
 * {@code isnan} so that every NaN, whatever its sign bit, is above every number as in Spark.
 * Anything else returns null and stays in Spark.
 */
final class Filters {
  private Filters() {}

  private static final Set<String> COMPARISONS = Set.of("=", "<>", "<", "<=", ">", ">=");

  static String toSql(Predicate p, StructType schema) {
    String name = p.name();
    Expression[] c = p.children();
    switch (name) {
      case "ALWAYS_TRUE":
        return "true";
      case "ALWAYS_FALSE":
        return "false";
      case "AND":
      case "OR": {
        String l = toSql((Predicate) c[0], schema), r = toSql((Predicate) c[1], schema);
        return l == null || r == null ? null : "(" + l + ") " + name + " (" + r + ")";
      }
      case "NOT": {
        String inner = toSql((Predicate) c[0], schema);
        return inner == null ? null : "NOT (" + inner + ")";
      }
      case "IS_NULL":
      case "IS_NOT_NULL": {
        String col = column(c[0], schema);
        return col == null ? null : col + (name.equals("IS_NULL") ? " IS NULL" : " IS NOT NULL");
      }
      case "IN": {
        String col = column(c[0], schema);
        if (col == null || c.length < 2) return null;
        List<String> lits = new ArrayList<>();
        for (int i = 1; i < c.length; i++) {
          String l = literal(c[i]);
          if (l == null) return null;
          lits.add(l);
        }
        return col + " IN (" + String.join(", ", lits) + ")";
      }
      case "<=>": {
        String col = column(c[0], schema), lit = literal(c[1]);
        if (col == null || lit == null) return null; // a NULL literal is refused by literal()
        return "(" + col + " IS NOT NULL AND " + col + " = " + lit + ")";
      }
      default:
        if (!COMPARISONS.contains(name) || c.length != 2) return null;
        String col = column(c[0], schema), lit = literal(c[1]);
        if (col != null && lit != null) return compare(col, name, lit, floating(c[0], schema));
        col = column(c[1], schema);
        lit = literal(c[0]);
        if (col != null && lit != null) return compare(col, flipped(name), lit, floating(c[1], schema));
        return null;
    }
  }

  private static String flipped(String op) {
    switch (op) {
      case "<": return ">";
      case "<=": return ">=";
      case ">": return "<";
      case ">=": return "<=";
      default: return op; // = and <> are symmetric
    }
  }

  /**
   * {@code col op lit} with Spark's NaN semantics where Lance's differ. Spark treats every NaN
   * as one value above every number; Lance orders floats totally, so a NaN with its sign bit
   * set (what x86 gives for {@code 0/0} or {@code inf - inf}) sorts below -inf. With a finite
   * literal, {@code =} and {@code <>} agree; the order comparisons are written so that any NaN
   * is above the literal, whatever its sign bit.
   */
  private static String compare(String col, String op, String lit, boolean floating) {
    if (!floating || op.equals("=") || op.equals("<>")) return col + " " + op + " " + lit;
    if (op.startsWith(">")) return "(" + col + " " + op + " " + lit + " OR isnan(" + col + "))";
    return "(" + col + " " + op + " " + lit + " AND NOT isnan(" + col + "))";
  }

  private static boolean floating(Expression e, StructType schema) {
    String[] parts = ((NamedReference) e).fieldNames();
    DataType t = schema.fields()[schema.fieldIndex(parts[0])].dataType();
    return t.equals(DataTypes.FloatType) || t.equals(DataTypes.DoubleType);
  }

  private static boolean supported(DataType t) {
    return t.equals(DataTypes.ByteType) || t.equals(DataTypes.ShortType) || t.equals(DataTypes.IntegerType)
        || t.equals(DataTypes.LongType) || t.equals(DataTypes.FloatType) || t.equals(DataTypes.DoubleType)
        || t.equals(DataTypes.StringType) || t.equals(DataTypes.BooleanType) || t.equals(DataTypes.DateType);
  }

  /** A top-level column of a type Lance compares as Spark does (not unsigned), quoted; else null. */
  static String column(Expression e, StructType schema) {
    if (!(e instanceof NamedReference)) return null;
    String[] parts = ((NamedReference) e).fieldNames();
    if (parts.length != 1) return null; // nested fields stay in Spark
    int i;
    try {
      i = schema.fieldIndex(parts[0]);
    } catch (IllegalArgumentException notThere) {
      return null;
    }
    if (!supported(schema.fields()[i].dataType()) || SparkTypes.unsigned(schema.fields()[i])) return null;
    return "`" + parts[0].replace("`", "``") + "`";
  }

  private static String literal(Expression e) {
    if (!(e instanceof Literal)) return null;
    Object v = ((Literal<?>) e).value();
    DataType t = ((Literal<?>) e).dataType();
    if (v == null || !supported(t)) return null;
    if (t.equals(DataTypes.DateType)) {
      // days since the epoch; a year outside 1..9999 has no plain DATE literal: it stays in Spark
      if (!(v instanceof Integer)) return null;
      LocalDate day = LocalDate.ofEpochDay((Integer) v);
      if (day.getYear() < 1 || day.getYear() > 9999) return null;
      return "DATE '" + day + "'";
    }
    if (v instanceof Boolean) return ((Boolean) v) ? "true" : "false";
    if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) return v.toString();
    if (v instanceof Float || v instanceof Double) {
      double d = ((Number) v).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) return null;
      // The shortest text that reads back as the same double (a float literal widened first, as
      // Spark compares), in plain notation with a decimal point so it parses as a float: 1.0E-5
      // is 0.00001 (as the Python translation writes it; tests/filters/spark_filters.json).
      String plain = new BigDecimal(Double.toString(d)).stripTrailingZeros().toPlainString();
      return plain.contains(".") ? plain : plain + ".0";
    }
    if (v instanceof UTF8String || v instanceof String) {
      String text = v.toString();
      // Lance refuses a filter with a NUL character: such a literal stays in Spark
      if (text.indexOf('\0') >= 0) return null;
      return "'" + text.replace("'", "''") + "'";
    }
    return null;
  }
}
