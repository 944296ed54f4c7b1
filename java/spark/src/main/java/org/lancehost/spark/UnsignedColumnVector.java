package org.lancehost.spark;

import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.UInt2Vector;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.ValueVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.lancehost.LanceException;

/**
 * Unsigned integers (Spark has none) widened to the next signed type over the Arrow vector:
 * uint8 as short, uint16 as int, uint32 as long, uint64 as long where it fits (a value above
 * 2^63 - 1 is an error, never a negative number).
 */
final class UnsignedColumnVector extends ColumnVector {
  private final ValueVector v;

  UnsignedColumnVector(ValueVector v) {
    super(typeOf(v));
    this.v = v;
  }

  static DataType typeOf(ValueVector v) {
    if (v instanceof UInt1Vector) return DataTypes.ShortType;
    if (v instanceof UInt2Vector) return DataTypes.IntegerType;
    return DataTypes.LongType;
  }

  @Override
  public void close() {
    v.close();
  }

  @Override
  public boolean hasNull() {
    return v.getNullCount() > 0;
  }

  @Override
  public int numNulls() {
    return v.getNullCount();
  }

  @Override
  public boolean isNullAt(int rowId) {
    return v.isNull(rowId);
  }

  @Override
  public short getShort(int rowId) {
    return (short) (((UInt1Vector) v).get(rowId) & 0xff);
  }

  @Override
  public int getInt(int rowId) {
    return ((UInt2Vector) v).get(rowId);
  }

  @Override
  public long getLong(int rowId) {
    if (v instanceof UInt4Vector) return ((UInt4Vector) v).get(rowId) & 0xffffffffL;
    long x = ((UInt8Vector) v).get(rowId);
    if (x < 0) {
      throw new LanceException.OutOfRange("column " + v.getField().getName() + ": " + Long.toUnsignedString(x)
          + " does not fit Spark's long");
    }
    return x;
  }

  private UnsupportedOperationException wrong() {
    return new UnsupportedOperationException("an unsigned integer column");
  }

  @Override public boolean getBoolean(int rowId) { throw wrong(); }
  @Override public byte getByte(int rowId) { throw wrong(); }
  @Override public float getFloat(int rowId) { throw wrong(); }
  @Override public double getDouble(int rowId) { throw wrong(); }
  @Override public ColumnarArray getArray(int rowId) { throw wrong(); }
  @Override public ColumnarMap getMap(int ordinal) { throw wrong(); }
  @Override public Decimal getDecimal(int rowId, int precision, int scale) { throw wrong(); }
  @Override public UTF8String getUTF8String(int rowId) { throw wrong(); }
  @Override public byte[] getBinary(int rowId) { throw wrong(); }
  @Override public ColumnVector getChild(int ordinal) { throw wrong(); }
}
