package org.lancehost.spark;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.lancehost.Dataset;

/**
 * The driver's pinned snapshot on the executors: its token (the table's URI, version and manifest,
 * no credentials) is broadcast once per query, and each executor opens it once and shares the
 * handle between the query's tasks — no task reads the manifest from storage, and a table of many
 * fragments is not shipped once per partition. Handles are thread-safe; an open snapshot is closed
 * when it has no task left and newer ones pushed it out.
 */
final class Snapshots {
  private Snapshots() {}

  /** Open snapshots an executor keeps when no task uses them. */
  static final int KEEP = 8;

  /**
   * What a partition carries to open the query's snapshot: the token, and either the storage
   * options to open it with (a table given by URI: the user's options) or the catalog table, which
   * the executor describes through its own catalog (vended credentials never travel in a task).
   */
  static final class Ref implements Serializable {
    private static final long serialVersionUID = 1L;
    final Broadcast<byte[]> token;
    final HashMap<String, String> storage;
    final CatalogTable table;

    Ref(Broadcast<byte[]> token, HashMap<String, String> storage, CatalogTable table) {
      this.token = token;
      this.storage = storage;
      this.table = table;
    }
  }

  /** On the driver: ship `ds`'s snapshot to the executors of the active session. */
  static Ref ship(Dataset ds, HashMap<String, String> storage) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(SparkSession.active().sparkContext());
    return new Ref(jsc.broadcast(ds.snapshot()), storage, null);
  }

  /** {@link #ship(Dataset, HashMap)} for a table read with `options`: a catalog table by its name. */
  static Ref ship(Dataset ds, Options options) {
    if (options.catalogTable == null) return ship(ds, options.storage);
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(SparkSession.active().sparkContext());
    return new Ref(jsc.broadcast(ds.snapshot()), null, options.catalogTable);
  }

  private static final class Key {
    final long broadcast;
    final Object source; // the storage options, or the catalog table

    Key(Ref r) {
      broadcast = r.token.id();
      source = r.table != null ? r.table : r.storage == null ? new HashMap<String, String>() : r.storage;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key && ((Key) o).broadcast == broadcast && ((Key) o).source.equals(source);
    }

    @Override
    public int hashCode() {
      return Objects.hash(broadcast, source);
    }
  }

  private static final class Entry {
    final Dataset dataset;
    int users;
    boolean cached = true;

    Entry(Dataset dataset) {
      this.dataset = dataset;
    }
  }

  private static final LinkedHashMap<Key, Entry> OPEN = new LinkedHashMap<>(16, 0.75f, true);

  /** A task's use of an open snapshot; closing it hands the snapshot back. */
  static final class Lease implements AutoCloseable {
    private final Entry entry;
    private boolean closed;

    private Lease(Entry entry) {
      this.entry = entry;
    }

    Dataset dataset() {
      return entry.dataset;
    }

    @Override
    public void close() {
      synchronized (OPEN) {
        if (closed) return;
        closed = true;
        entry.users--;
        if (!entry.cached && entry.users == 0) entry.dataset.close();
        trim();
      }
    }
  }

  /** On an executor: the query's snapshot, opened by the first task that needs it. */
  static Lease open(Ref ref) {
    Key key = new Key(ref);
    synchronized (OPEN) {
      Entry e = OPEN.get(key);
      if (e == null) {
        HashMap<String, String> storage = ref.table != null ? ref.table.storageOptions() : ref.storage;
        e = new Entry(Dataset.fromSnapshot(ref.token.value(), storage));
        OPEN.put(key, e);
      }
      e.users++;
      trim();
      return new Lease(e);
    }
  }

  /** Closes the least recently used snapshots no task uses beyond {@link #KEEP}. */
  private static void trim() {
    int excess = OPEN.size() - KEEP;
    for (Iterator<Map.Entry<Key, Entry>> it = OPEN.entrySet().iterator(); excess > 0 && it.hasNext(); ) {
      Entry e = it.next().getValue();
      if (e.users == 0) {
        it.remove();
        e.cached = false;
        e.dataset.close();
        excess--;
      }
    }
  }

  /** Open snapshots this JVM keeps (for tests and leak checks). */
  static int openCount() {
    synchronized (OPEN) {
      return OPEN.size();
    }
  }
}
