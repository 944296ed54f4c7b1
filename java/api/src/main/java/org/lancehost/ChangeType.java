package org.lancehost;

/** Kinds of row changes a change plan reads (LANCE_CHANGE_* bits): rows inserted, updated or deleted since a version. */
public enum ChangeType {
  INSERTED(1), UPDATED(2), DELETED(4);

  final int code;

  ChangeType(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
