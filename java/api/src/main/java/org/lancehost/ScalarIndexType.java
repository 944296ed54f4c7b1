package org.lancehost;

/** The scalar index kinds (LANCE_SCALAR_INDEX_*), for {@link Dataset#createScalarIndex}. */
public enum ScalarIndexType {
  /** Ranges and equality on any column of single values (the default). */
  BTREE(0),
  /** Few distinct values. */
  BITMAP(1),
  /** {@code array_has_any} / {@code array_has_all} on list columns. */
  LABEL_LIST(2);

  final int code;

  ScalarIndexType(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
