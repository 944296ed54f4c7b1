package org.lancehost;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A catalog of Lance tables: a directory warehouse ({@code root}) or a REST namespace service
 * ({@code type=rest}, {@code uri}), with the properties {@code lance_catalog_open} documents.
 * Namespaces are lists of name parts; the empty list is the catalog's top. Thread-safe; closing
 * waits for calls in flight, and datasets opened through the catalog stay valid after it closes.
 */
public final class Catalog implements AutoCloseable {
  private final Handle handle;

  private Catalog(long ptr) {
    handle = new Handle(ptr, "catalog", Native::catalogFree);
  }

  /** Connects with `properties` (e.g. {@code root=/data/warehouse}); an unknown key is an error. */
  public static Catalog open(Map<String, String> properties) {
    return new Catalog(Native.catalogOpen(Dataset.options(properties)));
  }

  private static String[] ns(List<String> namespace) {
    return namespace == null ? new String[0] : namespace.toArray(new String[0]);
  }

  /** The child namespaces of `namespace` (all descendants with `recursive`), as full paths. */
  public List<List<String>> listNamespaces(List<String> namespace, boolean recursive) {
    String[][] raw = handle.with(p -> Native.catalogListNamespaces(p, ns(namespace), recursive));
    List<List<String>> out = new ArrayList<>();
    for (String[] path : raw) out.add(List.of(path));
    return Collections.unmodifiableList(out);
  }

  /** The tables of `namespace`, sorted. */
  public List<String> listTables(List<String> namespace) {
    return List.of(handle.with(p -> Native.catalogListTables(p, ns(namespace))));
  }

  /** Where a table lives, how to open it, and its latest version. */
  public TableInfo describeTable(List<String> namespace, String table) {
    return handle.with(p -> Native.catalogDescribeTable(p, ns(namespace), table));
  }

  /** A table on `branch` ("main" = the default one) at `version` of it (0 = its latest). */
  public Dataset openTableBranch(List<String> namespace, String table, String branch, long version) {
    if (branch == null) throw new LanceException.InvalidArgument("branch is null");
    return Dataset.wrap(handle.withLong(p -> Native.catalogOpenTableRef(p, ns(namespace), table, branch, null, version)));
  }

  /** A table at the version (and branch) tag `tag` names. */
  public Dataset openTableTag(List<String> namespace, String table, String tag) {
    if (tag == null) throw new LanceException.InvalidArgument("tag is null");
    return Dataset.wrap(handle.withLong(p -> Native.catalogOpenTableRef(p, ns(namespace), table, null, tag, 0)));
  }

  /** A table pinned at `version` (0 = the latest now). */
  public Dataset openTable(List<String> namespace, String table, long version) {
    return Dataset.wrap(handle.withLong(p -> Native.catalogOpenTable(p, ns(namespace), table, version)));
  }

  /**
   * CREATE TABLE in {@code namespace} AS the batches (none: an empty table of {@code schema}):
   * the catalog declares the table and the rows are written there as version 1; a failed write
   * withdraws the declaration. A table that exists is {@link LanceException.InvalidArgument}.
   */
  public Write.Result createTable(List<String> namespace, String table, Schema schema, Iterator<VectorSchemaRoot> batches,
      Map<String, String> storageOptions) {
    HostStream s = new HostStream(schema, batches == null ? Collections.emptyIterator() : batches);
    return handle.with(p -> (Native.catalogCreateTable(p, ns(namespace), table, s,
        Dataset.options(storageOptions))));
  }

  /**
   * Creates a namespace (`existOk`: an existing one is no error) with optional properties.
   *
   * @throws LanceException.NotFound when the parent is missing
   */
  public void createNamespace(List<String> namespace, boolean existOk, Map<String, String> properties) {
    handle.with(p -> {
      Native.catalogCreateNamespace(p, ns(namespace), existOk, Dataset.options(properties));
      return null;
    });
  }

  /** Drops a namespace; with `cascade` its tables and namespaces too (else it must be empty). */
  public void dropNamespace(List<String> namespace, boolean cascade, boolean missingOk) {
    handle.with(p -> {
      Native.catalogDropNamespace(p, ns(namespace), cascade, missingOk);
      return null;
    });
  }

  /**
   * Drops a table and its data (`missingOk`: a missing one is no error).
   *
   * @throws LanceException.NotFound otherwise
   */
  public void dropTable(List<String> namespace, String table, boolean missingOk) {
    handle.with(p -> {
      Native.catalogDropTable(p, ns(namespace), table, missingOk);
      return null;
    });
  }

  /** Releases the catalog; tables opened from it stay open. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }

  /** A table's location, the storage options to open it with, and its latest version. */
  public static final class TableInfo {
    public final String location;
    public final Map<String, String> storageOptions;
    public final long latestVersion;

    TableInfo(String location, String[] storageOptions, long latestVersion) { // built by the JNI glue
      Map<String, String> options = new HashMap<>();
      for (int i = 0; i + 1 < storageOptions.length; i += 2) options.put(storageOptions[i], storageOptions[i + 1]);
      this.location = location;
      this.storageOptions = Collections.unmodifiableMap(options);
      this.latestVersion = latestVersion;
    }
  }
}
