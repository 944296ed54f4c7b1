package org.lancehost.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.Write;

/**
 * A Spark write as lance-host's staged writes: each task streams its rows into one staged share
 * (the commit message carries the share's bytes), the driver commits every share once with the
 * query id as statement id (a retried commit writes nothing more), or discards them on abort.
 * Readers see the write as one new version or not at all.
 */
final class BatchWriter implements BatchWrite {
  private final String uri;
  private final int mode;
  private final byte[] snapshot;
  private final String schemaJson;
  private final StructType sparkSchema;
  private final HashMap<String, String> storage;
  private final String queryId;
  private final String message;
  private final long maxRowsPerFile;
  private final CatalogTable table;

  BatchWriter(String uri, int mode, byte[] snapshot, Schema target, StructType sparkSchema, HashMap<String, String> storage,
      CatalogTable table, String queryId, String message, long maxRowsPerFile) {
    this.uri = uri;
    this.mode = mode;
    this.snapshot = snapshot;
    this.schemaJson = target.toJson();
    this.sparkSchema = sparkSchema;
    this.storage = storage;
    this.queryId = queryId;
    this.message = message;
    this.maxRowsPerFile = maxRowsPerFile;
    this.table = table;
    new RowsToArrow(sparkSchema, target).close(); // refuse a column mismatch before any task runs
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return new Factory(uri, mode, snapshot, schemaJson, sparkSchema, storage, table, maxRowsPerFile);
  }

  @Override
  public boolean useCommitCoordinator() {
    return true; // one committed attempt per partition: its share is the one committed
  }

  private static List<byte[]> shares(WriterCommitMessage[] messages) {
    List<byte[]> out = new ArrayList<>();
    for (WriterCommitMessage m : messages) {
      if (m instanceof Share && ((Share) m).bytes != null) out.add(((Share) m).bytes);
    }
    return out;
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    List<byte[]> staged = shares(messages);
    if (staged.isEmpty() && mode == Write.APPEND) return; // nothing to append: no new version
    Write.commit(uri, staged, Write.Options.mode(mode).statementId(queryId).commitMessage(message).storageOptions(storage));
  }

  /**
   * Discards the shares of the tasks Spark reports. A task that finishes while Spark aborts the
   * job is not reported (Spark drops its message): its files stay in the data directory, in no
   * version, invisible to readers, until cleanup with delete_unverified removes them.
   */
  @Override
  public void abort(WriterCommitMessage[] messages) {
    List<byte[]> staged = shares(messages);
    if (!staged.isEmpty()) Write.abort(staged, storage);
  }

  /** A task's staged share (null bytes: the task wrote no row). */
  static final class Share implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final byte[] bytes;

    Share(byte[] bytes) {
      this.bytes = bytes;
    }
  }

  static final class Factory implements DataWriterFactory, Serializable {
    private static final long serialVersionUID = 1L;
    final String uri;
    final int mode;
    final byte[] snapshot;
    final String schemaJson;
    final StructType sparkSchema;
    final HashMap<String, String> storage; // null for a catalog table: its tasks describe it
    final CatalogTable table;
    final long maxRowsPerFile;

    Factory(String uri, int mode, byte[] snapshot, String schemaJson, StructType sparkSchema, HashMap<String, String> storage,
        CatalogTable table, long maxRowsPerFile) {
      this.uri = uri;
      this.mode = mode;
      this.snapshot = snapshot;
      this.schemaJson = schemaJson;
      this.sparkSchema = sparkSchema;
      this.storage = table != null ? null : storage;
      this.table = table;
      this.maxRowsPerFile = maxRowsPerFile;
    }

    /** The storage options a task opens and writes with: a catalog table's as its catalog describes them now. */
    HashMap<String, String> taskStorage() {
      return table != null ? table.storageOptions() : storage;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      try {
        return new TaskWriter(this);
      } catch (java.io.IOException e) {
        throw new LanceException.InvalidArgument("the table's schema does not parse: " + e.getMessage());
      }
    }
  }

  /**
   * One task's writer. Rows become Arrow batches of {@link #BATCH_ROWS}; a thread of the task
   * streams them into one staged write while Spark produces more (at most two batches wait).
   * A task killed after its first full batch may leave data files no version references
   * (invisible to readers); cleanup with delete_unverified removes them, as for every writer.
   */
  static final class TaskWriter implements DataWriter<InternalRow> {
    static final int BATCH_ROWS = 8192;
    private static final Object END = new Object();

    private final Factory f;
    private final RowsToArrow rows;
    private final BlockingQueue<Object> queue = new ArrayBlockingQueue<>(2);
    private Thread thread;
    private volatile Write.Staged staged;
    private volatile Throwable failure;
    private Dataset at;
    private HashMap<String, String> storage;
    private boolean wroteAny;

    TaskWriter(Factory f) throws java.io.IOException {
      this.f = f;
      Schema target = Schema.fromJSON(f.schemaJson);
      this.rows = new RowsToArrow(f.sparkSchema, target);
    }

    private void start() {
      Schema target;
      try {
        target = Schema.fromJSON(f.schemaJson);
      } catch (java.io.IOException e) {
        throw new LanceException.InvalidArgument("the table's schema does not parse: " + e.getMessage());
      }
      storage = f.taskStorage();
      if (f.snapshot != null) at = Dataset.fromSnapshot(f.snapshot, storage);
      Iterator<VectorSchemaRoot> batches = new Iterator<>() {
        Object next;

        @Override
        public boolean hasNext() {
          if (next == null) {
            try {
              next = queue.take();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException("the write was interrupted");
            }
          }
          if (next instanceof RuntimeException) throw (RuntimeException) next;
          return next != END;
        }

        @Override
        public VectorSchemaRoot next() {
          if (!hasNext()) throw new NoSuchElementException();
          VectorSchemaRoot b = (VectorSchemaRoot) next;
          next = null;
          return b;
        }
      };
      thread = new Thread(() -> {
        try {
          staged = Write.stage(f.uri, at, target, batches,
              Write.Options.mode(f.mode).storageOptions(storage).maxRowsPerFile(f.maxRowsPerFile));
        } catch (Throwable t) {
          failure = t;
          drain();
        }
      }, "lance-host-write");
      thread.setDaemon(true);
      thread.start();
    }

    /** Closes batches nobody will write (after a failure). */
    private void drain() {
      Object o;
      while ((o = queue.poll()) != null) {
        if (o instanceof VectorSchemaRoot) ((VectorSchemaRoot) o).close();
      }
    }

    private void put(Object o) {
      try {
        while (!queue.offer(o, 100, TimeUnit.MILLISECONDS)) {
          if (failure != null || !thread.isAlive()) {
            if (o instanceof VectorSchemaRoot) ((VectorSchemaRoot) o).close();
            throw rethrow();
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        if (o instanceof VectorSchemaRoot) ((VectorSchemaRoot) o).close();
        throw new LanceException.Cancelled("the task was interrupted while writing");
      }
    }

    private RuntimeException rethrow() {
      Throwable t = failure;
      if (t instanceof RuntimeException) return (RuntimeException) t;
      return new LanceException.Internal("the write thread stopped: " + (t == null ? "without an error" : t));
    }

    @Override
    public void write(InternalRow row) {
      if (failure != null) throw rethrow();
      wroteAny = true;
      if (rows.add(row, SparkTypes.allocator()) >= BATCH_ROWS) {
        // The library starts writing with the first full batch (or at commit): a task aborted
        // before then has written no file at all.
        if (thread == null) start();
        put(rows.take());
      }
    }

    @Override
    public WriterCommitMessage commit() {
      if (!wroteAny) return new Share(null);
      if (thread == null) start();
      VectorSchemaRoot last = rows.take();
      if (last != null) put(last);
      put(END);
      join();
      if (failure != null) throw rethrow();
      return new Share(staged.bytes);
    }

    private void join() {
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new LanceException.Cancelled("the task was interrupted while its write finished");
      }
    }

    @Override
    public void abort() {
      rows.close();
      if (thread == null) return;
      if (thread.isAlive()) {
        drain();
        queue.offer(new LanceException.Cancelled("the Spark task was aborted"));
        join();
      }
      // A share that was staged before the abort is discarded here; the driver never sees it.
      if (staged != null) Write.abort(List.of(staged.bytes), storage);
      staged = null;
    }

    @Override
    public void close() {
      rows.close();
      if (thread != null && thread.isAlive()) abort();
      if (at != null) at.close();
      at = null;
    }
  }
}
