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
          return new BatchWriter(options.requireUri(), mode, token, target, data, options.storage, options.catalogTable,
              info.queryId(),
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
    // format("lance_host") hands the provider's options again (already applied); a catalog
    // table gets the query's own: `WITH (version = 1)`, `spark.read.option(...).table(...)`.
    java.util.Map<String, String> extra = new java.util.HashMap<>();
    for (java.util.Map.Entry<String, String> e : readOptions.entrySet()) {
      String k = e.getKey().toLowerCase(java.util.Locale.ROOT);
      if (!e.getValue().equals(options.all.get(k))) extra.put(k, e.getValue());
    }
    if (extra.isEmpty() || dataset == null) return new org.lancehost.spark.ScanBuilder(this);
    return new org.lancehost.spark.ScanBuilder(withReadOptions(extra));
  }

  /** Options that choose the snapshot: a read that gives one reads another version. */
  private static final java.util.List<String> SNAPSHOT_OPTIONS =
      java.util.List.of("version", "timestamp_ms", "timestamp_us", "branch", "tag", "changes_since");

  /** Kept reachable by a table derived from it (it owns the dataset they share). */
  private Table parent;

  /**
   * This table read with the query's options `extra`: checked as format("lance_host")'s are (an
   * unknown option is an error naming the closest, two snapshots are an error), never ignored.
   * A snapshot option reads the version it names, if that version has the columns Spark
   * resolved the query with (else an error: use VERSION AS OF).
   */
  private Table withReadOptions(java.util.Map<String, String> extra) {
    for (String k : extra.keySet()) {
      if (!SNAPSHOT_OPTIONS.contains(k)) continue;
      for (String pinned : SNAPSHOT_OPTIONS) {
        if (options.all.containsKey(pinned)) {
          throw new LanceException.InvalidArgument("table " + name + " is pinned by its query (VERSION AS OF, TIMESTAMP AS OF, "
              + "a branch or a tag: " + pinned + ") and read option " + k + " names another snapshot: give one");
        }
      }
    }
    java.util.Map<String, String> m = new java.util.HashMap<>(options.all);
    m.putAll(extra);
    Options o = new Options(m, Options.READ, "a read of table " + name);
    boolean repin = false;
    for (String k : extra.keySet()) repin |= SNAPSHOT_OPTIONS.contains(k);
    if (!repin) {
      Table t = new Table(o, dataset, name);
      t.parent = this;
      return t;
    }
    return SplitSource.pinned(o, ds -> {
      Table t = new Table(o, ds, name);
      if (!t.schema.equals(schema)) {
        throw new LanceException.InvalidArgument("the read options of " + name + " " + extra.keySet()
            + " name a snapshot with other columns than the query was planned with: use VERSION AS OF / TIMESTAMP AS OF");
      }
      return t;
    });
  }
}
