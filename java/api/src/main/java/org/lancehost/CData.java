package org.lancehost;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.TransferPair;

/**
 * Imports the Arrow C Data Interface (ArrowSchema, ArrowArray) into Arrow Java without copying:
 * every buffer of an imported batch is the C buffer itself, wrapped as an {@link ArrowBuf} whose
 * release drops one reference of the batch; when the last buffer is released, the batch's C
 * {@code release} callback runs. The only copies are of arrays exported with a non-zero offset
 * (Arrow Java vectors start at 0): those are sliced by Arrow Java's transfer, which copies what
 * cannot be sliced in place.
 *
 * <p>Types: null, boolean, signed and unsigned integers, half/single/double floats, decimal128,
 * (large) utf8 and binary, fixed-size binary, dates, times, timestamps, durations, (large) lists,
 * fixed-size lists, structs and maps. Anything else (dictionaries, views, unions) is refused with
 * {@link LanceException.NotSupported} before any data is touched.
 */
final class CData {
  private CData() {}

  private static final java.util.concurrent.atomic.AtomicLong LIVE = new java.util.concurrent.atomic.AtomicLong();

  /** Imported C batches whose memory is still held (a leak check: 0 once every batch is closed). */
  static long liveBatches() {
    return LIVE.get();
  }

  // struct ArrowSchema (64-bit): format, name, metadata, flags, n_children, children, dictionary, release, private_data
  private static final int S_FORMAT = 0, S_NAME = 8, S_METADATA = 16, S_FLAGS = 24, S_N_CHILDREN = 32,
      S_CHILDREN = 40, S_DICTIONARY = 48;
  // struct ArrowArray: length, null_count, offset, n_buffers, n_children, buffers, children, dictionary, release, private_data
  private static final int A_LENGTH = 0, A_NULL_COUNT = 8, A_OFFSET = 16, A_N_BUFFERS = 24, A_N_CHILDREN = 32,
      A_BUFFERS = 40, A_CHILDREN = 48, A_DICTIONARY = 56, A_RELEASE = 64;
  private static final long FLAG_NULLABLE = 2;

  static String cString(long p) {
    if (p == 0) return null;
    int n = 0;
    while (NativeMemory.getByte(p + n) != 0) n++;
    byte[] b = new byte[n];
    NativeMemory.copyToArray(p, b, 0, n);
    return new String(b, StandardCharsets.UTF_8);
  }

  /** The schema of a malloc'd ArrowSchema (a struct of columns); releases it. */
  static Schema importSchema(long schema) {
    try {
      Field root = field(schema);
      if (!(root.getType() instanceof ArrowType.Struct)) {
        throw new LanceException.InvalidArgument("a record batch schema must be a struct, not " + root.getType());
      }
      return new Schema(root.getChildren(), root.getMetadata());
    } finally {
      Native.schemaRelease(schema);
    }
  }

  private static Field field(long s) {
    String format = cString(NativeMemory.getLong(s + S_FORMAT));
    String name = cString(NativeMemory.getLong(s + S_NAME));
    Map<String, String> metadata = metadata(NativeMemory.getLong(s + S_METADATA));
    long flags = NativeMemory.getLong(s + S_FLAGS);
    if (NativeMemory.getLong(s + S_DICTIONARY) != 0) {
      throw new LanceException.NotSupported("column " + name + ": dictionary-encoded columns are not supported by the Java API");
    }
    long n = NativeMemory.getLong(s + S_N_CHILDREN);
    long children = NativeMemory.getLong(s + S_CHILDREN);
    List<Field> kids = new ArrayList<>();
    for (long i = 0; i < n; i++) kids.add(field(NativeMemory.getLong(children + 8 * i)));
    ArrowType type = type(format, name, flags);
    return new Field(name == null ? "" : name, new FieldType((flags & FLAG_NULLABLE) != 0, type, null, metadata), kids);
  }

  private static Map<String, String> metadata(long p) {
    if (p == 0) return null;
    Map<String, String> out = new HashMap<>();
    int n = NativeMemory.getInt(p);
    long q = p + 4;
    for (int i = 0; i < n; i++) {
      int kl = NativeMemory.getInt(q);
      byte[] k = new byte[kl];
      NativeMemory.copyToArray(q + 4, k, 0, kl);
      q += 4 + kl;
      int vl = NativeMemory.getInt(q);
      byte[] v = new byte[vl];
      NativeMemory.copyToArray(q + 4, v, 0, vl);
      q += 4 + vl;
      out.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8));
    }
    return out;
  }

  private static ArrowType type(String f, String name, long flags) {
    switch (f) {
      case "n": return ArrowType.Null.INSTANCE;
      case "b": return ArrowType.Bool.INSTANCE;
      case "c": return new ArrowType.Int(8, true);
      case "C": return new ArrowType.Int(8, false);
      case "s": return new ArrowType.Int(16, true);
      case "S": return new ArrowType.Int(16, false);
      case "i": return new ArrowType.Int(32, true);
      case "I": return new ArrowType.Int(32, false);
      case "l": return new ArrowType.Int(64, true);
      case "L": return new ArrowType.Int(64, false);
      case "e": return new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
      case "f": return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
      case "g": return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
      case "z": return ArrowType.Binary.INSTANCE;
      case "Z": return ArrowType.LargeBinary.INSTANCE;
      case "u": return ArrowType.Utf8.INSTANCE;
      case "U": return ArrowType.LargeUtf8.INSTANCE;
      case "tdD": return new ArrowType.Date(DateUnit.DAY);
      case "tdm": return new ArrowType.Date(DateUnit.MILLISECOND);
      case "tts": return new ArrowType.Time(TimeUnit.SECOND, 32);
      case "ttm": return new ArrowType.Time(TimeUnit.MILLISECOND, 32);
      case "ttu": return new ArrowType.Time(TimeUnit.MICROSECOND, 64);
      case "ttn": return new ArrowType.Time(TimeUnit.NANOSECOND, 64);
      case "tDs": return new ArrowType.Duration(TimeUnit.SECOND);
      case "tDm": return new ArrowType.Duration(TimeUnit.MILLISECOND);
      case "tDu": return new ArrowType.Duration(TimeUnit.MICROSECOND);
      case "tDn": return new ArrowType.Duration(TimeUnit.NANOSECOND);
      case "+l": return ArrowType.List.INSTANCE;
      case "+L": return ArrowType.LargeList.INSTANCE;
      case "+s": return ArrowType.Struct.INSTANCE;
      case "+m": return new ArrowType.Map((flags & 4) != 0);
      default: break;
    }
    try {
      if (f.startsWith("ts") && f.length() >= 4 && f.charAt(3) == ':') {
        String tz = f.substring(4);
        return new ArrowType.Timestamp(unit(f.charAt(2), f), tz.isEmpty() ? null : tz);
      }
      if (f.startsWith("w:")) return new ArrowType.FixedSizeBinary(Integer.parseInt(f.substring(2)));
      if (f.startsWith("+w:")) return new ArrowType.FixedSizeList(Integer.parseInt(f.substring(3)));
      if (f.startsWith("d:")) {
        String[] p = f.substring(2).split(",");
        int width = p.length > 2 ? Integer.parseInt(p[2]) : 128;
        if (width != 128) throw unsupported(name, f);
        return new ArrowType.Decimal(Integer.parseInt(p[0]), Integer.parseInt(p[1]), 128);
      }
    } catch (NumberFormatException e) {
      throw new LanceException.InvalidArgument("column " + name + ": malformed Arrow format string '" + f + "'");
    }
    throw unsupported(name, f);
  }

  private static TimeUnit unit(char c, String f) {
    switch (c) {
      case 's': return TimeUnit.SECOND;
      case 'm': return TimeUnit.MILLISECOND;
      case 'u': return TimeUnit.MICROSECOND;
      case 'n': return TimeUnit.NANOSECOND;
      default: throw new NumberFormatException(f);
    }
  }

  private static LanceException unsupported(String name, String format) {
    return new LanceException.NotSupported("column " + name + ": Arrow type with format '" + format
        + "' is not supported by the Java API");
  }

  /**
   * A batch from a malloc'd ArrowArray of `schema`'s struct type. Takes ownership of the
   * array: it is released when the returned root (every vector) is closed, or here on failure.
   */
  static VectorSchemaRoot importBatch(long array, Schema schema, BufferAllocator allocator) {
    Owner owner = new Owner(array);
    List<FieldVector> vectors = new ArrayList<>();
    try {
      long n = NativeMemory.getLong(array + A_N_CHILDREN);
      if (n != schema.getFields().size()) {
        throw new LanceException.InvalidArgument("a batch has " + n + " columns, its schema " + schema.getFields().size());
      }
      long length = NativeMemory.getLong(array + A_LENGTH);
      long offset = NativeMemory.getLong(array + A_OFFSET);
      long children = NativeMemory.getLong(array + A_CHILDREN);
      for (int i = 0; i < n; i++) {
        FieldVector v = schema.getFields().get(i).createVector(allocator);
        vectors.add(v);
        load(v, NativeMemory.getLong(children + 8L * i), offset, length, allocator, owner);
      }
      return new VectorSchemaRoot(schema.getFields(), vectors, checkedInt(length, "batch length"));
    } catch (RuntimeException e) {
      for (FieldVector v : vectors) v.close();
      throw e;
    } finally {
      owner.release(); // the importer's own reference; buffers hold theirs
    }
  }

  /**
   * Loads C array `a` into `target`, as `length` rows starting at `extra` rows past the array's
   * own offset (a parent struct's offset applies to its children).
   */
  private static void load(FieldVector target, long a, long extra, long length, BufferAllocator allocator, Owner owner) {
    long offset = NativeMemory.getLong(a + A_OFFSET) + extra;
    long own = NativeMemory.getLong(a + A_LENGTH);
    if (extra == 0) length = own;
    if (offset == 0) {
      loadPhysical(target, a, length, NativeMemory.getLong(a + A_NULL_COUNT), allocator, owner);
      return;
    }
    try (FieldVector whole = target.getField().createVector(allocator)) {
      loadPhysical(whole, a, offset + length, -1, allocator, owner);
      TransferPair t = whole.makeTransferPair(target);
      t.splitAndTransfer(checkedInt(offset, "offset"), checkedInt(length, "length"));
    }
  }

  /** Loads rows 0..len of `a` (ignoring its offset, which the caller accounted for). */
  private static void loadPhysical(FieldVector v, long a, long len, long nullCount, BufferAllocator allocator, Owner owner) {
    if (NativeMemory.getLong(a + A_DICTIONARY) != 0) {
      throw new LanceException.NotSupported("column " + v.getName() + ": dictionary arrays are not supported");
    }
    ArrowType type = v.getField().getType();
    long nBuffers = NativeMemory.getLong(a + A_N_BUFFERS);
    long buffers = NativeMemory.getLong(a + A_BUFFERS);
    int expected = bufferCount(type);
    if (nBuffers != expected) {
      throw new LanceException.InvalidArgument("column " + v.getName() + ": " + type + " array has " + nBuffers
          + " buffers, expected " + expected);
    }
    List<ArrowBuf> bufs = new ArrayList<>();
    try {
      if (type instanceof ArrowType.Null) {
        v.loadFieldBuffers(new ArrowFieldNode(len, len), bufs);
        return;
      }
      long validity = NativeMemory.getLong(buffers);
      if (nullCount < 0) nullCount = validity == 0 ? 0 : countNulls(validity, len);
      bufs.add(wrap(validity, (len + 7) / 8, allocator, owner));
      if (expected >= 2) {
        long b1 = NativeMemory.getLong(buffers + 8);
        if (type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary || type instanceof ArrowType.List
            || type instanceof ArrowType.Map) {
          bufs.add(offsets(b1, len, 4, allocator, owner));
          if (expected == 3) bufs.add(wrap(NativeMemory.getLong(buffers + 16), dataEnd(b1, len, 4), allocator, owner));
        } else if (type instanceof ArrowType.LargeUtf8 || type instanceof ArrowType.LargeBinary
            || type instanceof ArrowType.LargeList) {
          bufs.add(offsets(b1, len, 8, allocator, owner));
          if (expected == 3) bufs.add(wrap(NativeMemory.getLong(buffers + 16), dataEnd(b1, len, 8), allocator, owner));
        } else if (type instanceof ArrowType.Bool) {
          bufs.add(wrap(b1, (len + 7) / 8, allocator, owner));
        } else {
          bufs.add(wrap(b1, len * byteWidth(type), allocator, owner));
        }
      }
      v.loadFieldBuffers(new ArrowFieldNode(len, nullCount), bufs);
    } finally {
      for (ArrowBuf b : bufs) b.close(); // the vector took its own references
    }
    List<FieldVector> kids = v.getChildrenFromFields();
    long n = NativeMemory.getLong(a + A_N_CHILDREN);
    if (n != kids.size()) {
      throw new LanceException.InvalidArgument("column " + v.getName() + ": array has " + n + " children, its type " + kids.size());
    }
    long children = NativeMemory.getLong(a + A_CHILDREN);
    for (int i = 0; i < n; i++) {
      long child = NativeMemory.getLong(children + 8L * i);
      if (type instanceof ArrowType.Struct) {
        // A struct's rows 0..len are its children's rows 0..len past their own offsets.
        load(kids.get(i), child, 0, NativeMemory.getLong(child + A_LENGTH), allocator, owner);
        if (kids.get(i).getValueCount() < len) {
          throw new LanceException.InvalidArgument("column " + v.getName() + ": a struct child is shorter than the struct");
        }
      } else {
        load(kids.get(i), child, 0, NativeMemory.getLong(child + A_LENGTH), allocator, owner);
      }
    }
  }

  private static int bufferCount(ArrowType t) {
    if (t instanceof ArrowType.Null) return 0;
    if (t instanceof ArrowType.Struct || t instanceof ArrowType.FixedSizeList) return 1;
    if (t instanceof ArrowType.Utf8 || t instanceof ArrowType.Binary || t instanceof ArrowType.LargeUtf8
        || t instanceof ArrowType.LargeBinary) return 3;
    return 2;
  }

  private static long byteWidth(ArrowType t) {
    if (t instanceof ArrowType.Int) return ((ArrowType.Int) t).getBitWidth() / 8;
    if (t instanceof ArrowType.FloatingPoint) {
      switch (((ArrowType.FloatingPoint) t).getPrecision()) {
        case HALF: return 2;
        case SINGLE: return 4;
        default: return 8;
      }
    }
    if (t instanceof ArrowType.Decimal) return 16;
    if (t instanceof ArrowType.FixedSizeBinary) return ((ArrowType.FixedSizeBinary) t).getByteWidth();
    if (t instanceof ArrowType.Date) return ((ArrowType.Date) t).getUnit() == DateUnit.DAY ? 4 : 8;
    if (t instanceof ArrowType.Time) return ((ArrowType.Time) t).getBitWidth() / 8;
    if (t instanceof ArrowType.Timestamp || t instanceof ArrowType.Duration) return 8;
    throw new LanceException.NotSupported("Arrow type " + t + " is not supported by the Java API");
  }

  private static long countNulls(long validity, long len) {
    long nulls = 0;
    for (long i = 0; i < len; i++) {
      if ((NativeMemory.getByte(validity + (i >> 3)) & (1 << (i & 7))) == 0) nulls++;
    }
    return nulls;
  }

  private static long dataEnd(long offsets, long len, int width) {
    if (offsets == 0) return 0;
    return width == 4 ? NativeMemory.getInt(offsets + 4 * len) : NativeMemory.getLong(offsets + 8 * len);
  }

  /** An offsets buffer; an empty array may come without one, Arrow Java wants a single 0. */
  private static ArrowBuf offsets(long p, long len, int width, BufferAllocator allocator, Owner owner) {
    if (p == 0) {
      if (len != 0) throw new LanceException.InvalidArgument("an offsets buffer is missing");
      ArrowBuf b = allocator.buffer(width);
      b.setZero(0, width);
      return b;
    }
    return wrap(p, (len + 1) * width, allocator, owner);
  }

  private static ArrowBuf wrap(long address, long size, BufferAllocator allocator, Owner owner) {
    if (address == 0 || size == 0) return allocator.getEmpty();
    owner.retain();
    return allocator.wrapForeignAllocation(new ForeignAllocation(size, address) {
      @Override
      protected void release0() {
        owner.release();
      }
    });
  }

  private static int checkedInt(long v, String what) {
    if (v < 0 || v > Integer.MAX_VALUE) throw new LanceException.OutOfRange(what + " " + v + " does not fit an Arrow Java vector");
    return (int) v;
  }

  /** One reference per wrapped buffer plus the importer's: the last release frees the C batch. */
  static final class Owner {
    private final long array;
    private final AtomicInteger refs = new AtomicInteger(1);

    Owner(long array) {
      this.array = array;
      LIVE.incrementAndGet();
    }

    void retain() {
      refs.incrementAndGet();
    }

    void release() {
      if (refs.decrementAndGet() == 0) {
        Native.arrayRelease(array);
        LIVE.decrementAndGet();
      }
    }
  }
}
