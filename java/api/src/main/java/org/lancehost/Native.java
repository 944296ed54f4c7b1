package org.lancehost;

import java.util.Map;

/**
 * The JNI entry points over lance_host.h (java/native/src/jni_*.c, one file per area). Package-private:
 * the public classes check handles and own what these return. Every {@code long} is a C pointer;
 * 0 means none. A failing call throws the {@link LanceException} of its error code.
 */
final class Native {
  private Native() {}

  static {
    NativeLoader.load();
    LibraryLog.install();
  }

  static native String version();
  static native String buildProfile();

  static native String buildFeatures();
  static native String errorCodeName(int code);
  static native String[] metrics();
  static native void logSetLevel(int level);

  static native long datasetOpen(String uri, String[] options, long version, long timestampMicros, boolean atTimestamp);
  static native long snapshotOpen(byte[] token, String[] options);
  static native long splitOpenDataset(byte[] split, String[] options);
  static native void datasetFree(long ds);
  static native byte[] datasetExportSnapshot(long ds);
  static native byte[] datasetExportSplitSnapshot(long ds, byte[] split);
  static native long datasetVersion(long ds);
  static native long datasetLatestVersion(long ds);
  static native String datasetUri(long ds);
  static native long datasetCountRows(long ds, String filter);
  static native long splitCountRows(long ds, byte[] split, String filter);
  static native long datasetSchema(long ds);
  static native Dataset.Version[] datasetVersions(long ds);

  static native SplitPlan planScan(long ds, long targetRows, boolean slices);
  static native SplitPlan planVectorSearch(long ds, String column, int metric, boolean useIndex, long flatTargetRows);
  static native Split splitInfo(byte[] split);

  static native long scan(long ds, byte[] split, String[] columns, String filter, long limit, long offset,
      long batchSize, boolean withRowId, String orderBy, String keyColumn, String[] keys, long dynamicFilter);
  static native long dynamicFilterNew(long ds, String[] columns);
  static native void dynamicFilterSetSql(long filter, String sql);
  static native void dynamicFilterSetKeys(long filter, String column, String[] keys);
  static native long dynamicFilterGeneration(long filter);
  static native void dynamicFilterFree(long filter);
  static native String explainScan(long ds, String[] columns, String filter, long limit, long offset, String orderBy,
      String keyColumn, String[] keys);
  static native long takeRows(long ds, long[] rowIds, String[] columns);

  static native long splitSearch(long ds, byte[] split, String column, float[] vector, long k, int metric,
      int nprobes, int refineFactor, String prefilter, String[] columns, boolean withRowId);
  static native long topkMerge(long[] streams, long k, long offset);

  static native long aggregate(long ds, byte[] split, String[] groupBy, String[] groupExpressions, int[] functions,
      String[] columns,
      String[] aliases, String[] expressions, String filter, byte[] substraitPlan);
  static native long aggregateMerge(long[] streams);

  static native long catalogOpen(String[] properties);
  static native void catalogFree(long catalog);
  static native String[][] catalogListNamespaces(long catalog, String[] namespace, boolean recursive);
  static native String[] catalogListTables(long catalog, String[] namespace);
  static native Catalog.TableInfo catalogDescribeTable(long catalog, String[] namespace, String table);
  static native long catalogOpenTable(long catalog, String[] namespace, String table, long version);
  static native void catalogCreateNamespace(long catalog, String[] namespace, boolean existOk, String[] properties);
  static native void catalogDropNamespace(long catalog, String[] namespace, boolean cascade, boolean missingOk);
  static native void catalogDropTable(long catalog, String[] namespace, String table, boolean missingOk);
  static native Write.Result catalogCreateTable(long catalog, String[] namespace, String table, HostStream source,
      String[] options);

  static native Write.Result tableCommit(String uri, byte[][] staged, int mode, String statementId, String message,
      String[] options, long expectedVersion, String[] requiredConfig);
  static native Write.Result[] commitTables(String[] uris, byte[][][] staged, String[] statementIds, String[] messages,
      String[][] options, long[] expectedVersions, String[][] requiredConfigs);
  static native String[] datasetConfig(long ds);
  static native long datasetOpenBranch(String uri, String[] options, String branch, long version);
  static native String datasetBranch(long ds);
  static native long datasetOpenTag(String uri, String[] options, String tag);
  static native long catalogOpenTableRef(long catalog, String[] namespace, String table, String branch, String tag,
      long version);
  static native long datasetCreateBranch(long ds, String name, long version);
  static native void datasetDeleteBranch(long ds, String name);
  static native String[] datasetBranches(long ds);
  static native long datasetShallowClone(long ds, String target, String[] options);
  static native Write.Result datasetUpdateConfig(long ds, String[] set, String[] remove, long expectedVersion,
      String[] requiredConfig);
  static native SplitPlan planChanges(long ds, long sinceVersion, long sinceTimestampMs, int types, long targetRows);
  static native Write.Result datasetDelete(long ds, String predicate, String statementId);
  static native long stagedAbort(byte[][] staged, String[] options);
  static native Write.Staged stageRowDeletes(long ds, long[] addresses);
  static native Write.Staged stageDelete(long ds, byte[] split, String predicate);
  static native Write.Result datasetUpdate(long ds, String[] columns, String[] expressions, String predicate, String statementId);
  static native Object mergeInsert(long ds, HostStream source, String[] on, int[] modes, String matchedCondition,
      String bySourceCondition, String statementId, boolean staged);
  static native Write.Result tableWrite(String uri, long at, HostStream source, int mode, String statementId, String message,
      String[] options, long maxRowsPerFile, long expectedVersion, String[] requiredConfig, boolean stableRowIds);
  static native Write.Staged stageWrite(String uri, long at, HostStream source, int mode, String[] options, long maxRowsPerFile);

  static native Maintenance.CompactResult compact(long ds, long targetRows, long rowsPerGroup, float deletionThreshold,
      boolean keepDeletions);
  static native Maintenance.CleanupResult cleanup(long ds, long olderThanMs, boolean deleteUnverified);
  static native void createTag(long ds, String name, long version);
  static native void deleteTag(long ds, String name);
  static native Maintenance.Tag[] tags(long ds);
  static native byte[] splitsCombine(byte[][] splits);

  static native void credentialsRegister(String uri, String[] storageOptions, Credentials.Provider provider);
  static native Session.Options sessionDefaults();
  static native void sessionConfigure(Session.Options options);
  static native Map<String, Long> sessionStats();

  static native String[] datasetIndexes(long ds);
  static native long createIndex(long ds, int kind, String column, String name, boolean replace, int[] params);
  static native void prewarmIndex(long ds, String name);
  static native byte[] trainVectorIndex(long ds, String column, int[] params);
  static native byte[][] planIndexBuild(long ds, int kind, String column, String name, boolean replace, int[] params,
      byte[] model, int numSplits, boolean unindexedOnly);
  static native byte[] indexBuildTask(long ds, byte[] task);
  static native long commitIndexBuild(long ds, byte[][] segments, boolean merge);

  static native SplitPlan planFts(long ds, String column, long flatTargetRows);
  static native byte[] ftsStats(long ds, String column, String text, int match, int slop, long k, String prefilter);
  static native long splitFts(long ds, byte[] split, String column, String text, int match, int slop, long k,
      String prefilter, String[] columns, byte[] stats);
  static native long ftsMerge(long[] streams, long k, long offset);

  static native Dataset.Statistics datasetStatistics(long ds);
  static native long blobsTake(long ds, String column, long[] rowIds);
  static native void blobsFree(long blobs);
  static native long blobsCount(long blobs);
  static native Blobs.Info blobsInfo(long blobs, long index);
  static native byte[] blobsRead(long blobs, long index, long offset, long length);

  static native long streamSchema(long stream);
  static native long streamNext(long stream);
  static native IoStats streamIoStats(long stream);
  static native void streamCancel(long stream);
  static native void streamRelease(long stream);
  static native void schemaRelease(long schema);
  static native void arrayRelease(long array);
}
