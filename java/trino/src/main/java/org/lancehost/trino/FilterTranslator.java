package org.lancehost.trino;

import io.airlift.slice.Slice;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.predicate.Domain;
import io.trino.spi.predicate.Range;
import io.trino.spi.predicate.TupleDomain;
import io.trino.spi.predicate.ValueSet;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DateType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.Int128;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarcharType;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Trino's constraint (a TupleDomain) to Lance SQL, exactly where Lance compares as Trino does:
 * columns of integer, boolean, varchar, date and decimal type; ranges, single values and
 * IS [NOT] NULL. Floating-point columns (NaN and -0.0 compare differently), timestamps, binary
 * and arrays are left to Trino, as is a string literal with a NUL character. What translates is
 * enforced by the scans; the rest is returned as Trino's remaining filter.
 */
final class FilterTranslator {
  private FilterTranslator() {}

  /** Lance SQL for the translated part (null = nothing) and the part Trino keeps. */
  record Result(String sql, TupleDomain<ColumnHandle> remaining) {}

  static Result translate(TupleDomain<ColumnHandle> summary) {
    if (summary.isNone() || summary.getDomains().isEmpty()) {
      return new Result(null, summary);
    }
    List<String> parts = new ArrayList<>();
    Map<ColumnHandle, Domain> remaining = new LinkedHashMap<>();
    for (Map.Entry<ColumnHandle, Domain> e : summary.getDomains().get().entrySet()) {
      LanceHostColumnHandle c = (LanceHostColumnHandle) e.getKey();
      String sql = domain(quote(c.name()), c.type(), e.getValue());
      if (sql == null) {
        remaining.put(e.getKey(), e.getValue());
      } else {
        parts.add(sql);
      }
    }
    String sql = parts.isEmpty() ? null : String.join(" AND ", parts);
    return new Result(sql, TupleDomain.withColumnDomains(remaining));
  }

  static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }

  /** Whether Lance sorts values of `t` in Trino's order (used for pushed top-n). */
  static boolean ordersAsTrino(Type t) {
    return supported(t);
  }

  private static boolean supported(Type t) {
    return t instanceof BigintType || t instanceof IntegerType || t instanceof SmallintType || t instanceof TinyintType
        || t instanceof BooleanType || t instanceof VarcharType || t instanceof DateType || t instanceof DecimalType;
  }

  private static String domain(String col, Type type, Domain d) {
    if (!supported(type)) return null;
    ValueSet values = d.getValues();
    boolean nulls = d.isNullAllowed();
    if (values.isNone()) return nulls ? col + " IS NULL" : "false";
    if (values.isAll()) return nulls ? null : col + " IS NOT NULL";
    List<String> singles = new ArrayList<>();
    List<String> ranges = new ArrayList<>();
    for (Range r : values.getRanges().getOrderedRanges()) {
      if (r.isSingleValue()) {
        String lit = literal(type, r.getSingleValue());
        if (lit == null) return null;
        singles.add(lit);
        continue;
      }
      List<String> bounds = new ArrayList<>();
      if (!r.isLowUnbounded()) {
        String lit = literal(type, r.getLowBoundedValue());
        if (lit == null) return null;
        bounds.add(col + (r.isLowInclusive() ? " >= " : " > ") + lit);
      }
      if (!r.isHighUnbounded()) {
        String lit = literal(type, r.getHighBoundedValue());
        if (lit == null) return null;
        bounds.add(col + (r.isHighInclusive() ? " <= " : " < ") + lit);
      }
      // an unbounded range on both sides is every non-null value
      ranges.add(bounds.isEmpty() ? col + " IS NOT NULL" : "(" + String.join(" AND ", bounds) + ")");
    }
    List<String> any = new ArrayList<>();
    if (singles.size() == 1) any.add(col + " = " + singles.get(0));
    if (singles.size() > 1) any.add(col + " IN (" + String.join(", ", singles) + ")");
    any.addAll(ranges);
    if (nulls) any.add(col + " IS NULL");
    return any.size() == 1 ? any.get(0) : "(" + String.join(" OR ", any) + ")";
  }

  /** Lance SQL for a value of `type` (null when the type or value does not translate exactly). */
  static String literal(Type type, Object value) {
    if (type instanceof BooleanType) return ((Boolean) value) ? "true" : "false";
    if (type instanceof BigintType || type instanceof IntegerType || type instanceof SmallintType
        || type instanceof TinyintType) {
      return Long.toString((Long) value);
    }
    if (type instanceof DateType) {
      return "DATE '" + LocalDate.ofEpochDay((Long) value) + "'";
    }
    if (type instanceof DecimalType d) {
      BigInteger unscaled = d.isShort() ? BigInteger.valueOf((Long) value) : ((Int128) value).toBigInteger();
      BigDecimal v = new BigDecimal(unscaled, d.getScale());
      // from text: a numeric literal would be read as a double first and lose digits
      return "CAST('" + v.toPlainString() + "' AS DECIMAL(" + d.getPrecision() + ", " + d.getScale() + "))";
    }
    if (type instanceof VarcharType) {
      Slice slice = (Slice) value;
      String text = slice.toStringUtf8();
      // a NUL ends the library's filter text; bytes that are not UTF-8 would not read back
      if (text.indexOf('\0') >= 0 || !java.util.Arrays.equals(text.getBytes(java.nio.charset.StandardCharsets.UTF_8),
          slice.getBytes())) {
        return null;
      }
      return "'" + text.replace("'", "''") + "'";
    }
    return null;
  }
}
