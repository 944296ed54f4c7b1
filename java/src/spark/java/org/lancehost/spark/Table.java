package org.lancehost.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.lancehost.LanceException;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.Dataset;

/**
 * A Lance table as Spark sees it, pinned at the snapshot it was opened at: every scan built from
 * it plans on that snapshot, so a query's partitions and its schema agree.
 */
final class Table implements SupportsRead, SupportsWrite, SupportsDeleteV2, SupportsRowLevelOperations,
    SupportsMetadataColumns {
  final Options options;
  private final Dataset dataset;
  private final StructType schema;
  private final String name;

  /** An existing table pinned at `dataset`'s version. */
  Table(Options options, Dataset dataset, String name) {
    this.options = options;
    this.dataset = dataset;
    this.schema = options.changesSince == null ? SparkTypes.schema(dataset.schema())
        : withChangeColumns(SparkTypes.schema(dataset.schema()));
    this.name = name;
  }

  /** The columns a change split returns after the table's. */
  static final String[] CHANGE_COLUMNS = {"_rowid", "_row_created_at_version", "_row_last_updated_at_version",
      "_change_type"};

  static StructType withChangeColumns(StructType table) {
    StructType s = table;
    for (String c : CHANGE_COLUMNS) {
      s = s.add(c, c.equals("_change_type") ? org.apache.spark.sql.types.DataTypes.StringType
          : org.apache.spark.sql.types.DataTypes.LongType, !c.equals("_rowid") && !c.equals("_change_type"));
    }
    return s;
  }

  boolean readsChanges() {
    return options.changesSince != null;
  }

  /** A table that does not exist yet: only writable (the first write creates it). */
  Table(Options options, StructType schema, String name) {
    this.options = options;
    this.dataset = null;
    this.schema = schema;
    this.name = name;
  }

  boolean exists() {
    return dataset != null;
  }

  Dataset dataset() {
    if (dataset == null) throw new LanceException.NotFound("table " + name + " does not exist");
    return dataset;
  }

  long pinnedVersion() {
    return dataset().version();
  }

  byte[] snapshot() {
    return dataset().snapshot();
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
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new Builder(info);
  }

  /** Append, or overwrite after truncate(); the query id is the commit's statement id. */
  private final class Builder implements WriteBuilder, SupportsTruncate {
    private final LogicalWriteInfo info;
    private boolean overwrite;

    Builder(LogicalWriteInfo info) {
      this.info = info;
    }

    @Override
    public WriteBuilder truncate() {
      overwrite = true;
      return this;
    }

    @Override
    public Write build() {
      return new Write() {
        @Override
        public BatchWrite toBatch() {
          StructType data = info.schema();
          int mode;
          org.apache.arrow.vector.types.pojo.Schema target;
          byte[] token = null;
          if (dataset != null) {
            mode = overwrite ? org.lancehost.Write.OVERWRITE : org.lancehost.Write.APPEND;
            target = dataset.schema();
            if (overwrite && !fits(data, target)) target = RowsToArrow.arrowSchema(data, options.vectorColumns());
            token = dataset.snapshot();
          } else {
            mode = org.lancehost.Write.CREATE;
            target = RowsToArrow.arrowSchema(data, options.vectorColumns());
          }
          return new BatchWriter(options.requireUri(), mode, token, target, data, options.storage, info.queryId(),
              options.all.get("commit_message"), options.maxRowsPerFile);
        }

        @Override
        public String description() {
          return "lance_host write to " + name;
        }
      };
    }
  }

  /** Whether rows of `data` write into `target` as they are (an overwrite then keeps the table's types). */
  private static boolean fits(StructType data, org.apache.arrow.vector.types.pojo.Schema target) {
    try {
      new RowsToArrow(data, target).close();
      return true;
    } catch (LanceException e) {
      return false;
    }
  }

  /** DELETE FROM ... WHERE: Lance deletes when every predicate translates exactly. */
  @Override
  public boolean canDeleteWhere(Predicate[] predicates) {
    return deleteSql(predicates) != null;
  }

  /** One new version planned at the pinned snapshot (a concurrent change Lance cannot rebase over is a conflict). */
  @Override
  public void deleteWhere(Predicate[] predicates) {
    String sql = deleteSql(predicates);
    if (sql == null) throw new LanceException.NotSupported("the DELETE condition does not translate to Lance SQL exactly");
    dataset().delete(sql);
  }

  private String deleteSql(Predicate[] predicates) {
    if (dataset == null) return null;
    StringBuilder b = new StringBuilder();
    for (Predicate p : predicates) {
      String s = Filters.toSql(p, schema);
      if (s == null) return null;
      b.append(b.length() == 0 ? "" : " AND ").append('(').append(s).append(')');
    }
    return b.length() == 0 ? "true" : b.toString();
  }

  /**
   * UPDATE, MERGE INTO, and DELETE whose condition does not translate: rows read with their
   * {@code _rowaddr} at the pinned snapshot, changed as one new version ({@link RowLevel}).
   */
  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    dataset(); // a table that does not exist has no rows to change
    return () -> new RowLevel(this, info.command());
  }

  /** {@code _rowaddr}: where a row is stored in the pinned version (fragment id << 32 | row offset). */
  @Override
  public MetadataColumn[] metadataColumns() {
    return new MetadataColumn[] {new MetadataColumn() {
      @Override
      public String name() {
        return RowLevel.ROW_ADDR;
      }

      @Override
      public DataType dataType() {
        return DataTypes.LongType;
      }

      @Override
      public boolean isNullable() {
        return false;
      }

      @Override
      public String comment() {
        return "the row's address in the pinned version: fragment id << 32 | row offset";
      }
    }};
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap readOptions) {
    // Options given at read time were already checked by the provider (they are the same map).
    return new org.lancehost.spark.ScanBuilder(this);
  }
}
