package org.lancehost.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.Write;

/**
 * Spark's row-level commands (UPDATE, MERGE INTO, and DELETE where the condition does not
 * translate) as lance-host row-level changes: Spark reads the rows with their {@code _rowaddr}
 * from the table's pinned snapshot, each task stages the addresses of the rows it deletes or
 * replaces and streams the rows it writes (new values, inserts) into a staged append at that
 * snapshot, and the driver commits every share once with the query id as statement id — one
 * new version. A concurrent commit that changed other rows is rebased over; one that changed
 * any of the same rows fails the command with a conflict (nothing committed).
 */
final class RowLevel implements SupportsDelta {
  /** The metadata column Spark reads to name a row. */
  static final String ROW_ADDR = "_rowaddr";

  private final Table table;
  private final Command command;

  RowLevel(Table table, Command command) {
    this.table = table;
    this.command = command;
  }

  @Override
  public Command command() {
    return command;
  }

  @Override
  public String description() {
    return "lance_host " + command + " of " + table.name() + " at version " + table.pinnedVersion();
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new org.lancehost.spark.ScanBuilder(table);
  }

  @Override
  public NamedReference[] rowId() {
    return new NamedReference[] {Expressions.column(ROW_ADDR)};
  }

  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new DeltaWriteBuilder() {
      @Override
      public DeltaWrite build() {
        return new DeltaWrite() {
          @Override
          public DeltaBatchWrite toBatch() {
            return new Batch(table, info.schema(), info.queryId());
          }

          @Override
          public String description() {
            return RowLevel.this.description();
          }
        };
      }
    };
  }

  /** The driver's side: one commit of every task's shares, or an abort that deletes them. */
  static final class Batch implements DeltaBatchWrite {
    private final String uri;
    private final java.util.HashMap<String, String> storage;
    private final String queryId;
    private final String message;
    private final byte[] snapshot;
    private final BatchWriter.Factory inserts;
    private final CatalogTable catalogTable;

    Batch(Table table, StructType rows, String queryId) {
      Options o = table.options;
      this.catalogTable = o.catalogTable;
      this.uri = o.requireUri();
      this.storage = o.storage;
      this.queryId = queryId;
      this.message = o.all.get("commit_message");
      this.snapshot = table.snapshot();
      if (rows.fields().length == 0) {
        this.inserts = null; // a DELETE writes no rows
      } else {
        org.apache.arrow.vector.types.pojo.Schema target = table.dataset().schema();
        new RowsToArrow(rows, target).close(); // refuse a column mismatch before any task runs
        this.inserts = new BatchWriter.Factory(uri, Write.APPEND, snapshot, target.toJson(), rows, o.storage,
            o.catalogTable, o.maxRowsPerFile);
      }
    }

    @Override
    public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new Factory(snapshot, catalogTable != null ? null : storage, catalogTable, inserts);
    }

    @Override
    public boolean useCommitCoordinator() {
      return true;
    }

    private static List<byte[]> shares(WriterCommitMessage[] messages) {
      List<byte[]> out = new ArrayList<>();
      for (WriterCommitMessage m : messages) {
        if (!(m instanceof Shares)) continue;
        Shares s = (Shares) m;
        if (s.deletes != null) out.add(s.deletes);
        if (s.inserts != null) out.add(s.inserts);
      }
      return out;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      List<byte[]> staged = shares(messages);
      if (staged.isEmpty()) return; // no row changed: no new version
      Write.commit(uri, staged, Write.Options.mode(Write.APPEND).statementId(queryId).commitMessage(message)
          .storageOptions(storage));
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      List<byte[]> staged = shares(messages);
      if (!staged.isEmpty()) Write.abort(staged, storage);
    }
  }

  /** A task's shares: the rows it deletes (by address) and the rows it writes; null = none. */
  static final class Shares implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final byte[] deletes;
    final byte[] inserts;

    Shares(byte[] deletes, byte[] inserts) {
      this.deletes = deletes;
      this.inserts = inserts;
    }
  }

  static final class Factory implements DeltaWriterFactory, Serializable {
    private static final long serialVersionUID = 1L;
    final byte[] snapshot;
    final java.util.HashMap<String, String> storage; // null for a catalog table: its tasks describe it
    final CatalogTable table;
    final BatchWriter.Factory inserts; // null: the command inserts nothing

    Factory(byte[] snapshot, java.util.HashMap<String, String> storage, CatalogTable table, BatchWriter.Factory inserts) {
      this.snapshot = snapshot;
      this.storage = storage;
      this.table = table;
      this.inserts = inserts;
    }

    /** The storage options a task opens and writes with: a catalog table's as its catalog describes them now. */
    java.util.HashMap<String, String> taskStorage() {
      return table != null ? table.storageOptions() : storage;
    }

    @Override
    public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
      try {
        return new TaskWriter(this);
      } catch (java.io.IOException e) {
        throw new LanceException.InvalidArgument("the table's schema does not parse: " + e.getMessage());
      }
    }
  }

  /**
   * One task: the addresses of the rows it deletes (an update deletes the old row and inserts its
   * new values), and a streaming staged append of the rows it inserts.
   */
  static final class TaskWriter implements DeltaWriter<InternalRow> {
    private final Factory f;
    private final BatchWriter.TaskWriter inserts;
    private long[] addresses = new long[1024];
    private int count;
    private byte[] appended;
    private java.util.HashMap<String, String> storage;

    /** The options this task opens and writes with (a catalog table's described once, when needed). */
    private java.util.HashMap<String, String> storage() {
      if (storage == null) storage = f.taskStorage();
      return storage;
    }

    TaskWriter(Factory f) throws java.io.IOException {
      this.f = f;
      this.inserts = f.inserts == null ? null : new BatchWriter.TaskWriter(f.inserts);
    }

    @Override
    public void delete(InternalRow metadata, InternalRow id) {
      if (id == null || id.isNullAt(0)) {
        throw new LanceException.InvalidArgument("a row to delete has no " + ROW_ADDR);
      }
      if (count == addresses.length) addresses = java.util.Arrays.copyOf(addresses, count * 2);
      addresses[count++] = id.getLong(0);
    }

    @Override
    public void update(InternalRow metadata, InternalRow id, InternalRow row) {
      delete(metadata, id);
      insert(row);
    }

    @Override
    public void insert(InternalRow row) {
      if (inserts == null) throw new LanceException.Internal("Spark inserted a row in a command that writes none");
      inserts.write(row);
    }

    @Override
    public WriterCommitMessage commit() {
      appended = inserts == null ? null : ((BatchWriter.Share) inserts.commit()).bytes;
      byte[] deletes = null;
      if (count > 0) {
        try (Dataset at = Dataset.fromSnapshot(f.snapshot, storage())) {
          deletes = at.stageRowDeletes(java.util.Arrays.copyOf(addresses, count)).bytes;
        } catch (RuntimeException e) {
          if (appended != null) Write.abort(List.of(appended), storage());
          appended = null;
          throw e;
        }
      }
      return new Shares(deletes, appended);
    }

    @Override
    public void abort() {
      if (inserts != null) inserts.abort();
      if (appended != null) Write.abort(List.of(appended), storage());
      appended = null;
    }

    @Override
    public void close() {
      if (inserts != null) inserts.close();
    }
  }
}
