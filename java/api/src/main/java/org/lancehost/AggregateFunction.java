package org.lancehost;

/**
 * Aggregate functions (LANCE_AGG_*) of an {@link AggregateSpec}: COUNT(*), COUNT, SUM, MIN, MAX,
 * AVG, COUNT(DISTINCT) (exact) and APPROX_COUNT_DISTINCT (a HyperLogLog estimate, standard error
 * 1.6 %, whose split partials merge).
 */
public enum AggregateFunction {
  COUNT_STAR(1), COUNT(2), SUM(3), MIN(4), MAX(5), AVG(6), COUNT_DISTINCT(7), APPROX_COUNT_DISTINCT(8);

  final int code;

  AggregateFunction(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
