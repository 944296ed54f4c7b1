package org.lancehost;

/** MERGE INTO: what happens to a target row a source row matches (LANCE_WHEN_MATCHED_*). */
public enum WhenMatched {
  DO_NOTHING(0), UPDATE_ALL(1), UPDATE_IF(2), DELETE(3), FAIL(4);

  final int code;

  WhenMatched(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
