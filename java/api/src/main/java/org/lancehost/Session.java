package org.lancehost;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The process-wide session every handle shares: cache budgets, worker threads, scan read-ahead
 * and the data cache. Configure it before the first use of the library (later calls are
 * {@link LanceException.FailedPrecondition}); without it the session starts with the defaults.
 */
public final class Session {
  private Session() {}

  /** Session settings; start from {@link #defaults()}. Immutable; setters return copies. */
  public static final class Options {
    final long[] v;
    final String diskDir;

    Options(long[] v, String diskDir) {
      this.v = v;
      this.diskDir = diskDir;
    }

    private Options with(int i, long value) {
      if (value < 0) throw new LanceException.InvalidArgument("session option values must not be negative");
      long[] c = v.clone();
      c[i] = value;
      return new Options(c, diskDir);
    }

    /** Bytes the index cache may hold (0: the library's default). */
    public Options indexCacheBytes(long n) { return with(0, n); }
    /** Bytes the metadata cache may hold (0: the library's default). */
    public Options metadataCacheBytes(long n) { return with(1, n); }
    /** Threads of the library's runtime (0: one per core). */
    public Options workerThreads(int n) { return with(2, n); }
    /** Batches a scan decodes ahead of the reader (0: Lance's default). */
    public Options scanBatchReadahead(int n) { return with(3, n); }
    /** Fragments a scan reads ahead (0: Lance's default). */
    public Options scanFragmentReadahead(int n) { return with(4, n); }
    /** Bytes of I/O a scan keeps in flight (0: Lance's default). */
    public Options scanIoBufferBytes(long n) { return with(5, n); }
    /** Bytes of the data cache's memory tier (0: the library's default). */
    public Options dataCacheMemoryBytes(long n) { return with(6, n); }
    /** Bytes of the data cache's disk tier (with a directory; 0: the library's default). */
    public Options dataCacheDiskBytes(long n) { return with(7, n); }
    /** Size of a data-cache block (0: the library's default). */
    public Options dataCacheBlockBytes(long n) { return with(8, n); }
    /** Turns the data cache off. */
    public Options dataCacheDisabled(boolean off) { return with(9, off ? 1 : 0); }

    /** A directory for the data cache's disk tier (null = none). */
    public Options dataCacheDiskDir(String dir) {
      return new Options(v, dir);
    }

    /** The index cache budget these options set. */
    public long indexCacheBytes() { return v[0]; }
    /** The metadata cache budget these options set. */
    public long metadataCacheBytes() { return v[1]; }
    /** The worker threads these options set. */
    public long workerThreads() { return v[2]; }
  }

  /** The library's defaults (lance_session_options_default_v2). */
  public static Options defaults() {
    return new Options(Native.sessionDefaults(), null);
  }

  /** Applies `o` to the process's session (before its first use). */
  public static void configure(Options o) {
    if (o == null) throw new LanceException.InvalidArgument("session options are null");
    Native.sessionConfigure(o.v, o.diskDir);
  }

  private static final String[] STATS = {"index_hits", "index_misses", "index_entries", "index_bytes", "metadata_hits",
      "metadata_misses", "metadata_entries", "metadata_bytes", "data_cache_hits", "data_cache_misses",
      "data_cache_hit_bytes", "data_cache_storage_requests", "data_cache_storage_bytes", "data_cache_evictions",
      "data_cache_errors", "data_cache_memory_bytes", "data_cache_disk_bytes", "data_cache_memory_capacity",
      "data_cache_disk_capacity", "data_cache_disk_enabled", "data_cache_disk_write_drops", "text_tail_hits",
      "text_tail_misses"};

  /** The session's cache statistics by name (lance_session_stats_v2's fields). */
  public static Map<String, Long> stats() {
    long[] v = Native.sessionStats();
    Map<String, Long> out = new LinkedHashMap<>();
    for (int i = 0; i < STATS.length; i++) out.put(STATS[i], v[i]);
    return out;
  }
}
