package org.lancehost.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
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
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.lancehost.LanceException;

/**
 * Spark rows into Arrow batches of the table's Arrow schema. Each Spark column must have a type
 * that holds exactly the target column's values (a fixed-size list takes arrays of its length
 * only); anything else is refused when the write is planned, and a vector of the wrong length
 * when it is written: never a silent cast.
 */
final class RowsToArrow {
  private final Schema schema;
  private final Setter[] setters;
  private final int[] ordinals;
  private VectorSchemaRoot root;
  private int rows;

  /** A value of Spark's row (or array) at `ordinal` into a vector's slot. */
  interface Setter {
    void set(FieldVector v, SpecializedGetters row, int ordinal, int slot);
  }

  /**
   * The Arrow schema a new table gets for a Spark schema (`vectors`: column -> fixed list length;
   * a column read from a vector keeps its length, SparkTypes.VECTOR_LENGTH, unless `vectors` names
   * it).
   */
  static Schema arrowSchema(StructType spark, java.util.Map<String, Integer> vectors) {
    List<Field> fs = new ArrayList<>();
    for (StructField f : spark.fields()) {
      Integer length = vectors.containsKey(f.name()) ? vectors.get(f.name()) : SparkTypes.vectorLength(f);
      fs.add(field(f.name(), f.dataType(), f.nullable(), length));
    }
    return new Schema(fs);
  }

  private static Field field(String name, DataType t, boolean nullable, Integer fixedLength) {
    if (t instanceof ArrayType) {
      ArrayType a = (ArrayType) t;
      Field item = field("item", a.elementType(), a.containsNull(), null);
      ArrowType at = fixedLength != null ? new ArrowType.FixedSizeList(fixedLength) : ArrowType.List.INSTANCE;
      return new Field(name, new FieldType(nullable, at, null), List.of(item));
    }
    if (fixedLength != null) {
      throw new LanceException.InvalidArgument("vector column " + name + " must be an array, not " + t.simpleString());
    }
    if (t instanceof StructType) {
      List<Field> kids = new ArrayList<>();
      for (StructField f : ((StructType) t).fields()) kids.add(field(f.name(), f.dataType(), f.nullable(), null));
      return new Field(name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null), kids);
    }
    return new Field(name, new FieldType(nullable, scalar(name, t), null), List.of());
  }

  private static ArrowType scalar(String name, DataType t) {
    if (t.equals(DataTypes.BooleanType)) return ArrowType.Bool.INSTANCE;
    if (t.equals(DataTypes.ByteType)) return new ArrowType.Int(8, true);
    if (t.equals(DataTypes.ShortType)) return new ArrowType.Int(16, true);
    if (t.equals(DataTypes.IntegerType)) return new ArrowType.Int(32, true);
    if (t.equals(DataTypes.LongType)) return new ArrowType.Int(64, true);
    if (t.equals(DataTypes.FloatType)) return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
    if (t.equals(DataTypes.DoubleType)) return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
    if (t.equals(DataTypes.StringType)) return ArrowType.Utf8.INSTANCE;
    if (t.equals(DataTypes.BinaryType)) return ArrowType.Binary.INSTANCE;
    if (t.equals(DataTypes.DateType)) return new ArrowType.Date(DateUnit.DAY);
    if (t.equals(DataTypes.TimestampType)) return new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC");
    if (t.equals(DataTypes.TimestampNTZType)) return new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
    if (t instanceof DecimalType) {
      DecimalType d = (DecimalType) t;
      return new ArrowType.Decimal(d.precision(), d.scale(), 128);
    }
    throw new LanceException.NotSupported("column " + name + ": Spark type " + t.simpleString() + " cannot be written");
  }

  /**
   * A converter from rows of `spark` into batches of `target`: columns matched by name (every
   * target column must be present, no other), each checked now.
   */
  RowsToArrow(StructType spark, Schema target) {
    this.schema = target;
    List<String> missing = new ArrayList<>();
    setters = new Setter[target.getFields().size()];
    ordinals = new int[setters.length];
    for (int i = 0; i < setters.length; i++) {
      Field f = target.getFields().get(i);
      int ord;
      try {
        ord = spark.fieldIndex(f.getName());
      } catch (IllegalArgumentException e) {
        missing.add(f.getName());
        continue;
      }
      ordinals[i] = ord;
      setters[i] = setter(f, spark.fields()[ord].dataType());
    }
    if (!missing.isEmpty()) {
      throw new LanceException.InvalidArgument("the data has no column " + String.join(", ", missing)
          + " of the table (its columns: " + target.getFields().stream().map(Field::getName).toList() + ")");
    }
    if (spark.fields().length != setters.length) {
      List<String> extra = new ArrayList<>();
      for (String n : spark.fieldNames()) if (target.findField(n) == null) extra.add(n);
      throw new LanceException.InvalidArgument("the table has no column " + String.join(", ", extra));
    }
  }

  private static LanceException mismatch(Field f, DataType t) {
    return new LanceException.InvalidArgument("column " + f.getName() + " of type " + f.getType()
        + " cannot take Spark values of type " + t.simpleString());
  }

  private static Setter setter(Field f, DataType t) {
    ArrowType a = f.getType();
    boolean ok;
    if (a instanceof ArrowType.FixedSizeList || a instanceof ArrowType.List) {
      if (!(t instanceof ArrayType)) throw mismatch(f, t);
      Field item = f.getChildren().get(0);
      Setter inner = setter(item, ((ArrayType) t).elementType());
      if (a instanceof ArrowType.FixedSizeList) {
        int n = ((ArrowType.FixedSizeList) a).getListSize();
        return (v, row, ord, slot) -> {
          FixedSizeListVector l = (FixedSizeListVector) v;
          org.apache.spark.sql.catalyst.util.ArrayData arr = row.getArray(ord);
          if (arr.numElements() != n) {
            throw new LanceException.InvalidArgument("column " + f.getName() + " holds vectors of " + n
                + " values; a row has " + arr.numElements());
          }
          l.setNotNull(slot);
          FieldVector d = l.getDataVector();
          for (int j = 0; j < n; j++) {
            if (arr.isNullAt(j)) setNull(d, slot * n + j);
            else inner.set(d, arr, j, slot * n + j);
          }
        };
      }
      return (v, row, ord, slot) -> {
        ListVector l = (ListVector) v;
        org.apache.spark.sql.catalyst.util.ArrayData arr = row.getArray(ord);
        int start = l.startNewValue(slot);
        FieldVector d = l.getDataVector();
        for (int j = 0; j < arr.numElements(); j++) {
          if (arr.isNullAt(j)) setNull(d, start + j);
          else inner.set(d, arr, j, start + j);
        }
        l.endValue(slot, arr.numElements());
      };
    }
    if (a instanceof ArrowType.Struct) {
      if (!(t instanceof StructType)) throw mismatch(f, t);
      StructType st = (StructType) t;
      List<Field> kids = f.getChildren();
      if (kids.size() != st.fields().length) throw mismatch(f, t);
      Setter[] inner = new Setter[kids.size()];
      int[] ords = new int[kids.size()];
      for (int i = 0; i < inner.length; i++) {
        ords[i] = st.fieldIndex(kids.get(i).getName());
        inner[i] = setter(kids.get(i), st.fields()[ords[i]].dataType());
      }
      return (v, row, ord, slot) -> {
        StructVector s = (StructVector) v;
        org.apache.spark.sql.catalyst.InternalRow r = row.getStruct(ord, inner.length);
        s.setIndexDefined(slot);
        for (int i = 0; i < inner.length; i++) {
          FieldVector c = (FieldVector) s.getChildByOrdinal(i);
          if (r.isNullAt(ords[i])) setNull(c, slot);
          else inner[i].set(c, r, ords[i], slot);
        }
      };
    }
    if (a instanceof ArrowType.Bool) {
      ok = t.equals(DataTypes.BooleanType);
      if (!ok) throw mismatch(f, t);
      return (v, row, ord, slot) -> ((BitVector) v).setSafe(slot, row.getBoolean(ord) ? 1 : 0);
    }
    if (a instanceof ArrowType.Int && ((ArrowType.Int) a).getIsSigned()) {
      switch (((ArrowType.Int) a).getBitWidth()) {
        case 8:
          if (!t.equals(DataTypes.ByteType)) throw mismatch(f, t);
          return (v, row, ord, slot) -> ((TinyIntVector) v).setSafe(slot, row.getByte(ord));
        case 16:
          if (!t.equals(DataTypes.ShortType)) throw mismatch(f, t);
          return (v, row, ord, slot) -> ((SmallIntVector) v).setSafe(slot, row.getShort(ord));
        case 32:
          if (!t.equals(DataTypes.IntegerType)) throw mismatch(f, t);
          return (v, row, ord, slot) -> ((IntVector) v).setSafe(slot, row.getInt(ord));
        default:
          if (!t.equals(DataTypes.LongType)) throw mismatch(f, t);
          return (v, row, ord, slot) -> ((BigIntVector) v).setSafe(slot, row.getLong(ord));
      }
    }
    if (a instanceof ArrowType.FloatingPoint) {
      FloatingPointPrecision p = ((ArrowType.FloatingPoint) a).getPrecision();
      if (p == FloatingPointPrecision.SINGLE && t.equals(DataTypes.FloatType)) {
        return (v, row, ord, slot) -> ((Float4Vector) v).setSafe(slot, row.getFloat(ord));
      }
      if (p == FloatingPointPrecision.DOUBLE && t.equals(DataTypes.DoubleType)) {
        return (v, row, ord, slot) -> ((Float8Vector) v).setSafe(slot, row.getDouble(ord));
      }
      throw mismatch(f, t);
    }
    if (a instanceof ArrowType.Utf8 || a instanceof ArrowType.LargeUtf8) {
      if (!t.equals(DataTypes.StringType)) throw mismatch(f, t);
      if (a instanceof ArrowType.Utf8) return (v, row, ord, slot) -> ((VarCharVector) v).setSafe(slot, row.getUTF8String(ord).getBytes());
      return (v, row, ord, slot) -> ((LargeVarCharVector) v).setSafe(slot, row.getUTF8String(ord).getBytes());
    }
    if (a instanceof ArrowType.Binary || a instanceof ArrowType.LargeBinary) {
      if (!t.equals(DataTypes.BinaryType)) throw mismatch(f, t);
      if (a instanceof ArrowType.Binary) return (v, row, ord, slot) -> ((VarBinaryVector) v).setSafe(slot, row.getBinary(ord));
      return (v, row, ord, slot) -> ((LargeVarBinaryVector) v).setSafe(slot, row.getBinary(ord));
    }
    if (a instanceof ArrowType.Date && ((ArrowType.Date) a).getUnit() == DateUnit.DAY) {
      if (!t.equals(DataTypes.DateType)) throw mismatch(f, t);
      return (v, row, ord, slot) -> ((DateDayVector) v).setSafe(slot, row.getInt(ord));
    }
    if (a instanceof ArrowType.Timestamp && ((ArrowType.Timestamp) a).getUnit() == TimeUnit.MICROSECOND) {
      boolean tz = ((ArrowType.Timestamp) a).getTimezone() != null;
      if (tz && t.equals(DataTypes.TimestampType)) {
        return (v, row, ord, slot) -> ((TimeStampMicroTZVector) v).setSafe(slot, row.getLong(ord));
      }
      if (!tz && t.equals(DataTypes.TimestampNTZType)) {
        return (v, row, ord, slot) -> ((TimeStampMicroVector) v).setSafe(slot, row.getLong(ord));
      }
      throw mismatch(f, t);
    }
    if (a instanceof ArrowType.Decimal && t instanceof DecimalType) {
      ArrowType.Decimal d = (ArrowType.Decimal) a;
      DecimalType dt = (DecimalType) t;
      if (d.getBitWidth() != 128 || dt.precision() > d.getPrecision() || dt.scale() != d.getScale()) throw mismatch(f, t);
      return (v, row, ord, slot) ->
          ((DecimalVector) v).setSafe(slot, row.getDecimal(ord, dt.precision(), dt.scale()).toJavaBigDecimal());
    }
    throw mismatch(f, t);
  }

  private static void setNull(FieldVector v, int slot) {
    if (v instanceof FixedSizeListVector) {
      FixedSizeListVector l = (FixedSizeListVector) v;
      l.setNull(slot);
      // the null row's slots still exist in the child: keep it as long as the list
      FieldVector d = l.getDataVector();
      for (int j = 0; j < l.getListSize(); j++) setNull(d, slot * l.getListSize() + j);
      return;
    }
    if (v instanceof ListVector) {
      ListVector l = (ListVector) v;
      l.startNewValue(slot);
      l.endValue(slot, 0);
      l.setNull(slot);
      return;
    }
    if (v instanceof StructVector) {
      ((StructVector) v).setNull(slot);
      for (FieldVector c : v.getChildrenFromFields()) setNull(c, slot);
      return;
    }
    if (v instanceof org.apache.arrow.vector.BaseFixedWidthVector) {
      org.apache.arrow.vector.BaseFixedWidthVector b = (org.apache.arrow.vector.BaseFixedWidthVector) v;
      while (b.getValueCapacity() <= slot) b.reAlloc();
      b.setNull(slot);
      return;
    }
    if (v instanceof org.apache.arrow.vector.BaseVariableWidthVector) {
      ((org.apache.arrow.vector.BaseVariableWidthVector) v).setNull(slot);
      return;
    }
    if (v instanceof org.apache.arrow.vector.BaseLargeVariableWidthVector) {
      ((org.apache.arrow.vector.BaseLargeVariableWidthVector) v).setNull(slot);
      return;
    }
    throw new LanceException.NotSupported("cannot write a null into " + v.getField());
  }

  /** Appends one row; returns the rows in the current batch. */
  int add(org.apache.spark.sql.catalyst.InternalRow row, BufferAllocator allocator) {
    if (root == null) {
      root = VectorSchemaRoot.create(schema, allocator);
      root.allocateNew();
      rows = 0;
    }
    for (int i = 0; i < setters.length; i++) {
      FieldVector v = root.getVector(i);
      if (row.isNullAt(ordinals[i])) {
        if (!v.getField().isNullable()) {
          throw new LanceException.InvalidArgument("column " + v.getName() + " is not nullable; a row has NULL");
        }
        setNull(v, rows);
      } else {
        setters[i].set(v, row, ordinals[i], rows);
      }
    }
    return ++rows;
  }

  /** The batch so far (owned by the caller), or null when empty. */
  VectorSchemaRoot take() {
    if (root == null || rows == 0) return null;
    for (FieldVector v : root.getFieldVectors()) setCounts(v, rows);
    root.setRowCount(rows);
    VectorSchemaRoot out = root;
    root = null;
    rows = 0;
    return out;
  }

  private static void setCounts(FieldVector v, int n) {
    if (v instanceof FixedSizeListVector) {
      FixedSizeListVector l = (FixedSizeListVector) v;
      setCounts(l.getDataVector(), n * l.getListSize());
      l.setValueCount(n);
      return;
    }
    if (v instanceof ListVector) {
      ListVector l = (ListVector) v;
      l.setLastSet(n - 1);
      int children = n == 0 ? 0 : l.getOffsetBuffer().getInt((long) n * 4);
      setCounts(l.getDataVector(), children);
      l.setValueCount(n);
      return;
    }
    if (v instanceof StructVector) {
      for (FieldVector c : v.getChildrenFromFields()) setCounts(c, n);
    }
    v.setValueCount(n);
  }

  void close() {
    if (root != null) root.close();
    root = null;
  }
}
