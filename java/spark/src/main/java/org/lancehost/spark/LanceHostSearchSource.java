package org.lancehost.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.SplitPlan;
import org.lancehost.VectorQuery;

/**
 * {@code format("lance_host_search")}: a nearest-neighbour search as a DataFrame. The plan is
 * the library's (one partition per index segment, flat partitions over unindexed fragments);
 * each partition returns its top k with {@code _distance} and {@code _rowid}, so
 * {@code ORDER BY _distance LIMIT k} over the DataFrame is the global top k. Options:
 * {@code uri}, {@code column}, {@code vector} (a JSON list of numbers), {@code k},
 * {@code nprobes}, {@code refine} (re-rank factor), {@code metric} (l2, cosine, dot, hamming),
 * {@code use_index} (false = exact), {@code filter} (a prefilter), {@code columns}
 * (comma-separated; default all), {@code version}/{@code timestamp_ms}, {@code storage.<key>},
 * {@code global} (true: one partition that searches every split and merges them, so the
 * DataFrame is the global top k itself, ordered by distance; default false).
 */
public final class LanceHostSearchSource implements TableProvider, DataSourceRegister {
  static final List<String> OPTIONS = List.of("uri", "path", "version", "timestamp_ms", "filter", "column", "vector", "k",
      "nprobes", "refine", "metric", "use_index", "columns", "global");

  @Override
  public String shortName() {
    return "lance_host_search";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    Query q = new Query(options);
    try (Dataset ds = q.options.open(); ArrowStream s = q.first(ds)) {
      return SparkTypes.schema(s.schema());
    }
  }

  @Override
  public org.apache.spark.sql.connector.catalog.Table getTable(StructType schema, Transform[] partitioning,
      Map<String, String> properties) {
    Query q = new Query(properties);
    return SplitSource.pinned(q.options, ds -> {
      StructType s = schema;
      if (s == null) {
        try (ArrowStream first = q.first(ds)) {
          s = SparkTypes.schema(first.schema());
        }
      }
      return new SplitSource.QueryTable("lance_host_search " + q.options.requireUri(), ds, s, new SplitSource.Planner() {
        @Override
        public String describe(Dataset d) {
          return "LanceHostSearch column=" + q.column + " k=" + q.k + " use_index=" + q.useIndex + " version=" + d.version();
        }

        @Override
        public List<InputPartition> partitions(Dataset d) {
          List<InputPartition> out = new ArrayList<>();
          Snapshots.Ref snapshot = Snapshots.ship(d, new HashMap<>(q.options.storage));
          List<byte[]> splits = q.plan(d).splits();
          if (q.global) {
            out.add(new SearchPartition(splits, true, q, snapshot));
            return out;
          }
          for (byte[] split : splits) out.add(new SearchPartition(List.of(split), false, q, snapshot));
          return out;
        }
      });
    });
  }

  /** The search the options describe. */
  static final class Query implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final Options options;
    final String column;
    final float[] vector;
    final long k;
    final int nprobes;
    final int refine;
    final int metric;
    final boolean useIndex;
    final String[] columns;
    final boolean global;

    Query(Map<String, String> raw) {
      options = new Options(raw, OPTIONS, "format(\"lance_host_search\")");
      column = required("column");
      String v = required("vector");
      try {
        JsonNode n = new ObjectMapper().readTree(v);
        if (!n.isArray() || n.size() == 0) throw new IllegalArgumentException();
        vector = new float[n.size()];
        for (int i = 0; i < vector.length; i++) {
          if (!n.get(i).isNumber()) throw new IllegalArgumentException();
          vector[i] = (float) n.get(i).asDouble();
        }
      } catch (Exception e) {
        throw new LanceException.InvalidArgument("option vector must be a JSON list of numbers, not '" + v + "'");
      }
      k = options.intOption("k", 10, 1);
      nprobes = options.intOption("nprobes", 0, 0);
      refine = options.intOption("refine", 0, 0);
      String m = options.all.getOrDefault("metric", "").trim().toLowerCase(java.util.Locale.ROOT);
      Map<String, Integer> metrics = Map.of("", VectorQuery.METRIC_DEFAULT, "l2", VectorQuery.L2, "cosine", VectorQuery.COSINE,
          "dot", VectorQuery.DOT, "hamming", VectorQuery.HAMMING);
      if (!metrics.containsKey(m)) throw new LanceException.InvalidArgument("option metric must be l2, cosine, dot or hamming, not '" + m + "'");
      metric = metrics.get(m);
      String u = options.all.getOrDefault("use_index", "true").trim().toLowerCase(java.util.Locale.ROOT);
      if (!u.equals("true") && !u.equals("false")) throw new LanceException.InvalidArgument("option use_index must be true or false");
      useIndex = u.equals("true");
      String g = options.all.getOrDefault("global", "false").trim().toLowerCase(java.util.Locale.ROOT);
      if (!g.equals("true") && !g.equals("false")) throw new LanceException.InvalidArgument("option global must be true or false");
      global = g.equals("true");
      String c = options.all.get("columns");
      List<String> cols = new ArrayList<>();
      if (c != null) for (String x : c.split(",")) if (!x.trim().isEmpty()) cols.add(x.trim());
      columns = cols.isEmpty() ? null : cols.toArray(new String[0]);
    }

    private String required(String key) {
      String v = options.all.get(key);
      if (v == null || v.trim().isEmpty()) throw new LanceException.InvalidArgument("option " + key + " is required");
      return v;
    }

    VectorQuery query() {
      VectorQuery q = VectorQuery.of(column, vector, k).metric(metric).nprobes(nprobes).refineFactor(refine)
          .prefilter(options.filter);
      return columns == null ? q : q.columns(List.of(columns));
    }

    SplitPlan plan(Dataset ds) {
      return ds.planVectorSearch(column, metric, useIndex, 0);
    }

    /** The first split's stream (its schema is every split's). */
    ArrowStream first(Dataset ds) {
      List<byte[]> splits = plan(ds).splits();
      if (splits.isEmpty()) {
        throw new LanceException.NotFound("table " + options.requireUri() + " has no rows to search (no split was planned)");
      }
      return ds.search(splits.get(0), query(), SparkTypes.allocator());
    }
  }

  static final class SearchPartition extends SplitSource.SearchWork {
    private static final long serialVersionUID = 1L;
    final Query q;

    SearchPartition(List<byte[]> splits, boolean global, Query q, Snapshots.Ref snapshot) {
      super(splits, global, snapshot);
      this.q = q;
    }

    @Override
    ArrowStream one(Dataset ds, byte[] split) {
      return ds.search(split, q.query(), SparkTypes.allocator());
    }

    @Override
    ArrowStream merge(List<ArrowStream> parts) {
      return Dataset.mergeTopK(parts, q.k, 0, SparkTypes.allocator());
    }
  }

}
