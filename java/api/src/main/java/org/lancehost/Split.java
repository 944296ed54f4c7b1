package org.lancehost;

/** What a split's bytes say about it (read without opening the table). */
public final class Split {
  /** LANCE_SPLIT_* kinds. */
  public static final int SCAN = 1, INDEX_SEGMENT = 2, FLAT = 3, FTS_SEGMENT = 4, FTS_FLAT = 5;

  private final int kind;
  private final long version;
  private final long rowCount;
  private final long sliceOffset;
  private final long sliceCount;

  private Split(long[] v) {
    kind = (int) v[0];
    version = v[1];
    rowCount = v[2];
    sliceOffset = v[3];
    sliceCount = v[4];
  }

  /** Decodes `bytes`; {@link LanceException.Corrupt} or InvalidArgument for bytes that are no split. */
  public static Split info(byte[] bytes) {
    return new Split(Native.splitInfo(bytes));
  }

  public int kind() {
    return kind;
  }

  /** The table version the split was planned on. */
  public long version() {
    return version;
  }

  /** Visible rows the split covers. */
  public long rowCount() {
    return rowCount;
  }

  /** The first row of a row-slice split inside its fragment, or -1 for whole fragments. */
  public long sliceOffset() {
    return sliceOffset;
  }

  /** The rows of a row-slice split, or -1 for whole fragments. */
  public long sliceCount() {
    return sliceCount;
  }
}
