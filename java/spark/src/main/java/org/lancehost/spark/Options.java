package org.lancehost.spark;

import java.io.Serializable;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.lancehost.Dataset;
import org.lancehost.LanceException;

/**
 * The options of {@code format("lance_host")}: {@code uri} (or the path given to load/save),
 * {@code version}, {@code timestamp_ms} or {@code timestamp_us} (the snapshot: the latest version
 * committed at or before that instant; default the latest), {@code filter} (a
 * Lance SQL filter applied by Lance besides the pushed ones), {@code target_rows} (rows per
 * split, larger fragments cut into row slices; default one split per fragment, or row slices
 * when the table has fewer fragments than Spark has cores: LanceScan.defaultPlan),
 * {@code batch_size}, and {@code storage.<key>} storage options. An unknown option is an error
 * naming the closest valid one: a typo must not silently read another snapshot or other rows.
 */
final class Options implements Serializable {
  private static final long serialVersionUID = 1L;
  static final List<String> READ = List.of("uri", "path", "version", "timestamp_ms", "timestamp_us", "branch", "tag", "changes_since",
      "filter", "target_rows", "batch_size");
  static final List<String> WRITE = List.of("uri", "path", "commit_message", "max_rows_per_file", "vector_columns");
  /** A TableProvider gets read and write options in one map (Spark does not say which). */
  static final List<String> ALL;

  static {
    List<String> all = new ArrayList<>(READ);
    for (String w : WRITE) if (!all.contains(w)) all.add(w);
    ALL = List.copyOf(all);
  }

  final String uri;
  final long version;
  /** The instant whose latest version to read, microseconds since the epoch (null: none). */
  final Long timestampUs;
  /** The branch to read (null: the default one). */
  final String branch;
  /** The tag whose version (and branch) to read (null: none). */
  final String tag;
  /** Read the rows changed after this version (change splits) instead of the table; null: the table. */
  final Long changesSince;
  final String filter;
  final long targetRows;
  final long batchSize;
  final long maxRowsPerFile;
  final HashMap<String, String> storage;
  final HashMap<String, String> all;
  /** The catalog table these options describe (null: a table given by its URI). */
  CatalogTable catalogTable;

  Options(Map<String, String> options, List<String> valid, String what) {
    all = new HashMap<>();
    storage = new HashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      String k = e.getKey().toLowerCase(Locale.ROOT);
      all.put(k, e.getValue());
      if (k.startsWith("storage.")) {
        storage.put(e.getKey().substring("storage.".length()), e.getValue());
      } else if (!valid.contains(k)) {
        throw new LanceException.InvalidArgument("unknown option '" + e.getKey() + "' for " + what
            + closest(k, valid) + "; valid options: " + String.join(", ", valid) + ", storage.<key>");
      }
    }
    String u = all.get("uri");
    if (u == null || u.isEmpty()) u = all.get("path");
    uri = u;
    version = longOption("version", 0);
    if (all.containsKey("timestamp_ms") && all.containsKey("timestamp_us")) {
      throw new LanceException.InvalidArgument("options timestamp_ms and timestamp_us pin two snapshots: give one");
    }
    if (all.containsKey("timestamp_us")) {
      timestampUs = longOption("timestamp_us", 0);
    } else if (all.containsKey("timestamp_ms")) {
      long ms = longOption("timestamp_ms", 0);
      if (ms > Long.MAX_VALUE / 1000 || ms < Long.MIN_VALUE / 1000) {
        throw new LanceException.InvalidArgument("option timestamp_ms is out of range: " + ms);
      }
      timestampUs = ms * 1000;
    } else {
      timestampUs = null;
    }
    if (version != 0 && timestampUs != null) {
      throw new LanceException.InvalidArgument("options version and timestamp_ms pin two snapshots: give one");
    }
    filter = emptyToNull(all.get("filter"));
    branch = emptyToNull(all.get("branch"));
    tag = emptyToNull(all.get("tag"));
    if (tag != null && (branch != null || version != 0 || timestampUs != null)) {
      throw new LanceException.InvalidArgument("option tag names a version and its branch: give it alone");
    }
    if (branch != null && timestampUs != null) {
      throw new LanceException.InvalidArgument("options branch and timestamp_ms cannot be combined: pin a version");
    }
    changesSince = emptyToNull(all.get("changes_since")) == null ? null : longOption("changes_since", 0);
    if (changesSince != null && filter != null) {
      throw new LanceException.InvalidArgument("option filter cannot be combined with changes_since (deleted rows are "
          + "read as they were): filter the DataFrame instead");
    }
    targetRows = longOption("target_rows", 0);
    batchSize = longOption("batch_size", 0);
    maxRowsPerFile = longOption("max_rows_per_file", 0);
  }

  /**
   * Option vector_columns, "name:dim,name:dim": array columns a new table stores as fixed-size
   * lists (vectors Lance can index); others become variable-length lists.
   */
  Map<String, Integer> vectorColumns() {
    return vectorColumns(all.get("vector_columns"));
  }

  /** A vector_columns value ("name:dim,name:dim", null = none) as name -> dimension. */
  static Map<String, Integer> vectorColumns(String v) {
    Map<String, Integer> out = new HashMap<>();
    if (v == null || v.trim().isEmpty()) return out;
    for (String part : v.split(",")) {
      String[] kv = part.trim().split(":");
      try {
        if (kv.length != 2) throw new NumberFormatException();
        int dim = Integer.parseInt(kv[1].trim());
        if (dim <= 0) throw new NumberFormatException();
        out.put(kv[0].trim(), dim);
      } catch (NumberFormatException e) {
        throw new LanceException.InvalidArgument("option vector_columns takes name:dimension pairs, not '" + part.trim() + "'");
      }
    }
    return out;
  }

  /** A catalog table's options: its location and the storage options the catalog vends. */
  static Options forTable(String location, Map<String, String> storageOptions, long version, Long timestampUs) {
    return forTable(location, storageOptions, version, timestampUs, null, null);
  }

  /** A catalog table's options on a branch or at a tag (null: none). */
  static Options forTable(String location, Map<String, String> storageOptions, long version, Long timestampUs,
      String branch, String tag) {
    Map<String, String> m = new HashMap<>();
    m.put("uri", location);
    if (branch != null) m.put("branch", branch);
    if (tag != null) m.put("tag", tag);
    if (version != 0) m.put("version", Long.toString(version));
    if (timestampUs != null) m.put("timestamp_us", Long.toString(timestampUs));
    for (Map.Entry<String, String> e : storageOptions.entrySet()) m.put("storage." + e.getKey(), e.getValue());
    return new Options(m, READ, "a catalog table");
  }

  /** These options as the catalog table `t`'s (executors describe it through their own catalog). */
  Options inCatalog(CatalogTable t) {
    catalogTable = t;
    return this;
  }

  String requireUri() {
    if (uri == null || uri.isEmpty()) {
      throw new LanceException.InvalidArgument("the table is not given: set option uri or pass a path to load()/save()");
    }
    return uri;
  }

  Dataset open() {
    String u = requireUri();
    if (timestampUs != null) return Dataset.openAt(u, storage, Instant.EPOCH.plus(timestampUs, java.time.temporal.ChronoUnit.MICROS));
    if (tag != null) return Dataset.openTag(u, storage, tag);
    if (branch != null) return Dataset.openBranch(u, storage, branch, version);
    return Dataset.open(u, storage, version);
  }

  private long longOption(String key, long dflt) {
    String v = all.get(key);
    if (v == null || v.isEmpty()) return dflt;
    try {
      long n = Long.parseLong(v.trim());
      if (n < 0) throw new NumberFormatException();
      return n;
    } catch (NumberFormatException e) {
      throw new LanceException.InvalidArgument("option " + key + " must be a non-negative integer, not '" + v + "'");
    }
  }

  /** An integer option of at least {@code min} that fits Java's int ({@code dflt} when absent). */
  int intOption(String key, int dflt, int min) {
    String v = all.get(key);
    if (v == null || v.trim().isEmpty()) return dflt;
    try {
      long n = Long.parseLong(v.trim());
      if (n < min || n > Integer.MAX_VALUE) throw new NumberFormatException();
      return (int) n;
    } catch (NumberFormatException e) {
      throw new LanceException.InvalidArgument("option " + key + " must be an integer of at least " + min + ", not '" + v + "'");
    }
  }

  private static String emptyToNull(String s) {
    return s == null || s.trim().isEmpty() ? null : s;
  }

  private static String closest(String k, List<String> valid) {
    String best = null;
    int bestD = Integer.MAX_VALUE;
    for (String v : valid) {
      int d = distance(k, v);
      if (d < bestD) {
        bestD = d;
        best = v;
      }
    }
    return best != null && bestD <= Math.max(2, k.length() / 3) ? " (did you mean '" + best + "'?)" : "";
  }

  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) prev[j] = j;
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int c = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + c);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  static List<String> list(String[] a) {
    return a == null ? new ArrayList<>() : new ArrayList<>(List.of(a));
  }
}
