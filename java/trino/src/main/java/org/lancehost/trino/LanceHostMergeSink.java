package org.lancehost.trino;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.trino.spi.Page;
import io.trino.spi.StandardErrorCode;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorMergeSink;
import io.trino.spi.connector.MergePage;
import io.trino.spi.type.BigintType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.memory.BufferAllocator;
import org.lancehost.Dataset;
import org.lancehost.Write;

/**
 * One task of a row-level MERGE, UPDATE or DELETE (Trino's DELETE_ROW_AND_INSERT_ROW paradigm: an
 * updated row is deleted and inserted with its new values): the deleted rows' {@code _rowaddr}
 * are collected and staged as one row-delete share at the planned version, the inserted rows
 * staged as appends there; `finish` hands both to the coordinator, which commits every task's
 * shares as one version (a concurrent change of one of the same rows is a conflict, nothing
 * committed).
 */
final class LanceHostMergeSink implements ConnectorMergeSink {
  private final LanceHostMergeHandle merge;
  private final LanceHostPageSink inserts;
  private final Dataset at;
  private final Map<String, String> storage;
  private long[] addresses = new long[1024];
  private int count;

  LanceHostMergeSink(LanceHostMergeHandle merge, Dataset insertsAt, Dataset deletesAt, Map<String, String> storage,
      BufferAllocator allocator) {
    this.merge = merge;
    this.inserts = new LanceHostPageSink(merge.inserts(), insertsAt, storage, allocator);
    this.at = deletesAt;
    this.storage = storage;
  }

  @Override
  public void storeMergedRows(Page page) {
    MergePage rows = MergePage.createDeleteAndInsertPages(page, merge.columns().size());
    rows.getDeletionsPage().ifPresent(deleted -> {
      Block ids = deleted.getBlock(deleted.getChannelCount() - 1);
      for (int i = 0; i < deleted.getPositionCount(); i++) {
        if (ids.isNull(i)) {
          throw new TrinoException(StandardErrorCode.GENERIC_INTERNAL_ERROR, "a row to delete has no _rowaddr");
        }
        if (count == addresses.length) addresses = Arrays.copyOf(addresses, count * 2);
        addresses[count++] = BigintType.BIGINT.getLong(ids, i);
      }
    });
    rows.getInsertionsPage().ifPresent(inserts::appendPage);
  }

  @Override
  public CompletableFuture<Collection<Slice>> finish() {
    try {
      List<Slice> out = new ArrayList<>(inserts.finish().join());
      if (count > 0) {
        try {
          out.add(Slices.wrappedBuffer(at.stageRowDeletes(Arrays.copyOf(addresses, count)).bytes));
        } catch (RuntimeException e) {
          // the inserted rows' files were staged already: delete them, no commit will use them
          List<byte[]> staged = new ArrayList<>();
          for (Slice s : out) staged.add(s.getBytes());
          if (!staged.isEmpty()) Write.abort(staged, storage);
          throw e;
        }
      }
      return CompletableFuture.completedFuture(out);
    } finally {
      at.close();
    }
  }

  @Override
  public void abort() {
    try {
      inserts.abort(); // row deletes were not staged yet: nothing of them to delete
    } finally {
      at.close();
    }
  }
}
