package org.lancehost;

/** The vector index kinds (LANCE_VECTOR_INDEX_*), for {@link Dataset#createVectorIndex}. */
public enum VectorIndexType {
  IVF_PQ(0), IVF_FLAT(1), IVF_SQ(2), IVF_HNSW_FLAT(3), IVF_HNSW_PQ(4), IVF_HNSW_SQ(5);

  final int code;

  VectorIndexType(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
