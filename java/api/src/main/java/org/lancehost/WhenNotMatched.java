package org.lancehost;

/** MERGE INTO: what happens to a source row no target row matches (LANCE_WHEN_NOT_MATCHED_*). */
public enum WhenNotMatched {
  INSERT(0), DO_NOTHING(1);

  final int code;

  WhenNotMatched(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
