package org.lancehost.trino;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.trino.spi.Page;
import io.trino.spi.connector.ConnectorPageSink;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lancehost.Dataset;
import org.lancehost.Write;

/**
 * One writer task of an INSERT: Trino's pages become Arrow batches of the table's schema, staged
 * (written, not committed) at the planned version every ~`FLUSH_ROWS` rows; `finish` hands the
 * staged bytes to the coordinator, which commits all shares of the query as one version.
 */
final class LanceHostPageSink implements ConnectorPageSink {
  static final long FLUSH_ROWS = 128 * 1024;

  private final LanceHostInsertHandle insert;
  private final Dataset at;
  private final Schema schema;
  private final Map<String, String> storage;
  private final BufferAllocator allocator;
  private final List<VectorSchemaRoot> pending = new ArrayList<>();
  private final List<byte[]> staged = new ArrayList<>();
  private long pendingRows;
  private long writtenBytes;

  LanceHostPageSink(LanceHostInsertHandle insert, Dataset at, Map<String, String> storage, BufferAllocator allocator) {
    this.insert = insert;
    this.at = at;
    this.storage = storage;
    this.allocator = allocator;
    List<Field> fields = new ArrayList<>();
    Schema table = at.schema();
    for (LanceHostColumnHandle c : insert.columns()) fields.add(table.findField(c.name()));
    this.schema = new Schema(fields, table.getCustomMetadata());
  }

  @Override
  public CompletableFuture<?> appendPage(Page page) {
    if (page.getPositionCount() == 0) return NOT_BLOCKED;
    pending.add(ArrowWriter.batch(page, schema, insert.columns(), allocator));
    pendingRows += page.getPositionCount();
    if (pendingRows >= FLUSH_ROWS) flush();
    return NOT_BLOCKED;
  }

  private void flush() {
    if (pending.isEmpty()) return;
    List<VectorSchemaRoot> batches = new ArrayList<>(pending);
    pending.clear();
    pendingRows = 0;
    // the library owns (and closes) each batch once it took it; the ones it did not take are ours
    int[] taken = {0};
    Iterator<VectorSchemaRoot> handing = new Iterator<>() {
      @Override
      public boolean hasNext() {
        return taken[0] < batches.size();
      }

      @Override
      public VectorSchemaRoot next() {
        return batches.get(taken[0]++);
      }
    };
    try {
      Write.Staged share = Write.stage(insert.location(), at, schema, handing,
          Write.Options.mode(Write.APPEND).storageOptions(storage));
      staged.add(share.bytes);
    } finally {
      for (int i = taken[0]; i < batches.size(); i++) batches.get(i).close();
    }
  }

  @Override
  public long getCompletedBytes() {
    return writtenBytes;
  }

  @Override
  public CompletableFuture<Collection<Slice>> finish() {
    try {
      flush();
      List<Slice> out = new ArrayList<>();
      for (byte[] b : staged) {
        writtenBytes += b.length;
        out.add(Slices.wrappedBuffer(b));
      }
      return CompletableFuture.completedFuture(out);
    } finally {
      at.close();
    }
  }

  @Override
  public void abort() {
    try {
      pending.forEach(VectorSchemaRoot::close);
      pending.clear();
      if (!staged.isEmpty()) Write.abort(staged, storage); // delete the files no commit will use
    } finally {
      at.close();
    }
  }
}
