package org.lancehost;

/** Distance metrics (LANCE_METRIC_*): {@code DEFAULT} is L2 for a new index and the index's own for a search. */
public enum Metric {
  DEFAULT(0), L2(1), COSINE(2), DOT(3), HAMMING(4);

  final int code;

  Metric(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
