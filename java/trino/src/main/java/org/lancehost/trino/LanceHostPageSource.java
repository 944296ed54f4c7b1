package org.lancehost.trino;

import io.trino.spi.Page;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.SourcePage;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.IoStats;
import org.lancehost.ScanOptions;

/**
 * One split read as Trino pages: the library's Arrow stream of the split (the table handle's
 * filter and limit pushed into it), each batch converted value by value (TypeMapping). A query
 * that needs no column (count(*)) counts the split's matching rows instead of reading any.
 */
final class LanceHostPageSource implements ConnectorPageSource {
  private final Dataset dataset;
  private final List<LanceHostColumnHandle> columns;
  private final ArrowStream stream; // null when no column is read
  private long remainingCount; // rows still to hand out when no column is read
  private boolean finished;
  private long completedBytes;
  private long completedPositions;

  LanceHostPageSource(Dataset dataset, byte[] split, List<LanceHostColumnHandle> columns, String filter, long limit,
      BufferAllocator allocator) {
    this.dataset = dataset;
    this.columns = columns;
    try {
      if (columns.isEmpty()) {
        long n = dataset.countRows(split, filter);
        this.remainingCount = limit >= 0 ? Math.min(n, limit) : n;
        this.stream = null;
      } else {
        List<String> names = new ArrayList<>();
        for (LanceHostColumnHandle c : columns) names.add(c.name());
        ScanOptions o = ScanOptions.all().columns(names);
        if (filter != null) o = o.filter(filter);
        if (limit >= 0) o = o.limit(limit);
        this.stream = dataset.scan(split, o, allocator);
      }
    } catch (RuntimeException e) {
      dataset.close();
      throw e;
    }
  }

  @Override
  public long getCompletedBytes() {
    return completedBytes;
  }

  @Override
  public long getReadTimeNanos() {
    return stream == null ? 0 : stream.nanosInNext();
  }

  @Override
  public boolean isFinished() {
    return finished;
  }

  @Override
  public SourcePage getNextSourcePage() {
    if (finished) return null;
    if (stream == null) {
      int n = (int) Math.min(remainingCount, 1 << 20);
      remainingCount -= n;
      if (remainingCount == 0) finished = true;
      completedPositions += n;
      return n == 0 ? null : SourcePage.create(n);
    }
    try (VectorSchemaRoot batch = stream.next()) {
      if (batch == null) {
        finished = true;
        IoStats io = stream.ioStats();
        if (io != null) completedBytes = io.readBytes();
        return null;
      }
      int n = batch.getRowCount();
      Block[] blocks = new Block[columns.size()];
      for (int i = 0; i < blocks.length; i++) {
        LanceHostColumnHandle c = columns.get(i);
        FieldVector v = batch.getVector(c.name());
        if (v == null) {
          throw new IllegalStateException("the scan returned no column '" + c.name() + "'");
        }
        blocks[i] = TypeMapping.block(c.type(), v, n);
      }
      completedPositions += n;
      return SourcePage.create(new Page(n, blocks));
    }
  }

  @Override
  public java.util.OptionalLong getCompletedPositions() {
    return java.util.OptionalLong.of(completedPositions);
  }

  @Override
  public void close() {
    finished = true;
    try {
      if (stream != null) stream.close();
    } finally {
      dataset.close();
    }
  }
}
