package org.lancehost;

import java.lang.reflect.Field;
import sun.misc.Unsafe;

/**
 * Reads of native memory (the C structs of the Arrow C Data Interface the library hands over).
 * Arrow Java's own {@code MemoryUtil} changed its methods between versions (Spark 3.5 ships Arrow
 * Java 12, Spark 4 ships 18), so the importer reads through {@code sun.misc.Unsafe} (module
 * {@code jdk.unsupported}, open to every class) and works with either.
 */
final class NativeMemory {
  private NativeMemory() {}

  private static final Unsafe UNSAFE;
  private static final long BYTES = Unsafe.ARRAY_BYTE_BASE_OFFSET;

  static {
    try {
      Field f = Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      UNSAFE = (Unsafe) f.get(null);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  static byte getByte(long address) {
    return UNSAFE.getByte(address);
  }

  static int getInt(long address) {
    return UNSAFE.getInt(address);
  }

  static long getLong(long address) {
    return UNSAFE.getLong(address);
  }

  /** Copies n bytes at address into dst[at..at+n). */
  static void copyToArray(long address, byte[] dst, int at, int n) {
    if (at < 0 || n < 0 || at + n > dst.length) throw new IndexOutOfBoundsException("copy of " + n + " bytes at " + at);
    UNSAFE.copyMemory(null, address, dst, BYTES + at, n);
  }
}
