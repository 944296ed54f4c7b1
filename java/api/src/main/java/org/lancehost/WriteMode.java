package org.lancehost;

/** How a write meets the table (LANCE_WRITE_*): create it (an existing table is an error), append to it, or overwrite it (a new version without the old rows). */
public enum WriteMode {
  CREATE(0), APPEND(1), OVERWRITE(2);

  final int code;

  WriteMode(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
