package org.lancehost;

/** Aggregate functions (LANCE_AGG_*) of an {@link AggregateSpec}: COUNT(*), COUNT, SUM, MIN, MAX, AVG. */
public enum AggregateFunction {
  COUNT_STAR(1), COUNT(2), SUM(3), MIN(4), MAX(5), AVG(6), COUNT_DISTINCT(7);

  final int code;

  AggregateFunction(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
