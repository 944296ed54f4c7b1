package org.lancehost;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Writes: one process ({@link #write}), or staged on workers ({@link #stage}) and committed once
 * by a coordinator ({@link #commit}, exactly once per statement id) or discarded ({@link #abort}).
 * Batches cross to the library without copies; each {@link VectorSchemaRoot} the iterator returns
 * belongs to the write from then on (closed when the library is done with it). A failed write
 * leaves the table as it was.
 */
public final class Write {
  private Write() {}

  /** LANCE_WRITE_* modes. */
  public static final int CREATE = 0, APPEND = 1, OVERWRITE = 2;

  /** What a write or commit did. */
  public static final class Result {
    /** The version committed, or (with committed false) the version that already holds the statement. */
    public final long version;
    /** False when the statement id was already committed: nothing was written. */
    public final boolean committed;
    public final long rowsWritten;
    public final long fragmentsWritten;
    public final long filesWritten;
    /** Rows a delete, update, merge or row-level change deleted, updated and inserted. */
    public final long rowsDeleted, rowsUpdated, rowsInserted;

    /** Built by the JNI glue (jni_host_stream.c, result_out) from a LanceWriteResult. */
    Result(long version, boolean committed, long rowsWritten, long fragmentsWritten, long filesWritten,
        long rowsDeleted, long rowsUpdated, long rowsInserted) {
      this.version = version;
      this.committed = committed;
      this.rowsWritten = rowsWritten;
      this.fragmentsWritten = fragmentsWritten;
      this.filesWritten = filesWritten;
      this.rowsDeleted = rowsDeleted;
      this.rowsUpdated = rowsUpdated;
      this.rowsInserted = rowsInserted;
    }
  }

  /** A worker's share: the staged bytes to ship to the coordinator, and what was written. */
  public static final class Staged {
    public final byte[] bytes;
    public final Result result;

    Staged(byte[] bytes, Result result) { // built by the JNI glue
      this.bytes = bytes;
      this.result = result;
    }
  }

  /** Options of a write. Immutable; setters return copies. */
  public static final class Options {
    final int mode;
    final String statementId;
    final String message;
    final Map<String, String> storage;
    final long maxRowsPerFile;
    final long expectedVersion;
    final Map<String, String> requiredConfig;
    final boolean stableRowIds;

    private Options(int mode, String statementId, String message, Map<String, String> storage, long maxRowsPerFile,
        long expectedVersion, Map<String, String> requiredConfig) {
      this(mode, statementId, message, storage, maxRowsPerFile, expectedVersion, requiredConfig, false);
    }

    private Options(int mode, String statementId, String message, Map<String, String> storage, long maxRowsPerFile,
        long expectedVersion, Map<String, String> requiredConfig, boolean stableRowIds) {
      this.stableRowIds = stableRowIds;
      this.mode = mode;
      this.statementId = statementId;
      this.message = message;
      this.storage = storage;
      this.maxRowsPerFile = maxRowsPerFile;
      this.expectedVersion = expectedVersion;
      this.requiredConfig = requiredConfig;
    }

    /** Options of a write in `mode` (CREATE, APPEND, OVERWRITE; {@link #mode(WriteMode)} as an enum). */
    public static Options mode(int mode) {
      return new Options(mode, null, null, null, 0, 0, null);
    }

    /** Options of a write in `mode`. */
    public static Options mode(WriteMode mode) {
      return mode(mode.code);
    }

    /** The exactly-once key of a commit (e.g. the engine's query id). */
    public Options statementId(String id) {
      return new Options(mode, id, message, storage, maxRowsPerFile, expectedVersion, requiredConfig, stableRowIds);
    }

    /** A message stored with the commit (pylance shows it among the version's metadata). */
    public Options commitMessage(String m) {
      return new Options(mode, statementId, m, storage, maxRowsPerFile, expectedVersion, requiredConfig, stableRowIds);
    }

    /** The object store's options (credentials, endpoint), as pylance names them. */
    public Options storageOptions(Map<String, String> s) {
      return new Options(mode, statementId, message, s, maxRowsPerFile, expectedVersion, requiredConfig, stableRowIds);
    }

    /** Rows per data file (0 = Lance's default). */
    public Options maxRowsPerFile(long n) {
      return new Options(mode, statementId, message, storage, n, expectedVersion, requiredConfig, stableRowIds);
    }

    /**
     * The commit lands only as version {@code v + 1} (0 = any): if the table has moved past
     * {@code v}, {@link LanceException.Conflict} and nothing is committed.
     */
    public Options expectedVersion(long v) {
      return new Options(mode, statementId, message, storage, maxRowsPerFile, v, requiredConfig, stableRowIds);
    }

    /**
     * Table config values (a fencing token) the version the commit lands on must hold, else
     * {@link LanceException.FailedPrecondition} and nothing is committed.
     */
    public Options requiredConfig(Map<String, String> c) {
      return new Options(mode, statementId, message, storage, maxRowsPerFile, expectedVersion, c, stableRowIds);
    }

    /**
     * A table this write creates keeps stable row ids, and with them the row versions change
     * data needs ({@link Dataset#planChanges}); an existing table keeps its setting.
     */
    public Options stableRowIds(boolean on) {
      return new Options(mode, statementId, message, storage, maxRowsPerFile, expectedVersion, requiredConfig, on);
    }
  }

  /** Writes the batches and commits one version (create, append or overwrite at `at`). */
  public static Result write(String uri, Dataset at, Schema schema, Iterator<VectorSchemaRoot> batches, Options o) {
    HostStream s = new HostStream(schema, batches);
    if (at == null) {
      return (Native.tableWrite(uri, 0, s, o.mode, o.statementId, o.message, Dataset.options(o.storage),
          o.maxRowsPerFile, o.expectedVersion, Dataset.options(o.requiredConfig), o.stableRowIds));
    }
    return at.withHandle(h -> (Native.tableWrite(uri, h, s, o.mode, o.statementId, o.message,
        Dataset.options(o.storage), o.maxRowsPerFile, o.expectedVersion, Dataset.options(o.requiredConfig),
        o.stableRowIds)));
  }

  /** Writes a worker's share without committing (appends and overwrites need `at`, the pinned snapshot). */
  public static Staged stage(String uri, Dataset at, Schema schema, Iterator<VectorSchemaRoot> batches, Options o) {
    HostStream s = new HostStream(schema, batches);
    if (at == null) return Native.stageWrite(uri, 0, s, o.mode, Dataset.options(o.storage), o.maxRowsPerFile);
    return at.withHandle(h -> Native.stageWrite(uri, h, s, o.mode, Dataset.options(o.storage), o.maxRowsPerFile));
  }

  /** Commits every share of a statement once (a retry with the same statement id commits nothing more). */
  public static Result commit(String uri, List<byte[]> staged, Options o) {
    if (staged == null) throw new LanceException.InvalidArgument("staged writes are null");
    return (Native.tableCommit(uri, staged.toArray(new byte[0][]), o.mode, o.statementId, o.message,
        Dataset.options(o.storage), o.expectedVersion, Dataset.options(o.requiredConfig)));
  }

  /** One table of {@link #commitTables}: its URI, the shares of its statement and its options. */
  public static final class TableCommit {
    final String uri;
    final List<byte[]> staged;
    final Options options;

    /** One table's part of a multi-table commit: its URI, the staged shares and the commit's options. */
    public TableCommit(String uri, List<byte[]> staged, Options options) {
      this.uri = uri;
      this.staged = staged;
      this.options = options == null ? Options.mode(APPEND) : options;
    }
  }

  /**
   * Commits the shares of several tables together: every table gets its new version, or none
   * does. The tables must be managed by one namespace that commits several tables at once,
   * each opened through a {@link Catalog} of it in this process; otherwise
   * {@link LanceException.NotSupported} and nothing is committed. A table whose latest version
   * moved: {@link LanceException.Conflict}, nothing committed (commit again). Returns each
   * table's result, in order.
   */
  public static List<Result> commitTables(List<TableCommit> tables) {
    if (tables == null) throw new LanceException.InvalidArgument("tables are null");
    int n = tables.size();
    String[] uris = new String[n];
    byte[][][] staged = new byte[n][][];
    String[] ids = new String[n];
    String[] messages = new String[n];
    String[][] storage = new String[n][];
    long[] expected = new long[n];
    String[][] required = new String[n][];
    for (int i = 0; i < n; i++) {
      TableCommit t = tables.get(i);
      if (t == null || t.staged == null) throw new LanceException.InvalidArgument("table " + i + " or its staged writes are null");
      uris[i] = t.uri;
      staged[i] = t.staged.toArray(new byte[0][]);
      ids[i] = t.options.statementId;
      messages[i] = t.options.message;
      storage[i] = Dataset.options(t.options.storage);
      expected[i] = t.options.expectedVersion;
      required[i] = Dataset.options(t.options.requiredConfig);
    }
    return List.of(Native.commitTables(uris, staged, ids, messages, storage, expected, required));
  }

  /** Deletes the files of shares that will not be committed; returns the files deleted. */
  public static long abort(List<byte[]> staged, Map<String, String> storageOptions) {
    if (staged == null) throw new LanceException.InvalidArgument("staged writes are null");
    return Native.stagedAbort(staged.toArray(new byte[0][]), Dataset.options(storageOptions));
  }
}
