package org.lancehost.spark;

import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.IoStats;
import org.lancehost.LanceException;
import org.lancehost.ScanOptions;

/**
 * Reads one partition as columnar batches over the library's Arrow buffers. A batch stays valid
 * until the next call to {@link #next()} that returns another batch, as Spark requires. The last
 * batch stays valid after the stream ended and after {@link #close()}, until the Spark task
 * completes: an Arrow-optimized Python UDF reads the rows of the input on a writer thread of its
 * own, which may still convert the last batch's rows when Spark has already seen the end of the
 * partition and closed the reader.
 */
final class ColumnarReader implements PartitionReader<ColumnarBatch> {
  private final AutoCloseable owner; // the dataset (or the lease on it) the stream was opened on
  private final ArrowStream stream;
  private final StructType schema;
  /** The columns to hand Spark, by name (a change split's); null: every column as returned. */
  private final String[] output;
  private VectorSchemaRoot current;
  private ColumnarBatch batch;
  private boolean closed;

  /** A reader over a stream already opened on a dataset `owner` holds (both closed with the reader). */
  ColumnarReader(AutoCloseable owner, ArrowStream stream) {
    this.owner = owner;
    this.stream = stream;
    this.schema = null;
    this.output = null;
  }

  ColumnarReader(LanceScan.Partition p) {
    Snapshots.Lease lease = Snapshots.open(p.snapshot);
    Dataset ds = lease.dataset();
    output = p.output;
    try {
      if (p.aggregate != null) {
        schema = p.aggregate.schema;
        stream = ds.aggregate(p.aggregate.spec, SparkTypes.allocator());
      } else {
        schema = null;
        // No column asked (a count Spark computes itself): read only the row ids (a change
        // split returns its row ids whatever it is asked for).
        String[] cols = p.columns.length == 0 && p.output == null ? new String[] {"_rowid"} : p.columns;
        ScanOptions o = ScanOptions.all().columns(cols).filter(p.filter).limit(p.limit).batchSize(p.batchSize)
            .orderBy(p.orderBy);
        if (p.keyColumn != null) o = o.keys(p.keyColumn, p.keys);
        stream = ds.scan(p.split, o, SparkTypes.allocator());
      }
    } catch (RuntimeException e) {
      lease.close();
      throw e;
    }
    owner = lease;
  }

  private long rows;
  /** The stream's statistics when it ended or was closed (a closed stream reports none). */
  private IoStats finalIo;

  @Override
  public boolean next() {
    VectorSchemaRoot root = stream.next();
    if (root == null) {
      if (finalIo == null) finalIo = stream.ioStats();
      return false; // the last batch stays readable until close (or the task's end)
    }
    release();
    current = root;
    rows += root.getRowCount();
    List<FieldVector> vectors = root.getFieldVectors();
    if (output != null) {
      vectors = new java.util.ArrayList<>();
      for (String name : output) {
        FieldVector v = root.getVector(name);
        if (v == null) throw new LanceException.Internal("a change split returned no column " + name);
        vectors.add(v);
      }
    }
    ColumnVector[] cols = new ColumnVector[vectors.size()];
    for (int i = 0; i < cols.length; i++) {
      FieldVector v = vectors.get(i);
      if (schema != null) checkType(v, schema.fields()[i]);
      cols[i] = SparkTypes.column(v, schema != null ? schema.fields()[i].dataType() : SparkTypes.of(v.getField()));
    }
    batch = new ColumnarBatch(cols, root.getRowCount());
    return true;
  }

  /** A pushed aggregate's column must have the type Spark planned for it: never a silent cast. */
  private static void checkType(FieldVector v, StructField f) {
    if (!f.dataType().equals(SparkTypes.of(v.getField()))) {
      throw new LanceException.Internal("aggregate column " + f.name() + " came as " + v.getField().getType()
          + ", Spark planned " + f.dataType().simpleString());
    }
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  private void release() {
    if (batch != null) {
      batch.close(); // closes the column vectors, which close the Arrow vectors
      batch = null;
    }
    if (current != null) {
      current.close();
      current = null;
    }
  }

  /** Rows, storage reads and time so far (Spark asks while the task runs and at its end). */
  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    IoStats io = finalIo != null ? finalIo : stream.ioStats();
    return Metrics.values(rows, io, stream.nanosInNext());
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    if (finalIo == null) finalIo = stream.ioStats();
    stream.close(); // stops the work behind the stream; batches already handed out stay valid
    org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
    if (task != null && !task.isCompleted() && (batch != null || current != null)) {
      task.addTaskCompletionListener(new org.apache.spark.util.TaskCompletionListener() {
        @Override
        public void onTaskCompletion(org.apache.spark.TaskContext context) {
          releaseAll();
        }
      });
      return;
    }
    releaseAll();
  }

  private void releaseAll() {
    release();
    try {
      owner.close();
    } catch (Exception e) {
      throw new LanceException.Internal("cannot release the snapshot: " + e);
    }
  }
}
