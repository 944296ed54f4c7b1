package org.lancehost.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.Dataset;

/**
 * A Lance table as Spark sees it, pinned at the snapshot it was opened at: every scan built from
 * it plans on that snapshot, so a query's partitions and its schema agree.
 */
final class Table implements SupportsRead {
  final Options options;
  private final Dataset dataset;
  private final StructType schema;
  private final String name;

  Table(Options options, Dataset dataset, String name) {
    this.options = options;
    this.dataset = dataset;
    this.schema = SparkTypes.schema(dataset.schema());
    this.name = name;
  }

  Dataset dataset() {
    return dataset;
  }

  long pinnedVersion() {
    return dataset.version();
  }

  byte[] snapshot() {
    return dataset.snapshot();
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap readOptions) {
    // Options given at read time were already checked by the provider (they are the same map).
    return new org.lancehost.spark.ScanBuilder(this);
  }
}
