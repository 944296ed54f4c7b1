package org.lancehost;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A stream of Arrow batches from lance-host (a scan, a search, a merge, an aggregate), imported
 * into Arrow Java without copies. Each {@link #next()} returns a new {@link VectorSchemaRoot} the
 * caller owns and must close; its buffers are the library's, freed when the root is closed.
 * Closing the stream stops the work behind it. Not thread-safe except {@link #cancel()}, which
 * any thread may call while another reads.
 */
public final class ArrowStream implements AutoCloseable {
  private final Object lock = new Object();
  private long handle;
  private final BufferAllocator allocator;
  private final Schema schema;

  ArrowStream(long handle, BufferAllocator allocator) {
    this.handle = handle;
    this.allocator = allocator;
    try {
      this.schema = CData.importSchema(Native.streamSchema(handle));
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** The schema every batch has. */
  public Schema schema() {
    return schema;
  }

  /** The next batch (owned by the caller), or null at the end of the stream. */
  public VectorSchemaRoot next() {
    long h = live();
    long start = System.nanoTime();
    try {
      long array = Native.streamNext(h);
      if (array == 0) return null;
      return CData.importBatch(array, schema, allocator);
    } finally {
      nanosInNext += System.nanoTime() - start;
    }
  }

  private volatile long nanosInNext;

  /**
   * Time spent in {@link #next()} so far: waiting for the library to read, decode and filter each
   * batch (its work runs on its own threads while the caller waits) and importing it.
   */
  public long nanosInNext() {
    return nanosInNext;
  }

  /**
   * The stream's I/O statistics so far (final once {@link #next()} returned null). Thread-safe;
   * {@link IoStats#NONE} once the stream is closed.
   */
  public IoStats ioStats() {
    synchronized (lock) {
      return handle == 0 ? IoStats.NONE : Native.streamIoStats(handle);
    }
  }

  /** Every remaining batch (each owned by the caller). */
  public List<VectorSchemaRoot> readAll() {
    List<VectorSchemaRoot> out = new ArrayList<>();
    try {
      for (VectorSchemaRoot b = next(); b != null; b = next()) out.add(b);
      return out;
    } catch (RuntimeException e) {
      for (VectorSchemaRoot b : out) b.close();
      throw e;
    }
  }

  /** Stops the work behind the stream: the next read fails with {@link LanceException.Cancelled}. */
  public void cancel() {
    synchronized (lock) {
      if (handle != 0) Native.streamCancel(handle);
    }
  }

  /**
   * Hands the C stream to a merge, which consumes it; this object is closed afterwards.
   */
  long detach() {
    synchronized (lock) {
      long h = live();
      handle = 0;
      return h;
    }
  }

  private long live() {
    long h = handle;
    if (h == 0) throw new LanceException.InvalidArgument("the stream is closed");
    return h;
  }

  /** Releases the stream and stops the work behind it; batches already returned stay valid until closed. Idempotent; thread-safe with {@link #cancel()}. */
  @Override
  public void close() {
    long h;
    synchronized (lock) {
      h = handle;
      handle = 0;
    }
    if (h != 0) Native.streamRelease(h);
  }
}
