package org.lancehost.spark;

import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A fixed-size list column (a vector column) as Spark arrays, over the Arrow vector itself: row
 * i is the slice [i * size, (i + 1) * size) of the element column. Spark's ArrowColumnVector
 * does not read fixed-size lists.
 */
final class FixedSizeListColumnVector extends ColumnVector {
  private final FixedSizeListVector vector;
  private final ColumnVector elements;
  private final int size;

  FixedSizeListColumnVector(FixedSizeListVector vector, DataType type) {
    super(type);
    this.vector = vector;
    this.size = vector.getListSize();
    this.elements = SparkTypes.column(vector.getDataVector(),
        ((ArrayType) type).elementType());
  }

  @Override
  public void close() {
    elements.close();
    vector.close();
  }

  @Override
  public boolean hasNull() {
    return vector.getNullCount() > 0;
  }

  @Override
  public int numNulls() {
    return vector.getNullCount();
  }

  @Override
  public boolean isNullAt(int rowId) {
    return vector.isNull(rowId);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return new ColumnarArray(elements, rowId * size, size);
  }

  private UnsupportedOperationException notScalar() {
    return new UnsupportedOperationException("a vector column holds arrays");
  }

  @Override public boolean getBoolean(int rowId) { throw notScalar(); }
  @Override public byte getByte(int rowId) { throw notScalar(); }
  @Override public short getShort(int rowId) { throw notScalar(); }
  @Override public int getInt(int rowId) { throw notScalar(); }
  @Override public long getLong(int rowId) { throw notScalar(); }
  @Override public float getFloat(int rowId) { throw notScalar(); }
  @Override public double getDouble(int rowId) { throw notScalar(); }
  @Override public ColumnarMap getMap(int ordinal) { throw notScalar(); }
  @Override public Decimal getDecimal(int rowId, int precision, int scale) { throw notScalar(); }
  @Override public UTF8String getUTF8String(int rowId) { throw notScalar(); }
  @Override public byte[] getBinary(int rowId) { throw notScalar(); }
  @Override public ColumnVector getChild(int ordinal) { throw notScalar(); }
}
