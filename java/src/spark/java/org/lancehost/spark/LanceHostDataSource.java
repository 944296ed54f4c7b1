package org.lancehost.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.Dataset;

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
    Options o = new Options(options, Options.READ, "format(\"lance_host\")");
    try (Dataset ds = o.open()) {
      return SparkTypes.schema(ds.schema());
    }
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    Options o = new Options(properties, Options.READ, "format(\"lance_host\")");
    Dataset ds = o.open();
    try {
      org.lancehost.spark.Table t = new org.lancehost.spark.Table(o, ds, o.requireUri());
      Cleaner.register(t, ds);
      return t;
    } catch (RuntimeException e) {
      ds.close();
      throw e;
    }
  }

  @Override
  public boolean supportsExternalMetadata() {
    return false;
  }
}
