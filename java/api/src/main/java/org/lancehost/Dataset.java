package org.lancehost;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A Lance table pinned at one version. Everything read through it sees that version; splits
 * planned on it carry the version, so workers read the same snapshot. Thread-safe: any number of
 * threads may call it at once; {@link #close()} waits for calls in flight, and calls after it
 * throw {@link LanceException.InvalidArgument}. Streams it returned stay valid after close.
 */
public final class Dataset implements AutoCloseable {
  private final Handle handle;

  private Dataset(long ptr) {
    this.handle = new Handle(ptr, "dataset", Native::datasetFree);
  }

  static Dataset wrap(long ptr) {
    return new Dataset(ptr);
  }

  static String[] options(Map<String, String> storageOptions) {
    if (storageOptions == null || storageOptions.isEmpty()) return null;
    String[] out = new String[2 * storageOptions.size()];
    int i = 0;
    for (Map.Entry<String, String> e : storageOptions.entrySet()) {
      if (e.getKey() == null || e.getValue() == null) {
        throw new LanceException.InvalidArgument("storage option keys and values must not be null");
      }
      out[i++] = e.getKey();
      out[i++] = e.getValue();
    }
    return out;
  }

  /** The latest version of the table at `uri` (a path or s3://, gs://, az:// URI). */
  public static Dataset open(String uri) {
    return open(uri, null, 0);
  }

  /** Version `version` (0 = latest) of the table at `uri`, with storage options (credentials, endpoint). */
  public static Dataset open(String uri, Map<String, String> storageOptions, long version) {
    return new Dataset(Native.datasetOpen(uri, options(storageOptions), version, 0, false));
  }

  /**
   * Version `version` (0 = its latest) of branch `branch` ("main" = the default one) of the table
   * at `uri`. The handle is the branch's own location ({@link #uri()} is {@code <uri>/tree/<branch>}):
   * its snapshot and splits carry it, and writes planned on it land on the branch.
   */
  public static Dataset openBranch(String uri, Map<String, String> storageOptions, String branch, long version) {
    return new Dataset(Native.datasetOpenBranch(uri, options(storageOptions), branch, version));
  }

  /** The table at the version (and branch) tag `tag` names. */
  public static Dataset openTag(String uri, Map<String, String> storageOptions, String tag) {
    return new Dataset(Native.datasetOpenTag(uri, options(storageOptions), tag));
  }

  /**
   * The version that was latest at `at` (the newest committed at or before it), compared at the
   * microsecond: a version committed later within `at`'s millisecond is not chosen.
   */
  public static Dataset openAt(String uri, Map<String, String> storageOptions, Instant at) {
    if (at == null) throw new LanceException.InvalidArgument("timestamp is null");
    long micros;
    try {
      micros = Math.addExact(Math.multiplyExact(at.getEpochSecond(), 1_000_000L), at.getNano() / 1000);
    } catch (ArithmeticException e) {
      throw new LanceException.InvalidArgument("timestamp " + at + " is out of range");
    }
    return new Dataset(Native.datasetOpen(uri, options(storageOptions), 0, micros, true));
  }

  /** The snapshot a planner exported with {@link #snapshot()}, with this worker's credentials. */
  public static Dataset fromSnapshot(byte[] token, Map<String, String> storageOptions) {
    if (token == null) throw new LanceException.InvalidArgument("snapshot token is null");
    return new Dataset(Native.snapshotOpen(token, options(storageOptions)));
  }

  /** The snapshot a split was planned on. */
  public static Dataset forSplit(byte[] split, Map<String, String> storageOptions) {
    return new Dataset(Native.splitOpenDataset(split, options(storageOptions)));
  }

  /** This snapshot as bytes to ship to workers ({@link #fromSnapshot}). */
  public byte[] snapshot() {
    return handle.with(Native::datasetExportSnapshot);
  }

  /**
   * The snapshot of one scan split, to ship with it instead of {@link #snapshot()}: the pinned
   * manifest cut down to the split's fragments, so its size and a worker's open time follow the
   * split, not the table. The dataset {@link #fromSnapshot} opens from it scans, counts and
   * aggregates scan splits of those fragments and throws {@link LanceException.InvalidArgument}
   * for every call that reads the whole table. Thread-safe; the bytes carry no storage options.
   *
   * @param split a scan split of this dataset's plan (bytes from {@link SplitPlan})
   * @return the token bytes
   * @throws LanceException.NotSupported for a search, full-text or change split
   * @throws LanceException.InvalidArgument for a split of another table or version
   */
  public byte[] splitSnapshot(byte[] split) {
    return handle.with(p -> Native.datasetExportSplitSnapshot(p, split));
  }

  /** The version this handle is pinned to. */
  public long version() {
    return handle.withLong(Native::datasetVersion);
  }

  /** The newest version committed now (reads storage). */
  public long latestVersion() {
    return handle.withLong(Native::datasetLatestVersion);
  }

  /** The table's URI. */
  public String uri() {
    return handle.with(Native::datasetUri);
  }

  /** The pinned version's schema (Arrow Java), metadata included. */
  public Schema schema() {
    return CData.importSchema(handle.withLong(Native::datasetSchema));
  }

  /** Every version: (version, commit time). */
  public List<Version> versions() {
    return Collections.unmodifiableList(java.util.Arrays.asList(handle.with(Native::datasetVersions)));
  }

  /** One version of the table. */
  public static final class Version {
    public final long version;
    public final Instant timestamp;

    /** Built by the JNI glue (jni_dataset.c) from a LanceVersionInfo. */
    Version(long version, long timestampMillis) {
      this.version = version;
      this.timestamp = Instant.ofEpochMilli(timestampMillis);
    }
  }

  /** Rows of the snapshot (from the manifest, no data read). */
  public long countRows() {
    return countRows(null);
  }

  /** Rows matching a Lance SQL filter (null = all). */
  public long countRows(String filter) {
    return handle.withLong(p -> Native.datasetCountRows(p, filter));
  }

  /** Rows of one split matching `filter` (null = all). */
  public long countRows(byte[] split, String filter) {
    return handle.withLong(p -> Native.splitCountRows(p, split, filter));
  }

  /** Scan splits of about `targetRows` rows each (0 = one per fragment). */
  public SplitPlan planScan(long targetRows) {
    return handle.with(p -> Native.planScan(p, targetRows, false));
  }

  /** Kinds of change (bits of {@link #planChanges}'s `types`). */
  public static final int CHANGE_INSERTED = 1, CHANGE_UPDATED = 2, CHANGE_DELETED = 4;

  /**
   * Splits of the rows changed after `sinceVersion` up to this version (`types`: CHANGE_* bits,
   * 0 = all): scan each with {@link #scan(byte[], ScanOptions, BufferAllocator)} on this version;
   * its rows carry `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version` and
   * `_change_type`. Needs a table with stable row ids.
   */
  /** {@link #planChanges(long, int, long)} with the kinds of change as a set (empty: every kind). */
  public SplitPlan planChanges(long sinceVersion, java.util.Set<ChangeType> types, long targetRows) {
    return planChanges(sinceVersion, bits(types), targetRows);
  }

  /** {@link #planChangesSince(Instant, int, long)} with the kinds of change as a set (empty: every kind). */
  public SplitPlan planChangesSince(Instant since, java.util.Set<ChangeType> types, long targetRows) {
    return planChangesSince(since, bits(types), targetRows);
  }

  private static int bits(java.util.Set<ChangeType> types) {
    if (types == null) throw new LanceException.InvalidArgument("types is null (an empty set: every kind)");
    int b = 0;
    for (ChangeType t : types) b |= t.code;
    return b;
  }

  /**
   * Change splits of the rows inserted, updated or deleted after `sinceVersion` (`types`: CHANGE_* bits, 0 = all), about `targetRows` rows each; scan them like scan splits. Needs stable row ids.
   *
   * @throws LanceException.FailedPrecondition for a table without them
   */
  public SplitPlan planChanges(long sinceVersion, int types, long targetRows) {
    return handle.with(p -> Native.planChanges(p, sinceVersion, 0, types, targetRows));
  }

  /** {@link #planChanges} after the last version committed before `since`. */
  public SplitPlan planChangesSince(Instant since, int types, long targetRows) {
    return handle.with(p -> Native.planChanges(p, 0, since.toEpochMilli(), types, targetRows));
  }

  /** The branch this handle is on ("main" for the default one). */
  public String branch() {
    return handle.with(Native::datasetBranch);
  }

  /**
   * Compacts the table: rewrites small fragments, and fragments with many deleted rows, into larger
   * ones, planned at this handle's version (indexes are remapped; readers of older versions are
   * unaffected; this handle keeps its version). Lance commits a reservation of fragment ids, then
   * the rewrite: {@link Maintenance.CompactResult#version()} is the rewrite's version, the
   * reservation's the one before it (as pylance's {@code compact_files}). Nothing to compact
   * commits nothing.
   *
   * @param options {@link Maintenance.CompactOptions#defaults()} or tuned ones
   * @return what was rewritten and the version committed
   * @throws LanceException.Conflict when a concurrent commit cannot be combined
   * @throws LanceException.InvalidArgument for negative row counts or a threshold outside [0, 1]
   */
  public Maintenance.CompactResult compact(Maintenance.CompactOptions options) {
    if (options == null) throw new LanceException.InvalidArgument("options is null (use CompactOptions.defaults())");
    return handle.with(p -> Native.compact(p, options.targetRowsPerFragment(), options.maxRowsPerGroup(),
        options.deletionThreshold(), options.keepDeletions()));
  }

  /**
   * Removes the versions of the table committed more than {@code olderThan} ago and the files only
   * they use. Never removed: the latest version, tagged versions and (unless
   * {@code deleteUnverified}) unreferenced files younger than 7 days, which may belong to a write
   * in progress. A reader pinned to a removed version fails on its next read.
   *
   * @return versions and bytes removed
   * @throws LanceException.InvalidArgument for a negative age
   */
  public Maintenance.CleanupResult cleanup(java.time.Duration olderThan, boolean deleteUnverified) {
    if (olderThan == null) throw new LanceException.InvalidArgument("olderThan is null");
    return handle.with(p -> Native.cleanup(p, olderThan.toMillis(), deleteUnverified));
  }

  /**
   * Tags {@code version} of the table (0 = this handle's version) as {@code name} (letters,
   * digits, '-', '_', '.'); a tagged version is kept from cleanup and opens by name
   * ({@link #openTag}); pylance sees the tag.
   *
   * @throws LanceException.InvalidArgument or FailedPrecondition for a name already taken
   * @throws LanceException.NotFound for a missing version
   */
  public void createTag(String name, long version) {
    handle.with(p -> {
      Native.createTag(p, name, version);
      return null;
    });
  }

  /** Deletes tag {@code name} ({@link LanceException.NotFound} if there is none). */
  public void deleteTag(String name) {
    handle.with(p -> {
      Native.deleteTag(p, name);
      return null;
    });
  }

  /** The table's tags, sorted by name. */
  public List<Maintenance.Tag> tags() {
    return List.of(handle.with(Native::tags));
  }

  /** Creates branch `name` from `version` of this handle's branch (0 = this version); returns the branch. */
  public Dataset createBranch(String name, long version) {
    return new Dataset(handle.withLong(p -> Native.datasetCreateBranch(p, name, version)));
  }

  /** Deletes branch `name` of the table (not this handle's own, not "main"). */
  public void deleteBranch(String name) {
    handle.with(p -> {
      Native.datasetDeleteBranch(p, name);
      return null;
    });
  }

  /** One branch: the branch it was created from and that branch's version. */
  public static final class Branch {
    public final String parent;
    public final long parentVersion;

    Branch(String parent, long parentVersion) {
      this.parent = parent;
      this.parentVersion = parentVersion;
    }
  }

  /** The table's branches by name. */
  public Map<String, Branch> branches() {
    String[] raw = handle.with(Native::datasetBranches);
    Map<String, Branch> out = new java.util.TreeMap<>();
    for (int i = 0; i + 2 < raw.length; i += 3) out.put(raw[i], new Branch(raw[i + 1], Long.parseLong(raw[i + 2])));
    return out;
  }

  /** This version cloned into a new table at `target` that references this table's files. */
  public Dataset shallowClone(String target, Map<String, String> storageOptions) {
    return new Dataset(handle.withLong(p -> Native.datasetShallowClone(p, target, options(storageOptions))));
  }

  /** The table's config at this version (what pylance's `config()` shows; fencing tokens live here). */
  public Map<String, String> config() {
    String[] kv = handle.with(Native::datasetConfig);
    Map<String, String> out = new java.util.TreeMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) out.put(kv[i], kv[i + 1]);
    return out;
  }

  /**
   * Sets and removes config keys as one new version planned at this version; `o` may carry the
   * preconditions ({@link Write.Options#expectedVersion}, {@link Write.Options#requiredConfig}).
   */
  public Write.Result updateConfig(Map<String, String> set, List<String> remove, Write.Options o) {
    String[] keys = remove == null ? null : remove.toArray(new String[0]);
    return (handle.with(p -> Native.datasetUpdateConfig(p, options(set), keys,
        o == null ? 0 : o.expectedVersion, o == null ? null : options(o.requiredConfig))));
  }

  /** Scan splits that may cut large fragments into row slices of about `targetRows`. */
  public SplitPlan planScanSlices(long targetRows) {
    return handle.with(p -> Native.planScan(p, targetRows, true));
  }

  /**
   * Vector search splits: one per index segment plus flat splits over unindexed fragments
   * (about `flatTargetRows` rows each, 0 = the default); `metric` 0 = the index's.
   */
  public SplitPlan planVectorSearch(String column, int metric, boolean useIndex, long flatTargetRows) {
    return handle.with(p -> Native.planVectorSearch(p, column, metric, useIndex, flatTargetRows));
  }

  /** The whole snapshot. */
  public ArrowStream scan(ScanOptions o, BufferAllocator allocator) {
    return scan(null, o, allocator);
  }

  /** One split of this snapshot (null = the whole snapshot). */
  public ArrowStream scan(byte[] split, ScanOptions o, BufferAllocator allocator) {
    ScanOptions s = o == null ? ScanOptions.all() : o;
    long h = handle.withLong(p -> s.dynamicFilter == null
        ? Native.scan(p, split, s.columns, s.filter, s.limit, s.offset, s.batchSize, s.withRowId, s.orderBy,
            s.keyColumn, s.keys, 0)
        : s.dynamicFilter.handle.withLong(f -> Native.scan(p, split, s.columns, s.filter, s.limit, s.offset,
            s.batchSize, s.withRowId, s.orderBy, s.keyColumn, s.keys, f)));
    return new ArrowStream(h, allocator);
  }

  /** The plan Lance runs for a scan with these options. */
  public String explainScan(ScanOptions o) {
    ScanOptions s = o == null ? ScanOptions.all() : o;
    return handle.with(p -> Native.explainScan(p, s.columns, s.filter, s.limit, s.offset, s.orderBy, s.keyColumn, s.keys));
  }

  /** Rows by row id ({@code _rowid}), in the order given; `columns` empty = all. */
  public ArrowStream take(long[] rowIds, List<String> columns, BufferAllocator allocator) {
    String[] cols = columns == null ? null : columns.toArray(new String[0]);
    return new ArrowStream(handle.withLong(p -> Native.takeRows(p, rowIds, cols)), allocator);
  }

  /** The k nearest rows of one vector search split ({@code _distance}, {@code _rowid}, columns). */
  public ArrowStream search(byte[] split, VectorQuery q, BufferAllocator allocator) {
    if (q == null) throw new LanceException.InvalidArgument("query is null");
    long h = handle.withLong(p -> Native.splitSearch(p, split, q.column, q.vector, q.k, q.metric, q.nprobes,
        q.refineFactor, q.prefilter, q.columns, q.withRowId));
    return new ArrowStream(h, allocator);
  }

  /** The final aggregates of the snapshot (parallel over its splits inside the library). */
  public ArrowStream aggregate(AggregateSpec spec, BufferAllocator allocator) {
    return aggregate(null, spec, allocator);
  }

  /**
   * With a split: the partial aggregate states of that split, to be merged with
   * {@link #mergeAggregates}; without (null): the final aggregates.
   */
  public ArrowStream aggregate(byte[] split, AggregateSpec spec, BufferAllocator allocator) {
    if (spec == null) throw new LanceException.InvalidArgument("aggregate spec is null");
    String[] g = spec.groupBy.toArray(new String[0]);
    String[] c = spec.columns.toArray(new String[0]);
    String[] a = spec.aliases.toArray(new String[0]);
    String[] e = spec.expressions.toArray(new String[0]);
    String[] ge = spec.keyExpressions().toArray(new String[0]);
    long h = handle.withLong(p -> Native.aggregate(p, split, g, ge, spec.functionArray(), c, a, e, spec.filter,
        spec.substraitPlan));
    return new ArrowStream(h, allocator);
  }

  /** Merges the per-split results of a search into the global top k (consumes the streams). */
  public static ArrowStream mergeTopK(List<ArrowStream> parts, long k, long offset, BufferAllocator allocator) {
    return new ArrowStream(Native.topkMerge(detachAll(parts), k, offset), allocator);
  }

  /** Merges partial aggregate states into final aggregates (consumes the streams). */
  public static ArrowStream mergeAggregates(List<ArrowStream> parts, BufferAllocator allocator) {
    return new ArrowStream(Native.aggregateMerge(detachAll(parts)), allocator);
  }

  private static long[] detachAll(List<ArrowStream> parts) {
    if (parts == null) throw new LanceException.InvalidArgument("streams are null");
    long[] out = new long[parts.size()];
    try {
      for (int i = 0; i < out.length; i++) {
        if (parts.get(i) == null) throw new LanceException.InvalidArgument("stream " + i + " is null");
        out[i] = parts.get(i).detach();
      }
    } catch (RuntimeException e) {
      for (long h : out) if (h != 0) Native.streamRelease(h);
      for (ArrowStream s : parts) if (s != null) s.close();
      throw e;
    }
    return out;
  }

  /**
   * Deletes the rows matching a Lance SQL predicate as one new version planned at this snapshot
   * (this handle keeps its version). Returns {version, rows deleted}, the view of 0.14; {@link
   * #delete(String, String)} returns the whole {@link Write.Result}. A predicate matching
   * nothing still commits a version, as in Lance.
   */
  public long[] delete(String predicate) {
    Write.Result r = delete(predicate, null);
    return new long[] {r.version, r.rowsDeleted};
  }

  /**
   * Deletes the rows matching a Lance SQL predicate as one new version planned at this snapshot,
   * once per statement id (null = none; a retry with the same id commits nothing more). Returns
   * what it did ({@code version}, {@code rowsDeleted}).
   */
  public Write.Result delete(String predicate, String statementId) {
    if (predicate == null) throw new LanceException.InvalidArgument("predicate is null");
    return handle.with(p -> Native.datasetDelete(p, predicate, statementId));
  }

  /**
   * Sets columns with Lance SQL expressions over the row ({@code UPDATE t SET k = v WHERE
   * predicate}; predicate null = every row) as one new version planned at this snapshot, once per
   * statement id (null = none). Returns what it did ({@code rowsUpdated}).
   */
  public Write.Result update(Map<String, String> set, String predicate, String statementId) {
    if (set == null || set.isEmpty()) throw new LanceException.InvalidArgument("no columns to set");
    String[] cols = set.keySet().toArray(new String[0]);
    String[] exprs = new String[cols.length];
    for (int i = 0; i < cols.length; i++) exprs[i] = set.get(cols[i]);
    return handle.with(p -> Native.datasetUpdate(p, cols, exprs, predicate, statementId));
  }

  /** What a merge-insert does with each row (the LANCE_WHEN_* values). */
  public static final class Merge {
    public static final int MATCHED_DO_NOTHING = 0, MATCHED_UPDATE_ALL = 1, MATCHED_UPDATE_IF = 2, MATCHED_DELETE = 3,
        MATCHED_FAIL = 4;
    public static final int NOT_MATCHED_INSERT = 0, NOT_MATCHED_DO_NOTHING = 1;
    public static final int BY_SOURCE_KEEP = 0, BY_SOURCE_DELETE = 1, BY_SOURCE_DELETE_IF = 2;
    final List<String> on;
    int whenMatched = MATCHED_DO_NOTHING, whenNotMatched = NOT_MATCHED_INSERT, bySource = BY_SOURCE_KEEP;
    String matchedCondition, bySourceCondition;

    /** A merge on the key columns {@code on}: keep matched rows, insert the others (find-or-create). */
    public Merge(List<String> on) {
      if (on == null || on.isEmpty()) throw new LanceException.InvalidArgument("a merge-insert needs key columns");
      this.on = List.copyOf(on);
    }

    /** Matched rows: one of MATCHED_*; {@code condition} for MATCHED_UPDATE_IF (e.g. "source.v > target.v"). */
    /** What happens to a matched target row; {@code condition} for {@link WhenMatched#UPDATE_IF}. */
    public Merge whenMatched(WhenMatched rule, String condition) {
      return whenMatched(rule.code, condition);
    }

    /** What happens to a source row without a match. */
    public Merge whenNotMatched(WhenNotMatched rule) {
      return whenNotMatched(rule.code);
    }

    /** What happens to a target row no source row matches; {@code condition} for DELETE_IF. */
    public Merge whenNotMatchedBySource(WhenNotMatchedBySource rule, String condition) {
      return whenNotMatchedBySource(rule.code, condition);
    }

    /** What happens to a matched target row (MATCHED_*); `condition` (Lance SQL over `source.` and `target.` columns) for MATCHED_UPDATE_IF. */
    public Merge whenMatched(int rule, String condition) {
      whenMatched = rule;
      matchedCondition = condition;
      return this;
    }

    /** Source rows without a match: NOT_MATCHED_INSERT or NOT_MATCHED_DO_NOTHING. */
    public Merge whenNotMatched(int rule) {
      whenNotMatched = rule;
      return this;
    }

    /** Target rows without a match: one of BY_SOURCE_*; {@code condition} for BY_SOURCE_DELETE_IF. */
    public Merge whenNotMatchedBySource(int rule, String condition) {
      bySource = rule;
      bySourceCondition = condition;
      return this;
    }

    int[] modes() {
      return new int[] {whenMatched, whenNotMatched, bySource};
    }
  }

  /**
   * Merges the source batches into the table by the merge's key columns as one new version
   * planned at this snapshot (MERGE INTO / upsert), once per statement id. The batches belong to
   * the call (as in {@link Write#write}); nothing is committed on any failure.
   */
  public Write.Result mergeInsert(Schema schema, Iterator<VectorSchemaRoot> source, Merge m, String statementId) {
    HostStream s = new HostStream(schema, source);
    return handle.with(p -> (Write.Result) (Native.mergeInsert(p, s, m.on.toArray(new String[0]), m.modes(),
        m.matchedCondition, m.bySourceCondition, statementId, false)));
  }

  /** {@link #mergeInsert} without the commit: one share, committed alone by {@link Write#commit}. */
  public Write.Staged stageMergeInsert(Schema schema, Iterator<VectorSchemaRoot> source, Merge m) {
    HostStream s = new HostStream(schema, source);
    return handle.with(p -> (Write.Staged) Native.mergeInsert(p, s, m.on.toArray(new String[0]), m.modes(),
        m.matchedCondition, m.bySourceCondition, null, true));
  }

  /**
   * One worker's share of a delete: the rows of {@code split}'s fragments (a scan split of this
   * snapshot; null = every fragment) matching the predicate, in new deletion files, not committed.
   */
  public Write.Staged stageDelete(byte[] split, String predicate) {
    return handle.with(p -> Native.stageDelete(p, split, predicate));
  }

  /**
   * One worker's share of a row-level change: the rows at {@code rowAddresses} ({@code _rowaddr}
   * values read from this snapshot) are deleted when the coordinator commits; nothing is written
   * now. The rows written instead are a {@link Write#stage} append at this snapshot; commit all
   * shares together with {@link Write#commit} (one version; a concurrent change of one of the
   * same rows is a {@link LanceException.Conflict}).
   */
  public Write.Staged stageRowDeletes(long[] rowAddresses) {
    return handle.with(p -> Native.stageRowDeletes(p, rowAddresses));
  }

  /** An index of the table: name, column, type (e.g. IVF_PQ, BTREE, INVERTED), metric (vector indexes). */
  public static final class Index {
    public final String name;
    public final String column;
    public final String type;
    public final String metric;

    Index(String name, String column, String type, String metric) {
      this.name = name;
      this.column = column;
      this.type = type;
      this.metric = metric;
    }
  }

  /** The indexes of this snapshot. */
  public List<Index> indexes() {
    String[] raw = handle.with(Native::datasetIndexes);
    List<Index> out = new ArrayList<>();
    for (int i = 0; i + 3 < raw.length; i += 4) out.add(new Index(raw[i], raw[i + 1], raw[i + 2], raw[i + 3]));
    return Collections.unmodifiableList(out);
  }

  /**
   * LANCE_VECTOR_INDEX_* and LANCE_SCALAR_INDEX_* values (the two families share numbers: prefer
   * {@link VectorIndexType} and {@link ScalarIndexType}, which cannot be mixed up).
   */
  public static final int IVF_PQ = 0, IVF_FLAT = 1, IVF_SQ = 2, IVF_HNSW_FLAT = 3, IVF_HNSW_PQ = 4, IVF_HNSW_SQ = 5;
  public static final int BTREE = 0, BITMAP = 1, LABEL_LIST = 2;

  /**
   * Builds an index on `column` in this process and commits it as one new version (this handle
   * keeps its version): a vector, scalar or full-text index as {@code options} says, e.g.
   * {@code IndexOptions.vector(VectorIndexType.IVF_PQ).metric(Metric.COSINE).partitions(16).name("emb_idx")}.
   * Progress reports go to a bound call context.
   *
   * @return the version committed
   * @throws LanceException.InvalidArgument for a column of the wrong type, a taken name without
   *     replace, bad parameters
   * @throws LanceException.NotFound for an unknown column
   */
  public long createIndex(String column, IndexOptions options) {
    if (options == null) throw new LanceException.InvalidArgument("index options are null");
    return handle.withLong(h -> Native.createIndex(h, options.family, column, options.name, options.replace,
        options.params()));
  }

  /**
   * Builds a vector index (one process) and commits it; returns the new version (this handle
   * keeps its version). `numPartitions`/`numSubVectors` 0 = Lance's defaults; `metric` 0 = L2.
   */
  public long createVectorIndex(String column, String name, boolean replace, int type, int metric, int numPartitions,
      int numSubVectors) {
    int[] p = {type, metric, numPartitions, numSubVectors};
    return handle.withLong(h -> Native.createIndex(h, 0, column, name, replace, p));
  }

  /** {@link #createVectorIndex(String, String, boolean, int, int, int, int)} with typed kinds. */
  public long createVectorIndex(String column, String name, boolean replace, VectorIndexType type, Metric metric,
      int numPartitions, int numSubVectors) {
    return createVectorIndex(column, name, replace, type.code, metric.code, numPartitions, numSubVectors);
  }

  /** {@link #createScalarIndex(String, String, boolean, int)} with a typed kind. */
  public long createScalarIndex(String column, String name, boolean replace, ScalarIndexType type) {
    return createScalarIndex(column, name, replace, type.code);
  }

  /** {@link #trainVectorIndex(String, int, int, int, int)} with typed kinds. */
  public byte[] trainVectorIndex(String column, VectorIndexType type, Metric metric, int numPartitions,
      int numSubVectors) {
    return trainVectorIndex(column, type.code, metric.code, numPartitions, numSubVectors);
  }

  /** {@link #planVectorSearch(String, int, boolean, long)} with a typed metric. */
  public SplitPlan planVectorSearch(String column, Metric metric, boolean useIndex, long flatTargetRows) {
    return planVectorSearch(column, metric.code, useIndex, flatTargetRows);
  }

  /** Builds a scalar index (BTREE, BITMAP, LABEL_LIST); returns the new version. */
  public long createScalarIndex(String column, String name, boolean replace, int type) {
    return handle.withLong(h -> Native.createIndex(h, 1, column, name, replace, new int[] {type}));
  }

  /** Builds a full-text (INVERTED) index, with positions for phrase queries; returns the new version. */
  public long createInvertedIndex(String column, String name, boolean replace, boolean withPositions) {
    return handle.withLong(h -> Native.createIndex(h, 2, column, name, replace, new int[] {withPositions ? 1 : 0}));
  }

  /**
   * A distributed index build, step 1 of a vector index (on the coordinator): trains the global
   * model (IVF centroids, PQ codebook) once; ship nothing but the tasks planned with it.
   */
  public byte[] trainVectorIndex(String column, int type, int metric, int numPartitions, int numSubVectors) {
    int[] p = {type, metric, numPartitions, numSubVectors};
    return handle.with(h -> Native.trainVectorIndex(h, column, p));
  }

  /** A planned distributed index build: one task per build split, each bytes for a worker. */
  public static final class IndexBuild {
    /** What to build: a vector index with its trained model, or a scalar or full-text index. */
    final int kind;
    final int[] params;
    final byte[] model;
    String name;
    boolean replace;
    int numSplits;
    boolean unindexedOnly;

    private IndexBuild(int kind, int[] params, byte[] model) {
      this.kind = kind;
      this.params = params;
      this.model = model;
    }

    /** A vector index with the model of {@link #trainVectorIndex} (its type and metric again). */
    public static IndexBuild vector(byte[] model, int type, int metric) {
      if (model == null) throw new LanceException.InvalidArgument("a vector index build needs the trained model");
      return new IndexBuild(0, new int[] {type, metric, 0, 0}, model);
    }

    /** {@link #vector(byte[], int, int)} with typed kinds. */
    public static IndexBuild vector(byte[] model, VectorIndexType type, Metric metric) {
      return vector(model, type.code, metric.code);
    }

    /** {@link #scalar(int)} with a typed kind. */
    public static IndexBuild scalar(ScalarIndexType type) {
      return scalar(type.code);
    }

    /** A scalar index: BTREE, BITMAP or LABEL_LIST. */
    public static IndexBuild scalar(int type) {
      return new IndexBuild(1, new int[] {type}, null);
    }

    /** A full-text (INVERTED) index. */
    public static IndexBuild inverted(boolean withPositions) {
      return new IndexBuild(2, new int[] {withPositions ? 1 : 0}, null);
    }

    /** The index's name (null: Lance's default). */
    public IndexBuild name(String n) {
      name = n;
      return this;
    }

    /** Whether an existing index of that name is replaced (else its name is refused). */
    public IndexBuild replace(boolean r) {
      replace = r;
      return this;
    }

    /** Tasks to plan (0 = one per fragment). */
    public IndexBuild splits(int n) {
      numSplits = n;
      return this;
    }

    /** Extend an existing index of that name with the fragments it does not cover. */
    public IndexBuild unindexedOnly(boolean u) {
      unindexedOnly = u;
      return this;
    }
  }

  /**
   * Step 2 (coordinator): the build's tasks, one per build split, as bytes to ship. An empty
   * list means there is nothing to index.
   */
  public List<byte[]> planIndexBuild(String column, IndexBuild b) {
    if (b == null) throw new LanceException.InvalidArgument("the index build is null");
    return List.of(handle.with(h -> Native.planIndexBuild(h, b.kind, column, b.name, b.replace, b.params, b.model,
        b.numSplits, b.unindexedOnly)));
  }

  /**
   * Step 3 (a worker, on the table opened there at the planned version or later): builds one
   * task's segment and returns its bytes for the coordinator; nothing is committed.
   */
  public byte[] buildIndexTask(byte[] task) {
    return handle.with(h -> Native.indexBuildTask(h, task));
  }

  /**
   * Step 4 (coordinator): commits the segments of one plan as ONE index in ONE new version
   * ({@code merge}: merged into one segment first); segments of failed tasks may be left out.
   * Returns the new version.
   */
  public long commitIndexBuild(List<byte[]> segments, boolean merge) {
    if (segments == null) throw new LanceException.InvalidArgument("the index segments are null");
    byte[][] s = segments.toArray(new byte[0][]);
    return handle.withLong(h -> Native.commitIndexBuild(h, s, merge));
  }

  /** Loads an index into the session's index cache (the prewarm document's rules). */
  public void prewarmIndex(String name) {
    handle.with(h -> {
      Native.prewarmIndex(h, name);
      return null;
    });
  }

  /** Full-text search splits: one per INVERTED index segment, flat splits over unindexed fragments. */
  public SplitPlan planTextSearch(String column, long flatTargetRows) {
    return handle.with(h -> Native.planFts(h, column, flatTargetRows));
  }

  /** The corpus statistics (BM25) of a query: computed once on the planner, shipped to every split. */
  public byte[] textStatistics(TextQuery q) {
    if (q == null) throw new LanceException.InvalidArgument("query is null");
    return handle.with(h -> Native.ftsStats(h, q.column, q.text, q.match, q.slop, q.k, q.prefilter));
  }

  /** The k best rows of one full-text split ({@code _score}, {@code _rowid}, columns). */
  public ArrowStream searchText(byte[] split, TextQuery q, byte[] statistics, BufferAllocator allocator) {
    if (q == null) throw new LanceException.InvalidArgument("query is null");
    long s = handle.withLong(h -> Native.splitFts(h, split, q.column, q.text, q.match, q.slop, q.k, q.prefilter,
        q.columns, statistics));
    return new ArrowStream(s, allocator);
  }

  /** Merges the per-split results of a full-text search into the global top k (consumes the streams). */
  public static ArrowStream mergeText(List<ArrowStream> parts, long k, long offset, BufferAllocator allocator) {
    return new ArrowStream(Native.ftsMerge(detachAll(parts), k, offset), allocator);
  }

  /** Per-fragment and per-column sizes of the snapshot (from metadata; no data read). */
  public static final class Statistics {
    /** Per fragment: id, physical rows, deleted rows, bytes on disk (-1 = unknown). */
    public final List<long[]> fragments;
    /** The same per fragment, as records (since 0.15). */
    public final List<FragmentStats> fragmentStats;
    /** Per column: name -> bytes on disk (-1 = unknown). */
    public final Map<String, Long> columnBytes;

    /** Built by the JNI glue (jni_statistics.c) from a LanceTableStats. */
    Statistics(FragmentStats[] fragments, String[] columns, long[] columnBytes) {
      List<long[]> f = new ArrayList<>();
      for (FragmentStats s : fragments) f.add(new long[] {s.id(), s.physicalRows(), s.deletedRows(), s.bytesOnDisk()});
      this.fragments = Collections.unmodifiableList(f);
      this.fragmentStats = List.of(fragments);
      Map<String, Long> cols = new java.util.LinkedHashMap<>();
      for (int i = 0; i < columns.length; i++) cols.put(columns[i], columnBytes[i]);
      this.columnBytes = Collections.unmodifiableMap(cols);
    }
  }

  /**
   * One fragment's figures from the snapshot's metadata.
   *
   * @param id the fragment's id
   * @param physicalRows rows in its data files
   * @param deletedRows rows its deletion file removes
   * @param bytesOnDisk bytes of its data files (-1 = unknown)
   */
  public record FragmentStats(long id, long physicalRows, long deletedRows, long bytesOnDisk) {}

  /** Rows, deletions and bytes per fragment and per column, from the snapshot's metadata (no data read). */
  public Statistics statistics() {
    return handle.with(Native::datasetStatistics);
  }

  /** The blobs of a blob column for `rowIds` ({@code _rowid} values of this snapshot). */
  public Blobs takeBlobs(String column, long[] rowIds) {
    return new Blobs(handle.withLong(h -> Native.blobsTake(h, column, rowIds)));
  }

  /** Runs `f` with the C handle held open (for calls that take a pinned snapshot). */
  <T> T withHandle(java.util.function.LongFunction<T> f) {
    return handle.with(f);
  }

  /** Releases the handle; streams and splits taken from it keep what they need. Idempotent; other threads may still be calling (they finish first). */
  @Override
  public void close() {
    handle.close();
  }
}
