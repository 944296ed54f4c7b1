package org.lancehost.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.Dataset;
import org.lancehost.LanceException;

/**
 * {@code spark.read.format("lance_host").load(uri)}: Lance tables through lance-host, read as
 * Arrow columnar batches, one input partition per split, with columns, filters, limits and
 * aggregates pushed down (see {@link Options} for the options).
 */
public final class LanceHostDataSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "lance_host";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    Options o = new Options(options, Options.ALL, "format(\"lance_host\")");
    try (Dataset ds = o.open()) {
      StructType table = SparkTypes.schema(ds.schema());
      return o.changesSince == null ? table : org.lancehost.spark.Table.withChangeColumns(table);
    }
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    Options o = new Options(properties, Options.ALL, "format(\"lance_host\")");
    Dataset ds;
    try {
      ds = o.open();
    } catch (LanceException.NotFound missing) {
      if (schema == null || o.version != 0 || o.timestampUs != null || o.branch != null || o.tag != null
          || o.changesSince != null) {
        throw missing;
      }
      return new org.lancehost.spark.Table(o, schema, o.requireUri()); // a write creates it
    }
    try {
      org.lancehost.spark.Table t = new org.lancehost.spark.Table(o, ds, o.requireUri());
      Cleaner.register(t, ds);
      if (schema != null && !sameColumns(schema, t.schema())) {
        throw new LanceException.InvalidArgument("the schema given, " + schema.simpleString()
            + ", is not the table's: " + t.schema().simpleString());
      }
      return t;
    } catch (RuntimeException e) {
      ds.close();
      throw e;
    }
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true; // a write's DataFrame schema creates a new table
  }

  /** A write's data may order columns differently; a read's given schema must be the table's. */
  private static boolean sameColumns(StructType given, StructType table) {
    if (given.fields().length != table.fields().length) return false;
    for (org.apache.spark.sql.types.StructField f : given.fields()) {
      int i;
      try {
        i = table.fieldIndex(f.name());
      } catch (IllegalArgumentException e) {
        return false;
      }
      if (!table.fields()[i].dataType().sameType(f.dataType())) return false;
    }
    return true;
  }
}
