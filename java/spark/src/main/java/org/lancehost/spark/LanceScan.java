package org.lancehost.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.lancehost.Dataset;
import org.lancehost.Split;
import org.lancehost.SplitPlan;

/**
 * A planned read: one input partition per split of the pinned snapshot (the split's bytes are
 * the partition), or a single partition computing a pushed aggregate completely.
 *
 * <p>Runtime filters ({@link SupportsRuntimeV2Filtering}): Spark's dynamic pruning of a join
 * hands the scan, after planning, {@code key IN (values)} of the join's build side; the first
 * such predicate on an integer or string column becomes the library's key-set filter of every
 * split (planned by Lance, answered by a scalar index on the column where one exists). Other
 * runtime predicates are left to Spark, which keeps the join condition in any case.
 *
 * <p>Statistics ({@link SupportsReportStatistics}), from the snapshot's metadata (nothing is
 * read): the rows (physical minus deleted) when no predicate was pushed, and the bytes on disk
 * of the columns read, so that Spark can plan joins (broadcast a small table) instead of
 * assuming an unknown, huge size.
 */
final class LanceScan implements Scan, Batch, SupportsRuntimeV2Filtering, SupportsReportStatistics {
  private final Table table;
  private final StructType readSchema;
  private final List<String> pushedSql;
  private final long limit;
  private final String orderBy; // a pushed top n: the library's sort keys (null: storage order)
  private final String orderText;
  private final ScanBuilder.AggregatePlan aggregate;
  /** The runtime key set Spark handed over (null: none). */
  private String runtimeKeyColumn;
  private String[] runtimeKeys;
  /** Keys a runtime filter may hold; a larger set is left to Spark's join. */
  static final int MAX_RUNTIME_KEYS = 1_000_000;

  LanceScan(Table table, StructType required, List<String> pushedSql, long limit, String orderBy, String orderText,
      ScanBuilder.AggregatePlan aggregate) {
    this.table = table;
    this.readSchema = aggregate != null ? aggregate.schema : required;
    this.pushedSql = new ArrayList<>(pushedSql);
    this.limit = limit;
    this.orderBy = orderBy;
    this.orderText = orderText;
    this.aggregate = aggregate;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  String filter() {
    List<String> parts = new ArrayList<>();
    if (table.options.filter != null) parts.add(table.options.filter);
    parts.addAll(pushedSql);
    if (parts.isEmpty()) return null;
    if (parts.size() == 1) return parts.get(0);
    StringBuilder b = new StringBuilder();
    for (String p : parts) b.append(b.length() == 0 ? "" : " AND ").append('(').append(p).append(')');
    return b.toString();
  }

  /** The columns a runtime key set may filter: integer and string columns the scan returns. */
  @Override
  public NamedReference[] filterAttributes() {
    if (aggregate != null || table.readsChanges()) return new NamedReference[0];
    List<NamedReference> refs = new ArrayList<>();
    for (StructField f : readSchema.fields()) {
      if (keyable(f.dataType())) refs.add(Expressions.column(f.name()));
    }
    return refs.toArray(new NamedReference[0]);
  }

  private static boolean keyable(DataType t) {
    return t.equals(DataTypes.LongType) || t.equals(DataTypes.IntegerType) || t.equals(DataTypes.ShortType)
        || t.equals(DataTypes.ByteType) || t.equals(DataTypes.StringType);
  }

  @Override
  public void filter(Predicate[] predicates) {
    // Spark calls this again on every execution of the plan: nothing of an earlier call stays.
    runtimeKeyColumn = null;
    runtimeKeys = null;
    for (Predicate p : predicates) {
      if (!"IN".equals(p.name())) continue;
      Expression[] children = p.children();
      if (children.length < 1 || !(children[0] instanceof NamedReference)) continue;
      String[] path = ((NamedReference) children[0]).fieldNames();
      if (path.length != 1 || readSchema.getFieldIndex(path[0]).isEmpty()) continue;
      if (!keyable(readSchema.apply(path[0]).dataType()) || children.length - 1 > MAX_RUNTIME_KEYS) continue;
      List<String> keys = new ArrayList<>();
      boolean literal = true;
      for (int i = 1; i < children.length && literal; i++) {
        if (!(children[i] instanceof Literal)) {
          literal = false;
        } else {
          Object v = ((Literal<?>) children[i]).value();
          if (v != null) keys.add(v.toString()); // NULL matches no key of a join
        }
      }
      if (!literal) continue;
      runtimeKeyColumn = path[0];
      runtimeKeys = keys.toArray(new String[0]);
      return;
    }
  }

  /** The pinned snapshot's statistics, read once per scan (Spark asks more than once while planning). */
  private Dataset.Statistics snapshotStatistics;

  @Override
  public Statistics estimateStatistics() {
    if (aggregate != null || table.readsChanges()) return unknown();
    if (snapshotStatistics == null) snapshotStatistics = table.dataset().statistics();
    Dataset.Statistics stats = snapshotStatistics;
    long rows = 0;
    long fileBytes = 0;
    boolean fileBytesKnown = true;
    for (long[] f : stats.fragments) {
      rows += f[1] - f[2];
      if (f[3] < 0) fileBytesKnown = false;
      else fileBytes += f[3];
    }
    long columnBytes = 0;
    boolean columnsKnown = readSchema.fields().length > 0;
    for (StructField f : readSchema.fields()) {
      Long b = stats.columnBytes.get(f.name());
      if (b == null || b < 0) columnsKnown = false;
      else columnBytes += b;
    }
    java.util.OptionalLong size = columnsKnown ? java.util.OptionalLong.of(Math.max(columnBytes, 1))
        : fileBytesKnown ? java.util.OptionalLong.of(Math.max(fileBytes, 1)) : java.util.OptionalLong.empty();
    // with a pushed predicate the rows returned are fewer: the count is not reported
    java.util.OptionalLong numRows = filter() == null && limit < 0 ? java.util.OptionalLong.of(rows)
        : java.util.OptionalLong.empty();
    return new Statistics() {
      @Override
      public java.util.OptionalLong sizeInBytes() {
        return size;
      }

      @Override
      public java.util.OptionalLong numRows() {
        return numRows;
      }
    };
  }

  private static Statistics unknown() {
    return new Statistics() {
      @Override
      public java.util.OptionalLong sizeInBytes() {
        return java.util.OptionalLong.empty();
      }

      @Override
      public java.util.OptionalLong numRows() {
        return java.util.OptionalLong.empty();
      }
    };
  }

  @Override
  public String description() {
    StringBuilder b = new StringBuilder("LanceHostScan ").append(table.name());
    b.append(" version=").append(table.pinnedVersion());
    b.append(" ReadSchema: ").append(readSchema.catalogString());
    b.append(" PushedFilters: [").append(String.join(", ", pushedSql)).append(']');
    if (orderBy != null) b.append(" PushedTopN: ORDER BY ").append(orderText).append(" LIMIT ").append(limit);
    else if (limit >= 0) b.append(" PushedLimit: ").append(limit);
    if (aggregate != null) b.append(" PushedAggregation: ").append(aggregate.description);
    if (runtimeKeyColumn != null) {
      b.append(" RuntimeKeys: ").append(runtimeKeyColumn).append(" (").append(runtimeKeys.length).append(" keys)");
    }
    return b.toString();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    String[] columns = readSchema.fieldNames();
    String filter = filter();
    if (aggregate != null) {
      // The pushed predicates (and the filter option) restrict the rows the aggregate sees.
      ScanBuilder.AggregatePlan a = new ScanBuilder.AggregatePlan(aggregate.spec.filter(filter), aggregate.schema,
          aggregate.description);
      return new InputPartition[] {new Partition(null, Snapshots.ship(table.dataset(), table.options), null,
          null, -1, null, 0, a)};
    }
    Dataset ds = table.dataset();
    if (table.readsChanges()) {
      // change splits return the table's columns asked for, then their own (picked by name)
      List<String> data = new ArrayList<>();
      for (String c : columns) if (!java.util.Arrays.asList(Table.CHANGE_COLUMNS).contains(c)) data.add(c);
      String[] asked = data.toArray(new String[0]);
      List<InputPartition> parts = new ArrayList<>();
      Snapshots.Ref ref = null;
      for (byte[] split : ds.planChanges(table.options.changesSince, 0, table.options.targetRows).splits()) {
        if (ref == null) ref = Snapshots.ship(ds, table.options);
        parts.add(new Partition(split, ref, asked, null, -1, null, table.options.batchSize, null, columns));
      }
      return parts.toArray(new InputPartition[0]);
    }
    SplitPlan plan = table.options.targetRows > 0 ? ds.planScanSlices(table.options.targetRows) : defaultPlan(ds);
    List<InputPartition> out = new ArrayList<>();
    long rows = 0;
    Snapshots.Ref snapshot = null;
    for (byte[] split : plan.splits()) {
      if (snapshot == null) snapshot = Snapshots.ship(ds, table.options); // once, when there is a split
      Partition part = new Partition(split, snapshot, columns, filter, limit, orderBy, table.options.batchSize, null);
      part.keyColumn = runtimeKeyColumn;
      part.keys = runtimeKeys;
      out.add(part);
      rows += Split.info(split).rowCount();
      // Without a filter every split returns all its rows: once `limit` are covered, the rest
      // of the splits cannot change the answer Spark's global limit keeps.
      // With an order every split holds candidates: all are read.
      if (limit >= 0 && filter == null && orderBy == null && runtimeKeyColumn == null && rows >= limit) break;
    }
    return out.toArray(new InputPartition[0]);
  }

  /** Fewest rows a default row slice holds (smaller tables are not cut). */
  static final long MIN_SLICE_ROWS = 65_536;

  /**
   * Without {@code target_rows}: one split per fragment, unless the table has fewer fragments than
   * Spark has cores ({@code defaultParallelism}) — then row slices of about rows / cores (at least
   * {@link #MIN_SLICE_ROWS}), so a one-fragment table is not read by one task.
   */
  static SplitPlan defaultPlan(Dataset ds) {
    SplitPlan plan = ds.planScan(0);
    org.apache.spark.sql.SparkSession spark = org.apache.spark.sql.SparkSession.active();
    int cores = spark.sparkContext().defaultParallelism();
    if (plan.splits().size() >= cores) return plan;
    long rows = 0;
    for (byte[] split : plan.splits()) rows += Split.info(split).rowCount();
    if (rows < 2 * MIN_SLICE_ROWS) return plan;
    return ds.planScanSlices(Math.max(MIN_SLICE_ROWS, (rows + cores - 1) / cores));
  }

  @Override
  public org.apache.spark.sql.connector.metric.CustomMetric[] supportedCustomMetrics() {
    return Metrics.supported();
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new ReaderFactory();
  }

  /** One split (or the aggregate) with what its task reads, and the query's shipped snapshot. */
  static final class Partition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final byte[] split;
    final Snapshots.Ref snapshot;
    final String[] columns;
    final String filter;
    final long limit;
    final String orderBy;
    final long batchSize;
    final ScanBuilder.AggregatePlan aggregate;
    /** A change split's output columns, picked by name from what it returns (null: as returned). */
    final String[] output;
    /** A runtime key set from Spark's dynamic pruning (null: none). */
    String keyColumn;
    String[] keys;

    Partition(byte[] split, Snapshots.Ref snapshot, String[] columns, String filter, long limit, String orderBy,
        long batchSize, ScanBuilder.AggregatePlan aggregate) {
      this(split, snapshot, columns, filter, limit, orderBy, batchSize, aggregate, null);
    }

    Partition(byte[] split, Snapshots.Ref snapshot, String[] columns, String filter, long limit, String orderBy,
        long batchSize, ScanBuilder.AggregatePlan aggregate, String[] output) {
      this.output = output;
      this.split = split;
      this.snapshot = snapshot;
      this.columns = columns;
      this.filter = filter;
      this.limit = limit;
      this.orderBy = orderBy;
      this.batchSize = batchSize;
      this.aggregate = aggregate;
    }
  }

  static final class ReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<org.apache.spark.sql.catalyst.InternalRow> createReader(InputPartition p) {
      throw new UnsupportedOperationException("lance_host reads columnar batches");
    }

    @Override
    public boolean supportColumnarReads(InputPartition p) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
      return new ColumnarReader((Partition) p);
    }
  }

  static StructType schemaOf(StructField[] f) {
    return new StructType(f);
  }
}
