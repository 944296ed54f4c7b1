package org.lancehost;


import java.util.Map;

/**
 * The process-wide session every handle shares: cache budgets, worker threads, scan read-ahead
 * and the data cache. Configure it before the first use of the library (later calls are
 * {@link LanceException.FailedPrecondition}); without it the session starts with the defaults.
 */
public final class Session {
  private Session() {}

  /**
   * Session settings; start from {@link #defaults()}. Immutable; setters return copies. The JNI
   * glue reads and writes the fields by name (no order is shared with C).
   */
  public static final class Options implements Cloneable {
    long indexCacheBytes;
    long metadataCacheBytes;
    long workerThreads;
    long scanBatchReadahead;
    long scanFragmentReadahead;
    long scanIoBufferBytes;
    long dataCacheMemoryBytes;
    long dataCacheDiskBytes;
    long dataCacheBlockBytes;
    boolean dataCacheDisabled;
    String dataCacheDiskDir;

    Options() {} // built by the JNI glue (sessionDefaults)

    private Options copy() {
      try {
        return (Options) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }

    private static long checked(long value) {
      if (value < 0) throw new LanceException.InvalidArgument("session option values must not be negative");
      return value;
    }

    /** Bytes the index cache may hold (0: the library's default). */
    public Options indexCacheBytes(long n) { Options c = copy(); c.indexCacheBytes = checked(n); return c; }
    /** Bytes the metadata cache may hold (0: the library's default). */
    public Options metadataCacheBytes(long n) { Options c = copy(); c.metadataCacheBytes = checked(n); return c; }
    /** Threads of the library's runtime (0: one per core). */
    public Options workerThreads(int n) { Options c = copy(); c.workerThreads = checked(n); return c; }
    /** Batches a scan decodes ahead of the reader (0: Lance's default). */
    public Options scanBatchReadahead(int n) { Options c = copy(); c.scanBatchReadahead = checked(n); return c; }
    /** Fragments a scan reads ahead (0: Lance's default). */
    public Options scanFragmentReadahead(int n) { Options c = copy(); c.scanFragmentReadahead = checked(n); return c; }
    /** Bytes of I/O a scan keeps in flight (0: Lance's default). */
    public Options scanIoBufferBytes(long n) { Options c = copy(); c.scanIoBufferBytes = checked(n); return c; }
    /** Bytes of the data cache's memory tier (0: the library's default). */
    public Options dataCacheMemoryBytes(long n) { Options c = copy(); c.dataCacheMemoryBytes = checked(n); return c; }
    /** Bytes of the data cache's disk tier (with a directory; 0: the library's default). */
    public Options dataCacheDiskBytes(long n) { Options c = copy(); c.dataCacheDiskBytes = checked(n); return c; }
    /** Size of a data-cache block (0: the library's default). */
    public Options dataCacheBlockBytes(long n) { Options c = copy(); c.dataCacheBlockBytes = checked(n); return c; }
    /** Turns the data cache off. */
    public Options dataCacheDisabled(boolean off) { Options c = copy(); c.dataCacheDisabled = off; return c; }

    /** A directory for the data cache's disk tier (null = none). */
    public Options dataCacheDiskDir(String dir) { Options c = copy(); c.dataCacheDiskDir = dir; return c; }

    /** The index cache budget these options set. */
    public long indexCacheBytes() { return indexCacheBytes; }
    /** The metadata cache budget these options set. */
    public long metadataCacheBytes() { return metadataCacheBytes; }
    /** The worker threads these options set. */
    public long workerThreads() { return workerThreads; }
  }

  /** The library's defaults (lance_session_options_default_v2). */
  public static Options defaults() {
    return Native.sessionDefaults();
  }

  /** Applies `o` to the process's session (before its first use). */
  public static void configure(Options o) {
    if (o == null) throw new LanceException.InvalidArgument("session options are null");
    Native.sessionConfigure(o);
  }

  /** The session's cache statistics by name (lance_session_stats_v2's fields). */
  public static Map<String, Long> stats() {
    return Native.sessionStats(); // a LinkedHashMap the glue names, in the struct's order
  }
}
