package org.lancehost.trino;

import io.airlift.slice.Slice;
import io.trino.spi.Page;
import io.trino.spi.block.Block;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.Int128;
import io.trino.spi.type.RealType;
import io.trino.spi.type.Type;
import java.math.BigDecimal;
import java.math.BigInteger;
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
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.TimeStampMilliVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Trino pages as Arrow batches of a table's own schema (the inverse of TypeMapping), value for
 * value: a value the table's column cannot hold (a vector of another length, a timestamp(3)
 * column given sub-millisecond digits) is refused, never changed.
 */
final class ArrowWriter {
  private ArrowWriter() {}

  /** `page` as a batch of `schema` (whose fields are `columns`, in order). Caller closes it. */
  static VectorSchemaRoot batch(Page page, Schema schema, List<LanceHostColumnHandle> columns, BufferAllocator allocator) {
    int n = page.getPositionCount();
    List<FieldVector> vectors = new ArrayList<>();
    try {
      for (int c = 0; c < columns.size(); c++) {
        Field f = schema.getFields().get(c);
        FieldVector v = f.createVector(allocator);
        vectors.add(v);
        v.setInitialCapacity(n);
        v.allocateNew();
        fill(v, columns.get(c), page.getBlock(c), n);
        v.setValueCount(n);
      }
      VectorSchemaRoot root = new VectorSchemaRoot(schema.getFields(), vectors, n);
      return root;
    } catch (RuntimeException e) {
      vectors.forEach(FieldVector::close);
      throw e;
    }
  }

  private static void fill(FieldVector v, LanceHostColumnHandle c, Block b, int n) {
    Type t = c.type();
    for (int i = 0; i < n; i++) {
      if (b.isNull(i)) {
        if (!v.getField().isNullable()) {
          throw new IllegalArgumentException("column '" + c.name() + "' of the table does not take NULL");
        }
        v.setNull(i);
        continue;
      }
      switch (v) {
        case BigIntVector x -> x.setSafe(i, t.getLong(b, i));
        case IntVector x -> x.setSafe(i, (int) t.getLong(b, i));
        case SmallIntVector x -> x.setSafe(i, (short) t.getLong(b, i));
        case TinyIntVector x -> x.setSafe(i, (byte) t.getLong(b, i));
        case Float4Vector x -> x.setSafe(i, RealType.REAL.getFloat(b, i));
        case Float8Vector x -> x.setSafe(i, t.getDouble(b, i));
        case BitVector x -> x.setSafe(i, t.getBoolean(b, i) ? 1 : 0);
        case VarCharVector x -> x.setSafe(i, bytes(t.getSlice(b, i)));
        case LargeVarCharVector x -> x.setSafe(i, bytes(t.getSlice(b, i)));
        case VarBinaryVector x -> x.setSafe(i, bytes(t.getSlice(b, i)));
        case LargeVarBinaryVector x -> x.setSafe(i, bytes(t.getSlice(b, i)));
        case DateDayVector x -> x.setSafe(i, Math.toIntExact(t.getLong(b, i)));
        case TimeStampMicroVector x -> x.setSafe(i, t.getLong(b, i));
        case TimeStampMilliVector x -> {
          long micros = t.getLong(b, i);
          if (micros % 1000 != 0) {
            throw new IllegalArgumentException("column '" + c.name() + "' keeps milliseconds; the value has microseconds");
          }
          x.setSafe(i, micros / 1000);
        }
        case DecimalVector x -> {
          DecimalType d = (DecimalType) t;
          BigInteger unscaled = d.isShort() ? BigInteger.valueOf(d.getLong(b, i)) : ((Int128) d.getObject(b, i)).toBigInteger();
          x.setSafe(i, new BigDecimal(unscaled, d.getScale()));
        }
        case FixedSizeListVector x -> {
          Block elements = ((ArrayType) t).getObject(b, i);
          Type et = ((ArrayType) t).getElementType();
          int width = x.getListSize();
          if (elements.getPositionCount() != width) {
            throw new IllegalArgumentException("column '" + c.name() + "' holds vectors of " + width
                + " values; a row has " + elements.getPositionCount());
          }
          FieldVector inner = x.getDataVector();
          int start = i * width;
          if (inner.getValueCapacity() < start + width) inner.setInitialCapacity(start + width);
          for (int j = 0; j < width; j++) {
            if (elements.isNull(j)) {
              inner.setNull(start + j);
            } else if (inner instanceof Float4Vector f) {
              f.setSafe(start + j, RealType.REAL.getFloat(elements, j));
            } else {
              ((Float8Vector) inner).setSafe(start + j, et.getDouble(elements, j));
            }
          }
          x.setNotNull(i);
          inner.setValueCount(Math.max(inner.getValueCount(), start + width));
        }
        default -> throw new IllegalStateException("no Arrow writer for column '" + c.name() + "' (" + t + ")");
      }
    }
  }

  private static byte[] bytes(Slice s) {
    return s.getBytes();
  }
}
