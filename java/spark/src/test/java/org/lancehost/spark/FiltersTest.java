package org.lancehost.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/**
 * Filters.java against the table both Spark translations share (issue 59):
 * {@code tests/filters/spark_filters.json} holds Spark filters and the Lance SQL to write for
 * each (null: stays in Spark). The Python test of the same table checks every SQL there through
 * pylance against Spark's semantics, and pyspark's filters through the Python translation.
 */
class FiltersTest {
  private static final Map<String, String> NAMES = Map.ofEntries(
      Map.entry("=", "="), Map.entry("<>", "<>"), Map.entry("<", "<"), Map.entry("<=", "<="),
      Map.entry(">", ">"), Map.entry(">=", ">="), Map.entry("<=>", "<=>"), Map.entry("in", "IN"),
      Map.entry("is_null", "IS_NULL"), Map.entry("is_not_null", "IS_NOT_NULL"), Map.entry("not", "NOT"),
      Map.entry("and", "AND"), Map.entry("or", "OR"), Map.entry("starts_with", "STARTS_WITH"));

  private static JsonNode table() throws Exception {
    File f = new File(System.getProperty("lancehost.test.root"), "tests/filters/spark_filters.json");
    return new ObjectMapper().readTree(f);
  }

  private static StructType schema(JsonNode t) {
    List<StructField> fields = new ArrayList<>();
    Iterator<Map.Entry<String, JsonNode>> it = t.get("schema").fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      DataType type;
      switch (e.getValue().asText()) {
        case "long": type = DataTypes.LongType; break;
        case "int": type = DataTypes.IntegerType; break;
        case "double": type = DataTypes.DoubleType; break;
        case "float": type = DataTypes.FloatType; break;
        case "string": type = DataTypes.StringType; break;
        case "boolean": type = DataTypes.BooleanType; break;
        case "date": type = DataTypes.DateType; break;
        default: throw new IllegalArgumentException(e.getValue().asText());
      }
      fields.add(DataTypes.createStructField(e.getKey(), type, true));
    }
    return DataTypes.createStructType(fields);
  }

  /** The literal Spark pushes for the column: of the column's type (its JSON kind for a nested one). */
  private static Expression literal(String column, JsonNode v, StructType schema) {
    DataType type = List.of(schema.fieldNames()).contains(column) ? schema.apply(column).dataType()
        : v.isTextual() ? DataTypes.StringType : v.isBoolean() ? DataTypes.BooleanType
        : v.isIntegralNumber() ? DataTypes.LongType : DataTypes.DoubleType;
    Object value;
    if (type.equals(DataTypes.DoubleType)) value = v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
    else if (type.equals(DataTypes.FloatType)) value = (float) (v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble());
    else if (type.equals(DataTypes.IntegerType)) value = v.asInt();
    else if (type.equals(DataTypes.LongType)) value = v.asLong();
    else if (type.equals(DataTypes.BooleanType)) value = v.asBoolean();
    else if (type.equals(DataTypes.DateType)) value = (int) java.time.LocalDate.parse(v.asText()).toEpochDay();
    else value = UTF8String.fromString(v.asText());
    return new LiteralValue<>(value, type);
  }

  private static Predicate predicate(JsonNode f, boolean literalFirst, StructType schema) {
    String op = f.get(0).asText();
    String name = NAMES.get(op);
    switch (op) {
      case "not":
        return new Predicate(name, new Expression[] {predicate(f.get(1), false, schema)});
      case "and":
      case "or":
        return new Predicate(name, new Expression[] {predicate(f.get(1), false, schema), predicate(f.get(2), false, schema)});
      case "is_null":
      case "is_not_null":
        return new Predicate(name, new Expression[] {Expressions.column(f.get(1).asText())});
      case "in": {
        String column = f.get(1).asText();
        List<Expression> children = new ArrayList<>();
        children.add(Expressions.column(column));
        for (JsonNode v : f.get(2)) children.add(literal(column, v, schema));
        return new Predicate(name, children.toArray(new Expression[0]));
      }
      default: {
        String column = f.get(1).asText();
        Expression col = Expressions.column(column), lit = literal(column, f.get(2), schema);
        return new Predicate(name, literalFirst ? new Expression[] {lit, col} : new Expression[] {col, lit});
      }
    }
  }

  @Test
  void everyCaseOfTheSharedTableTranslatesToItsSql() throws Exception {
    JsonNode t = table();
    StructType schema = schema(t);
    int checked = 0;
    List<String> wrong = new ArrayList<>();
    for (JsonNode c : t.get("cases")) {
      Predicate p = predicate(c.get("filter"), c.path("literal_first").asBoolean(false), schema);
      String want = c.get("sql").isNull() ? null : c.get("sql").asText();
      String got = Filters.toSql(p, schema);
      if (want == null ? got != null : !want.equals(got)) wrong.add(c.get("filter") + ": want " + want + ", got " + got);
      checked++;
    }
    assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    assertEquals(t.get("cases").size(), checked);
    assertTrue(checked >= 30, "cases: " + checked);
  }
}
