package org.lancehost;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Java batches handed to the library as an Arrow C stream, without copies: each batch's C
 * arrays point at the Arrow Java buffers, and the library's release of a batch closes it. The
 * library calls back (from its own threads, one at a time) for the schema and each batch; the
 * JNI glue (jni_host_stream.c) builds the C structs from the descriptions made here.
 *
 * <p>Ownership: each {@link VectorSchemaRoot} the iterator returns belongs to the stream from
 * then on (closed when the library releases it); the caller must not reuse or close it.
 */
final class HostStream {
  private final Schema schema;
  private final Iterator<VectorSchemaRoot> batches;
  private final Map<Long, VectorSchemaRoot> held = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private volatile boolean closed;

  HostStream(Schema schema, Iterator<VectorSchemaRoot> batches) {
    this.schema = schema;
    this.batches = batches;
    format(schema); // refuse a type the exporter does not write before anything starts
  }

  /** Batches handed to the library and not yet released by it. */
  int held() {
    return held.size();
  }

  // ---- called from C -------------------------------------------------------------------

  Object[] schemaDescription() {
    List<String> formats = new ArrayList<>();
    List<String> names = new ArrayList<>();
    List<Long> flags = new ArrayList<>();
    List<Integer> children = new ArrayList<>();
    formats.add("+s");
    names.add("");
    flags.add(0L);
    children.add(schema.getFields().size());
    for (Field f : schema.getFields()) describe(f, formats, names, flags, children);
    long[] fl = new long[flags.size()];
    int[] ch = new int[children.size()];
    for (int i = 0; i < fl.length; i++) {
      fl[i] = flags.get(i);
      ch[i] = children.get(i);
    }
    return new Object[] {formats.toArray(new String[0]), names.toArray(new String[0]), fl, ch};
  }

  long[] nextBatch() {
    if (closed || !batches.hasNext()) return null;
    VectorSchemaRoot root = batches.next();
    if (root == null) return null;
    try {
      if (!root.getSchema().equals(schema)) {
        throw new LanceException.InvalidArgument("a batch's schema " + root.getSchema() + " differs from the stream's " + schema);
      }
      long id = ids.incrementAndGet();
      List<Long> v = new ArrayList<>();
      v.add(id);
      v.add((long) root.getRowCount());
      v.add(0L);
      v.add(1L);
      v.add(0L); // the batch's struct has no validity buffer
      v.add((long) root.getFieldVectors().size());
      for (FieldVector f : root.getFieldVectors()) node(f, v);
      long[] out = new long[v.size()];
      for (int i = 0; i < out.length; i++) out[i] = v.get(i);
      held.put(id, root);
      return out;
    } catch (RuntimeException e) {
      root.close();
      throw e;
    }
  }

  void releaseBatch(long id) {
    VectorSchemaRoot root = held.remove(id);
    if (root != null) root.close();
  }

  void closeFromNative() {
    closed = true;
    // Batches the iterator still holds are the caller's: drain and close them.
    while (batches.hasNext()) {
      VectorSchemaRoot r = batches.next();
      if (r != null) r.close();
    }
  }

  // ---- descriptions --------------------------------------------------------------------

  private static void node(FieldVector f, List<Long> v) {
    List<org.apache.arrow.memory.ArrowBuf> bufs = f.getFieldBuffers();
    v.add((long) f.getValueCount());
    v.add((long) f.getNullCount());
    v.add((long) bufs.size());
    for (org.apache.arrow.memory.ArrowBuf b : bufs) v.add(b.capacity() == 0 ? 0L : b.memoryAddress());
    List<FieldVector> kids = f.getChildrenFromFields();
    v.add((long) kids.size());
    for (FieldVector k : kids) node(k, v);
  }

  private static void describe(Field f, List<String> formats, List<String> names, List<Long> flags, List<Integer> children) {
    formats.add(format(f));
    names.add(f.getName());
    flags.add(f.isNullable() ? 2L : 0L);
    children.add(f.getChildren().size());
    for (Field c : f.getChildren()) describe(c, formats, names, flags, children);
  }

  private static void format(Schema s) {
    for (Field f : s.getFields()) check(f);
  }

  private static void check(Field f) {
    format(f);
    for (Field c : f.getChildren()) check(c);
  }

  /** The C Data Interface format string of a field's type. */
  static String format(Field f) {
    if (f.getDictionary() != null) {
      throw new LanceException.NotSupported("column " + f.getName() + ": dictionary-encoded columns cannot be written from Java");
    }
    ArrowType t = f.getType();
    if (t instanceof ArrowType.Null) return "n";
    if (t instanceof ArrowType.Bool) return "b";
    if (t instanceof ArrowType.Int) {
      ArrowType.Int i = (ArrowType.Int) t;
      String s = i.getBitWidth() == 8 ? "c" : i.getBitWidth() == 16 ? "s" : i.getBitWidth() == 32 ? "i" : "l";
      return i.getIsSigned() ? s : s.toUpperCase(java.util.Locale.ROOT);
    }
    if (t instanceof ArrowType.FloatingPoint) {
      switch (((ArrowType.FloatingPoint) t).getPrecision()) {
        case HALF: return "e";
        case SINGLE: return "f";
        default: return "g";
      }
    }
    if (t instanceof ArrowType.Utf8) return "u";
    if (t instanceof ArrowType.LargeUtf8) return "U";
    if (t instanceof ArrowType.Binary) return "z";
    if (t instanceof ArrowType.LargeBinary) return "Z";
    if (t instanceof ArrowType.FixedSizeBinary) return "w:" + ((ArrowType.FixedSizeBinary) t).getByteWidth();
    if (t instanceof ArrowType.Decimal) {
      ArrowType.Decimal d = (ArrowType.Decimal) t;
      if (d.getBitWidth() != 128) throw new LanceException.NotSupported("column " + f.getName() + ": only decimal128 is written");
      return "d:" + d.getPrecision() + "," + d.getScale();
    }
    if (t instanceof ArrowType.Date) return ((ArrowType.Date) t).getUnit() == DateUnit.DAY ? "tdD" : "tdm";
    if (t instanceof ArrowType.Timestamp) {
      ArrowType.Timestamp ts = (ArrowType.Timestamp) t;
      return "ts" + unit(ts.getUnit()) + ":" + (ts.getTimezone() == null ? "" : ts.getTimezone());
    }
    if (t instanceof ArrowType.FixedSizeList) return "+w:" + ((ArrowType.FixedSizeList) t).getListSize();
    if (t instanceof ArrowType.List) return "+l";
    if (t instanceof ArrowType.LargeList) return "+L";
    if (t instanceof ArrowType.Struct) return "+s";
    throw new LanceException.NotSupported("column " + f.getName() + ": type " + t + " cannot be written from Java");
  }

  private static char unit(TimeUnit u) {
    switch (u) {
      case SECOND: return 's';
      case MILLISECOND: return 'm';
      case MICROSECOND: return 'u';
      default: return 'n';
    }
  }
}
