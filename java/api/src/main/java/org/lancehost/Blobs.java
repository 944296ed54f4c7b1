package org.lancehost;

/**
 * Blobs of a blob column for a list of row ids ({@link Dataset#takeBlobs}): each one's row id,
 * size and location, and range reads that fetch only the bytes asked for. Thread-safe; closing
 * waits for reads in flight; the set outlives the dataset it came from.
 */
public final class Blobs implements AutoCloseable {
  private final Handle handle;

  Blobs(long ptr) {
    handle = new Handle(ptr, "blob set", Native::blobsFree);
  }

  /** One blob: its row id, size in bytes, LANCE_BLOB_* kind, whether it is NULL, and its file URI. */
  public static final class Info {
    public final long rowId;
    public final long size;
    public final int kind;
    public final boolean isNull;
    public final String uri;

    /** Built by the JNI glue (jni_statistics.c, blobsInfo) from a LanceBlobInfo. */
    Info(long rowId, long size, int kind, boolean isNull, String uri) {
      this.rowId = rowId;
      this.size = size;
      this.kind = kind;
      this.isNull = isNull;
      this.uri = uri;
    }
  }

  /** Blobs in the set (one per row id asked for, in request order). */
  public int count() {
    return (int) handle.withLong(Native::blobsCount);
  }

  /**
   * The descriptor of blob `index` (0 &lt;= index &lt; count): its row, size and whether it is null.
   *
   * @throws LanceException.InvalidArgument for an index out of range
   */
  public Info info(int index) {
    return handle.with(h -> Native.blobsInfo(h, index));
  }

  /** Bytes [offset, offset + length) of blob `index` (cut at its end). */
  public byte[] read(int index, long offset, long length) {
    return handle.with(h -> Native.blobsRead(h, index, offset, length));
  }

  /** The whole blob. */
  public byte[] readAll(int index) {
    return read(index, 0, info(index).size);
  }

  /** Frees the descriptors; reads afterwards fail with InvalidArgument. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }
}
