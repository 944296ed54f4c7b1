package org.lancehost.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * How Lance's Arrow columns appear in Spark. Columns are handed over without copies: Spark's own
 * {@link ArrowColumnVector} for the types it reads, {@link FixedSizeListColumnVector} for vectors
 * (fixed-size lists become arrays) and {@link UnsignedColumnVector} for unsigned integers (widened).
 * A column of a type Spark cannot hold this way (half floats, non-microsecond timestamps,
 * fixed-size binary, large lists) is left out of the table's Spark schema.
 */
final class SparkTypes {
  private SparkTypes() {}

  private static BufferAllocator allocator;

  /** The connector's allocator (one per JVM; imported buffers are accounted in it). */
  static synchronized BufferAllocator allocator() {
    if (allocator == null) allocator = new RootAllocator();
    return allocator;
  }

  /** The Spark type of an Arrow field, or null when Spark cannot hold it without conversion. */
  static DataType of(Field f) {
    ArrowType t = f.getType();
    if (t instanceof ArrowType.Int) {
      ArrowType.Int i = (ArrowType.Int) t;
      if (!i.getIsSigned()) {
        switch (i.getBitWidth()) {
          case 8: return DataTypes.ShortType;
          case 16: return DataTypes.IntegerType;
          default: return DataTypes.LongType; // uint64 above 2^63 - 1: an error when read
        }
      }
      switch (i.getBitWidth()) {
        case 8: return DataTypes.ByteType;
        case 16: return DataTypes.ShortType;
        case 32: return DataTypes.IntegerType;
        default: return DataTypes.LongType;
      }
    }
    if (t instanceof ArrowType.FloatingPoint) {
      switch (((ArrowType.FloatingPoint) t).getPrecision()) {
        case SINGLE: return DataTypes.FloatType;
        case DOUBLE: return DataTypes.DoubleType;
        default: return null;
      }
    }
    if (t instanceof ArrowType.Bool) return DataTypes.BooleanType;
    if (t instanceof ArrowType.Utf8 || t instanceof ArrowType.LargeUtf8) return DataTypes.StringType;
    if (t instanceof ArrowType.Binary || t instanceof ArrowType.LargeBinary) return DataTypes.BinaryType;
    if (t instanceof ArrowType.Decimal) {
      ArrowType.Decimal d = (ArrowType.Decimal) t;
      return d.getPrecision() <= 38 ? DataTypes.createDecimalType(d.getPrecision(), d.getScale()) : null;
    }
    if (t instanceof ArrowType.Date) return ((ArrowType.Date) t).getUnit() == DateUnit.DAY ? DataTypes.DateType : null;
    if (t instanceof ArrowType.Timestamp) {
      ArrowType.Timestamp ts = (ArrowType.Timestamp) t;
      if (ts.getUnit() != TimeUnit.MICROSECOND) return null;
      return ts.getTimezone() == null ? DataTypes.TimestampNTZType : DataTypes.TimestampType;
    }
    if (t instanceof ArrowType.FixedSizeList || t instanceof ArrowType.List) {
      DataType e = of(f.getChildren().get(0));
      return e == null ? null : DataTypes.createArrayType(e, f.getChildren().get(0).isNullable());
    }
    if (t instanceof ArrowType.Struct) {
      List<StructField> fs = new ArrayList<>();
      for (Field c : f.getChildren()) {
        DataType ct = of(c);
        if (ct == null) return null;
        fs.add(new StructField(c.getName(), ct, c.isNullable(), Metadata.empty()));
      }
      return new StructType(fs.toArray(new StructField[0]));
    }
    return null;
  }

  /** Field metadata marking a column widened from an unsigned integer (never pushed down). */
  static final String UNSIGNED = "lance_host.unsigned";

  static boolean unsigned(StructField f) {
    return f.metadata().contains(UNSIGNED);
  }

  /**
   * Field metadata of a column read from a fixed-size list (a vector): its length. A table created
   * from such a column (CREATE TABLE AS SELECT, a write to a new table) makes it a vector again.
   */
  static final String VECTOR_LENGTH = "lance_host.vector_length";

  /** The vector length a Spark column carries (VECTOR_LENGTH), or null. */
  static Integer vectorLength(StructField f) {
    return f.metadata().contains(VECTOR_LENGTH) ? (int) f.metadata().getLong(VECTOR_LENGTH) : null;
  }

  /** The Spark schema of the columns Spark can hold. */
  static StructType schema(Schema arrow) {
    List<StructField> fs = new ArrayList<>();
    for (Field f : arrow.getFields()) {
      DataType t = of(f);
      boolean u = f.getType() instanceof ArrowType.Int && !((ArrowType.Int) f.getType()).getIsSigned();
      org.apache.spark.sql.types.MetadataBuilder mb = new org.apache.spark.sql.types.MetadataBuilder();
      if (u) mb.putBoolean(UNSIGNED, true);
      if (f.getType() instanceof ArrowType.FixedSizeList) {
        mb.putLong(VECTOR_LENGTH, ((ArrowType.FixedSizeList) f.getType()).getListSize());
      }
      if (t != null) fs.add(new StructField(f.getName(), t, f.isNullable(), mb.build()));
    }
    return new StructType(fs.toArray(new StructField[0]));
  }

  /** A Spark column over an Arrow vector (no copy); closing it closes the vector. */
  static ColumnVector column(FieldVector v, DataType expected) {
    if (v instanceof FixedSizeListVector) return new FixedSizeListColumnVector((FixedSizeListVector) v, expected);
    if (v instanceof org.apache.arrow.vector.UInt1Vector || v instanceof org.apache.arrow.vector.UInt2Vector
        || v instanceof org.apache.arrow.vector.UInt4Vector || v instanceof org.apache.arrow.vector.UInt8Vector) {
      return new UnsignedColumnVector(v);
    }
    return new ArrowColumnVector(v);
  }
}
