package org.lancehost;

/**
 * How {@link Dataset#createIndex(String, IndexOptions)} builds an index: its kind and parameters,
 * its name and whether it replaces one of that name. Immutable: each method returns a copy.
 * Thread-safe.
 */
public final class IndexOptions {
  /** 0: vector, 1: scalar, 2: full-text (the JNI glue's families). */
  final int family;
  final int type;
  final Metric metric;
  final int numPartitions;
  final int numSubVectors;
  final boolean withPositions;
  final String name;
  final boolean replace;

  private IndexOptions(int family, int type, Metric metric, int numPartitions, int numSubVectors, boolean withPositions,
      String name, boolean replace) {
    this.family = family;
    this.type = type;
    this.metric = metric;
    this.numPartitions = numPartitions;
    this.numSubVectors = numSubVectors;
    this.withPositions = withPositions;
    this.name = name;
    this.replace = replace;
  }

  /** A vector index of `type` (IVF_PQ, IVF_FLAT, ...; L2, Lance's partition and sub-vector counts). */
  public static IndexOptions vector(VectorIndexType type) {
    if (type == null) throw new LanceException.InvalidArgument("the vector index type is null");
    return new IndexOptions(0, type.code, Metric.DEFAULT, 0, 0, false, null, false);
  }

  /** A scalar index of `type` (BTREE, BITMAP, LABEL_LIST). */
  public static IndexOptions scalar(ScalarIndexType type) {
    if (type == null) throw new LanceException.InvalidArgument("the scalar index type is null");
    return new IndexOptions(1, type.code, Metric.DEFAULT, 0, 0, false, null, false);
  }

  /** A full-text (INVERTED) index; with positions it answers phrase queries. */
  public static IndexOptions fullText(boolean withPositions) {
    return new IndexOptions(2, 0, Metric.DEFAULT, 0, 0, withPositions, null, false);
  }

  /** The distance a vector index is trained for (DEFAULT: L2). */
  public IndexOptions metric(Metric m) {
    if (m == null) throw new LanceException.InvalidArgument("the metric is null");
    return new IndexOptions(family, type, m, numPartitions, numSubVectors, withPositions, name, replace);
  }

  /** IVF partitions of a vector index (0: Lance's choice from the row count). */
  public IndexOptions partitions(int n) {
    return new IndexOptions(family, type, metric, n, numSubVectors, withPositions, name, replace);
  }

  /** PQ sub-vectors of a vector index (0: Lance's choice from the dimension). */
  public IndexOptions subVectors(int n) {
    return new IndexOptions(family, type, metric, numPartitions, n, withPositions, name, replace);
  }

  /** The index's name (null: Lance's default, {@code <column>_idx}). */
  public IndexOptions name(String n) {
    return new IndexOptions(family, type, metric, numPartitions, numSubVectors, withPositions, n, replace);
  }

  /** Replace an index of the same name (else that name is refused). */
  public IndexOptions replace(boolean r) {
    return new IndexOptions(family, type, metric, numPartitions, numSubVectors, withPositions, name, r);
  }

  /** The JNI glue's parameters of this kind of index; vector parameters on another kind are refused. */
  int[] params() {
    if (family != 0 && (metric != Metric.DEFAULT || numPartitions != 0 || numSubVectors != 0)) {
      throw new LanceException.InvalidArgument("metric, partitions and subVectors are vector index options; "
          + (family == 1 ? "a scalar" : "a full-text") + " index takes none");
    }
    switch (family) {
      case 0:
        return new int[] {type, metric.code, numPartitions, numSubVectors};
      case 1:
        return new int[] {type};
      default:
        return new int[] {withPositions ? 1 : 0};
    }
  }
}
