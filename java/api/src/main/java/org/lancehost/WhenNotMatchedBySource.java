package org.lancehost;

/** MERGE INTO: what happens to a target row no source row matches (LANCE_WHEN_NOT_MATCHED_BY_SOURCE_*). */
public enum WhenNotMatchedBySource {
  KEEP(0), DELETE(1), DELETE_IF(2);

  final int code;

  WhenNotMatchedBySource(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
