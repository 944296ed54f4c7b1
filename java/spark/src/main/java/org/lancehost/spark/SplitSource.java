package org.lancehost.spark;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;

/**
 * What the search sources ({@code lance_host_search}, {@code lance_host_text}) share: a table
 * pinned at the snapshot the driver opened, a scan whose partitions are the library's splits, and
 * a reader that opens each split's snapshot on the executor and runs the partition's work.
 */
final class SplitSource {
  private SplitSource() {}

  /** The work of one partition: the query's shipped snapshot, and what to run on it. */
  interface Work extends InputPartition {
    Snapshots.Ref snapshot();

    ArrowStream run(Dataset ds);
  }

  /**
   * A partition of a search source: one split's search, or (global) every split's, merged by the
   * library into the global top k on one executor.
   */
  abstract static class SearchWork implements Work {
    private static final long serialVersionUID = 1L;
    final java.util.ArrayList<byte[]> splits;
    final boolean global;
    final Snapshots.Ref snapshot;

    SearchWork(List<byte[]> splits, boolean global, Snapshots.Ref snapshot) {
      this.splits = new java.util.ArrayList<>(splits);
      this.global = global;
      this.snapshot = snapshot;
    }

    /** One split's search. */
    abstract ArrowStream one(Dataset ds, byte[] split);

    /** The library's merge of the splits' results (consumes them). */
    abstract ArrowStream merge(List<ArrowStream> parts);

    @Override
    public Snapshots.Ref snapshot() {
      return snapshot;
    }

    @Override
    public ArrowStream run(Dataset ds) {
      if (!global) return one(ds, splits.get(0));
      List<ArrowStream> parts = new java.util.ArrayList<>();
      try {
        for (byte[] split : splits) parts.add(one(ds, split));
        return merge(parts);
      } catch (RuntimeException e) {
        for (ArrowStream s : parts) s.close(); // a merge that took them closed them already
        throw e;
      }
    }
  }

  /** The driver's side of a query: how it describes itself and the partitions it plans. */
  interface Planner {
    String describe(Dataset ds);

    List<InputPartition> partitions(Dataset ds);
  }

  /** Opens the dataset of `o`, makes a value of it, and closes the dataset with that value. */
  static <T> T pinned(Options o, Function<Dataset, T> make) {
    Dataset ds = o.open();
    try {
      T t = make.apply(ds);
      Cleaner.register(t, ds);
      return t;
    } catch (RuntimeException e) {
      ds.close();
      throw e;
    }
  }

  static final class QueryTable implements SupportsRead {
    private final String name;
    private final Dataset ds;
    private final StructType schema;
    private final Planner planner;

    QueryTable(String name, Dataset ds, StructType schema, Planner planner) {
      this.name = name;
      this.ds = ds;
      this.schema = schema;
      this.planner = planner;
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
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return () -> new QueryScan(ds, schema, planner);
    }
  }

  static final class QueryScan implements Scan, Batch {
    private final Dataset ds;
    private final StructType schema;
    private final Planner planner;

    QueryScan(Dataset ds, StructType schema, Planner planner) {
      this.ds = ds;
      this.schema = schema;
      this.planner = planner;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return planner.describe(ds);
    }

    @Override
    public org.apache.spark.sql.connector.metric.CustomMetric[] supportedCustomMetrics() {
      return Metrics.supported();
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      return planner.partitions(ds).toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new ReaderFactory();
    }
  }

  static final class ReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<org.apache.spark.sql.catalyst.InternalRow> createReader(InputPartition p) {
      throw new UnsupportedOperationException("lance_host sources read columnar batches");
    }

    @Override
    public boolean supportColumnarReads(InputPartition p) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
      Work w = (Work) p;
      Snapshots.Lease lease = Snapshots.open(w.snapshot());
      try {
        return new ColumnarReader(lease, w.run(lease.dataset()));
      } catch (RuntimeException e) {
        lease.close();
        throw e;
      }
    }
  }
}
