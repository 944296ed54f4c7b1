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

  /** Built by the JNI glue (jni_split.c, splitInfo). */
  Split(int kind, long version, long rowCount, long sliceOffset, long sliceCount) {
    this.kind = kind;
    this.version = version;
    this.rowCount = rowCount;
    this.sliceOffset = sliceOffset;
    this.sliceCount = sliceCount;
  }

  /**
   * Combines splits of one plan into one split's bytes ({@code lance_splits_combine}): scans of
   * one snapshot, index segment splits of one index, flat or full-text splits; a combined split
   * returns what the separate ones return after a merge. Hosts with fewer workers than splits
   * ship one task per worker this way.
   *
   * @throws LanceException.InvalidArgument for no splits or splits that cannot be combined (the
   *     message names the first one and what differs)
   * @throws LanceException.Corrupt for bytes that are no split
   */
  public static byte[] combine(java.util.List<byte[]> splits) {
    if (splits == null || splits.isEmpty()) throw new LanceException.InvalidArgument("no splits to combine");
    return Native.splitsCombine(splits.toArray(new byte[0][]));
  }

  /** Decodes `bytes`; {@link LanceException.Corrupt} or InvalidArgument for bytes that are no split. */
  public static Split info(byte[] bytes) {
    return Native.splitInfo(bytes);
  }

  /** {@link #kind()} as an enum. */
  public SplitKind splitKind() {
    return SplitKind.of(kind);
  }

  /** The kind as the C value (SCAN, INDEX_SEGMENT, ...; {@link #splitKind()} as an enum). */
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
