package org.lancehost;

/** What a split is (LANCE_SPLIT_*): a scan of fragments, an index segment or flat search for vectors, a full-text segment or flat search, the rows changed since a version. */
public enum SplitKind {
  SCAN(1), INDEX_SEGMENT(2), FLAT(3), FTS_SEGMENT(4), FTS_FLAT(5), CHANGES(6);

  final int code;

  SplitKind(int code) {
    this.code = code;
  }

  /** The kind of a C API value (an unknown value: InvalidArgument). */
  public static SplitKind of(int code) {
    for (SplitKind k : values()) if (k.code == code) return k;
    throw new LanceException.InvalidArgument("split kind " + code + " is none this library knows");
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
