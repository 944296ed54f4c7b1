package org.lancehost.trino;

import io.airlift.slice.Slices;
import io.trino.spi.block.ArrayBlockBuilder;
import io.trino.spi.block.Block;
import io.trino.spi.block.BlockBuilder;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DateType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.Int128;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TimestampType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarbinaryType;
import io.trino.spi.type.VarcharType;
import java.math.BigDecimal;
import java.util.Optional;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.TimeStampMilliVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * Lance (Arrow) columns as Trino columns, and Arrow vectors as Trino blocks, value for value.
 *
 * <p>Mapped: signed integers (tinyint, smallint, integer, bigint), float (real), double, boolean,
 * utf8 and large utf8 (varchar), binary and large binary (varbinary), date32 (date), timestamps
 * without a time zone in microseconds (timestamp(6)) or milliseconds (timestamp(3)), decimal128
 * (decimal(p, s)), and fixed-size lists of float or double (vectors: array(real), array(double)).
 * Columns of other types (unsigned integers, half floats, timestamps with a zone or in
 * nanoseconds, structs, variable lists, maps, decimal256, ...) are not shown to Trino: a query
 * naming one fails as a column Trino does not know, never with a value converted wrongly.
 */
final class TypeMapping {
  private TypeMapping() {}

  static final TimestampType TIMESTAMP_MICROS = TimestampType.createTimestampType(6);
  static final TimestampType TIMESTAMP_MILLIS = TimestampType.createTimestampType(3);

  /** The Trino type of a Lance column, or empty when it is not mapped. */
  static Optional<Type> trinoType(Field f) {
    ArrowType t = f.getType();
    if (t instanceof ArrowType.Int i) {
      if (!i.getIsSigned()) return Optional.empty();
      return switch (i.getBitWidth()) {
        case 8 -> Optional.of(TinyintType.TINYINT);
        case 16 -> Optional.of(SmallintType.SMALLINT);
        case 32 -> Optional.of(IntegerType.INTEGER);
        case 64 -> Optional.of(BigintType.BIGINT);
        default -> Optional.empty();
      };
    }
    if (t instanceof ArrowType.FloatingPoint fp) {
      if (fp.getPrecision() == FloatingPointPrecision.SINGLE) return Optional.of(RealType.REAL);
      if (fp.getPrecision() == FloatingPointPrecision.DOUBLE) return Optional.of(DoubleType.DOUBLE);
      return Optional.empty();
    }
    if (t instanceof ArrowType.Bool) return Optional.of(BooleanType.BOOLEAN);
    if (t instanceof ArrowType.Utf8 || t instanceof ArrowType.LargeUtf8) return Optional.of(VarcharType.VARCHAR);
    if (t instanceof ArrowType.Binary || t instanceof ArrowType.LargeBinary) return Optional.of(VarbinaryType.VARBINARY);
    if (t instanceof ArrowType.Date d) {
      return d.getUnit() == DateUnit.DAY ? Optional.of(DateType.DATE) : Optional.empty();
    }
    if (t instanceof ArrowType.Timestamp ts) {
      if (ts.getTimezone() != null) return Optional.empty();
      if (ts.getUnit() == TimeUnit.MICROSECOND) return Optional.of(TIMESTAMP_MICROS);
      if (ts.getUnit() == TimeUnit.MILLISECOND) return Optional.of(TIMESTAMP_MILLIS);
      return Optional.empty();
    }
    if (t instanceof ArrowType.Decimal d) {
      if (d.getBitWidth() != 128 || d.getPrecision() > io.trino.spi.type.Decimals.MAX_PRECISION || d.getScale() < 0) {
        return Optional.empty();
      }
      return Optional.of(DecimalType.createDecimalType(d.getPrecision(), d.getScale()));
    }
    if (t instanceof ArrowType.FixedSizeList && f.getChildren().size() == 1) {
      ArrowType inner = f.getChildren().get(0).getType();
      if (inner instanceof ArrowType.FloatingPoint fp) {
        if (fp.getPrecision() == FloatingPointPrecision.SINGLE) return Optional.of(new ArrayType(RealType.REAL));
        if (fp.getPrecision() == FloatingPointPrecision.DOUBLE) return Optional.of(new ArrayType(DoubleType.DOUBLE));
      }
    }
    return Optional.empty();
  }

  /**
   * The Lance column CREATE TABLE makes for a Trino column (each reads back as the same Trino
   * type, VARCHAR(n) as VARCHAR), or a NOT_SUPPORTED error naming it: CHAR, TIME, timestamps
   * with a zone or another precision than 3 or 6, arrays (a vector column needs its length in the
   * table property {@code vector_columns}: {@link #vectorField}), maps, rows and the rest.
   */
  static Field arrowField(String name, Type type) {
    ArrowType t;
    if (type.equals(BigintType.BIGINT)) t = new ArrowType.Int(64, true);
    else if (type.equals(IntegerType.INTEGER)) t = new ArrowType.Int(32, true);
    else if (type.equals(SmallintType.SMALLINT)) t = new ArrowType.Int(16, true);
    else if (type.equals(TinyintType.TINYINT)) t = new ArrowType.Int(8, true);
    else if (type.equals(RealType.REAL)) t = new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
    else if (type.equals(DoubleType.DOUBLE)) t = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
    else if (type.equals(BooleanType.BOOLEAN)) t = ArrowType.Bool.INSTANCE;
    else if (type instanceof VarcharType) t = ArrowType.Utf8.INSTANCE;
    else if (type.equals(VarbinaryType.VARBINARY)) t = ArrowType.Binary.INSTANCE;
    else if (type.equals(DateType.DATE)) t = new ArrowType.Date(DateUnit.DAY);
    else if (type.equals(TIMESTAMP_MICROS)) t = new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
    else if (type.equals(TIMESTAMP_MILLIS)) t = new ArrowType.Timestamp(TimeUnit.MILLISECOND, null);
    else if (type instanceof DecimalType d) t = new ArrowType.Decimal(d.getPrecision(), d.getScale(), 128);
    else {
      throw new io.trino.spi.TrinoException(io.trino.spi.StandardErrorCode.NOT_SUPPORTED, "lance_host cannot create column '"
          + name + "' of type " + type + " (supported: BIGINT, INTEGER, SMALLINT, TINYINT, REAL, DOUBLE, BOOLEAN, "
          + "VARCHAR, VARBINARY, DATE, TIMESTAMP(3), TIMESTAMP(6), DECIMAL; ARRAY(REAL) and ARRAY(DOUBLE) as vectors "
          + "named with their length in the table property vector_columns = 'name:length')");
    }
    return Field.nullable(name, t);
  }

  /**
   * The vector column CREATE TABLE makes for an ARRAY(REAL) or ARRAY(DOUBLE) column named in the
   * table's {@code vector_columns}: a fixed-size list of `length` floats (doubles), read back as
   * the same array type; INVALID_TABLE_PROPERTY for a column of another type.
   */
  static Field vectorField(String name, Type type, int length) {
    FloatingPointPrecision precision;
    if (type.equals(new ArrayType(RealType.REAL))) precision = FloatingPointPrecision.SINGLE;
    else if (type.equals(new ArrayType(DoubleType.DOUBLE))) precision = FloatingPointPrecision.DOUBLE;
    else {
      throw new io.trino.spi.TrinoException(io.trino.spi.StandardErrorCode.INVALID_TABLE_PROPERTY, "vector_columns names '"
          + name + "' of type " + type + "; a vector column is ARRAY(REAL) or ARRAY(DOUBLE)");
    }
    Field item = Field.nullable("item", new ArrowType.FloatingPoint(precision));
    return new Field(name, org.apache.arrow.vector.types.pojo.FieldType.nullable(new ArrowType.FixedSizeList(length)),
        java.util.List.of(item));
  }

  /** The first `n` values of `v` as a block of `type`. */
  static Block block(Type type, FieldVector v, int n) {
    BlockBuilder b = type.createBlockBuilder(null, n);
    for (int i = 0; i < n; i++) {
      if (v.isNull(i)) {
        b.appendNull();
      } else {
        write(type, v, i, b);
      }
    }
    return b.build();
  }

  private static void write(Type type, FieldVector v, int i, BlockBuilder b) {
    switch (v) {
      case BigIntVector x -> BigintType.BIGINT.writeLong(b, x.get(i));
      // _rowaddr (unsigned 64-bit; fragment id << 32 | offset) as the bigint of its bits
      case org.apache.arrow.vector.UInt8Vector x -> BigintType.BIGINT.writeLong(b, x.get(i));
      // as the column's type, or widened to bigint (a cast pushed into the scan)
      case IntVector x -> type.writeLong(b, x.get(i));
      case SmallIntVector x -> type.writeLong(b, x.get(i));
      case TinyIntVector x -> type.writeLong(b, x.get(i));
      // the float's bits as they are: NaN of either sign stays that NaN
      case Float4Vector x -> RealType.REAL.writeLong(b, Float.floatToRawIntBits(x.get(i)));
      case Float8Vector x -> DoubleType.DOUBLE.writeDouble(b, x.get(i));
      case BitVector x -> BooleanType.BOOLEAN.writeBoolean(b, x.get(i) != 0);
      case VarCharVector x -> VarcharType.VARCHAR.writeSlice(b, Slices.wrappedBuffer(x.get(i)));
      case LargeVarCharVector x -> VarcharType.VARCHAR.writeSlice(b, Slices.wrappedBuffer(x.get(i)));
      case VarBinaryVector x -> VarbinaryType.VARBINARY.writeSlice(b, Slices.wrappedBuffer(x.get(i)));
      case LargeVarBinaryVector x -> VarbinaryType.VARBINARY.writeSlice(b, Slices.wrappedBuffer(x.get(i)));
      case DateDayVector x -> DateType.DATE.writeLong(b, x.get(i));
      case TimeStampMicroVector x -> TIMESTAMP_MICROS.writeLong(b, x.get(i));
      // Trino keeps timestamp(3) in microseconds too
      case TimeStampMilliVector x -> TIMESTAMP_MILLIS.writeLong(b, Math.multiplyExact(x.get(i), 1000L));
      case DecimalVector x -> {
        DecimalType d = (DecimalType) type;
        BigDecimal value = x.getObject(i);
        if (d.isShort()) {
          d.writeLong(b, value.unscaledValue().longValueExact());
        } else {
          d.writeObject(b, Int128.valueOf(value.unscaledValue()));
        }
      }
      case FixedSizeListVector x -> {
        FieldVector inner = x.getDataVector();
        int width = x.getListSize();
        int start = i * width;
        ((ArrayBlockBuilder) b).buildEntry(e -> {
          for (int j = start; j < start + width; j++) {
            if (inner.isNull(j)) {
              e.appendNull();
            } else if (inner instanceof Float4Vector f) {
              RealType.REAL.writeLong(e, Float.floatToRawIntBits(f.get(j)));
            } else {
              DoubleType.DOUBLE.writeDouble(e, ((Float8Vector) inner).get(j));
            }
          }
        });
      }
      default -> throw new IllegalStateException(
          "lance-host returned a " + v.getClass().getSimpleName() + " for a column of Trino type " + type);
    }
  }
}
