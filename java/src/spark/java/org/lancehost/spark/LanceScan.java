package org.lancehost.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.lancehost.Dataset;
import org.lancehost.Split;
import org.lancehost.SplitPlan;

/**
 * A planned read: one input partition per split of the pinned snapshot (the split's bytes are
 * the partition), or a single partition computing a pushed aggregate completely.
 */
final class LanceScan implements Scan, Batch {
  private final Table table;
  private final StructType readSchema;
  private final List<String> pushedSql;
  private final long limit;
  private final String orderBy; // a pushed top n: the library's sort keys (null: storage order)
  private final String orderText;
  private final ScanBuilder.AggregatePlan aggregate;

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

  @Override
  public String description() {
    StringBuilder b = new StringBuilder("LanceHostScan ").append(table.name());
    b.append(" version=").append(table.pinnedVersion());
    b.append(" ReadSchema: ").append(readSchema.catalogString());
    b.append(" PushedFilters: [").append(String.join(", ", pushedSql)).append(']');
    if (orderBy != null) b.append(" PushedTopN: ORDER BY ").append(orderText).append(" LIMIT ").append(limit);
    else if (limit >= 0) b.append(" PushedLimit: ").append(limit);
    if (aggregate != null) b.append(" PushedAggregation: ").append(aggregate.description);
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
      return new InputPartition[] {new Partition(null, Snapshots.ship(table.dataset(), table.options.storage), null,
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
        if (ref == null) ref = Snapshots.ship(ds, table.options.storage);
        parts.add(new Partition(split, ref, asked, null, -1, null, table.options.batchSize, null, columns));
      }
      return parts.toArray(new InputPartition[0]);
    }
    SplitPlan plan = table.options.targetRows > 0 ? ds.planScanSlices(table.options.targetRows) : ds.planScan(0);
    List<InputPartition> out = new ArrayList<>();
    long rows = 0;
    Snapshots.Ref snapshot = null;
    for (byte[] split : plan.splits()) {
      if (snapshot == null) snapshot = Snapshots.ship(ds, table.options.storage); // once, when there is a split
      out.add(new Partition(split, snapshot, columns, filter, limit, orderBy, table.options.batchSize, null));
      rows += Split.info(split).rowCount();
      // Without a filter every split returns all its rows: once `limit` are covered, the rest
      // of the splits cannot change the answer Spark's global limit keeps.
      // With an order every split holds candidates: all are read.
      if (limit >= 0 && filter == null && orderBy == null && rows >= limit) break;
    }
    return out.toArray(new InputPartition[0]);
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
