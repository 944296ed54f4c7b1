package org.lancehost.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
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
import org.lancehost.TextQuery;

/**
 * {@code format("lance_host_text")}: a full-text search as a DataFrame. The driver plans the
 * library's splits (one per INVERTED index segment, flat splits over unindexed fragments) and
 * computes the query's corpus statistics once; every partition scores its split with them, so
 * scores compare across partitions and {@code ORDER BY _score DESC LIMIT k} is the global top k.
 * Options: {@code uri}, {@code column}, {@code text}, {@code k}, {@code match} (any, all,
 * phrase), {@code slop}, {@code filter} (a prefilter), {@code columns}, {@code version} /
 * {@code timestamp_ms}, {@code storage.<key>}, {@code global} (true: one partition that scores
 * every split and merges them, so the DataFrame is the global top k by score; default false).
 */
public final class LanceHostTextSource implements TableProvider, DataSourceRegister {
  static final List<String> OPTIONS = List.of("uri", "path", "version", "timestamp_ms", "filter", "column", "text", "k",
      "match", "slop", "columns", "global");

  @Override
  public String shortName() {
    return "lance_host_text";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    Query q = new Query(options);
    try (Dataset ds = q.options.open()) {
      return q.schema(ds);
    }
  }

  @Override
  public org.apache.spark.sql.connector.catalog.Table getTable(StructType schema, Transform[] partitioning,
      Map<String, String> properties) {
    Query q = new Query(properties);
    return SplitSource.pinned(q.options, ds -> new SplitSource.QueryTable("lance_host_text " + q.options.requireUri(), ds,
        schema != null ? schema : q.schema(ds), new SplitSource.Planner() {
          @Override
          public String describe(Dataset d) {
            return "LanceHostTextSearch column=" + q.column + " k=" + q.k + " version=" + d.version();
          }

          @Override
          public List<InputPartition> partitions(Dataset d) {
            SplitPlan plan = d.planTextSearch(q.column, 0);
            byte[] stats = d.textStatistics(q.query()); // once, for every partition
            List<InputPartition> out = new ArrayList<>();
            Snapshots.Ref snapshot = Snapshots.ship(d, new HashMap<>(q.options.storage));
            if (q.global) {
              out.add(new TextPartition(plan.splits(), true, stats, q, snapshot));
              return out;
            }
            for (byte[] split : plan.splits()) out.add(new TextPartition(List.of(split), false, stats, q, snapshot));
            return out;
          }
        }));
  }

  static final class Query implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final Options options;
    final String column;
    final String text;
    final long k;
    final int match;
    final int slop;
    final String[] columns;
    final boolean global;

    Query(Map<String, String> raw) {
      options = new Options(raw, OPTIONS, "format(\"lance_host_text\")");
      column = required("column");
      text = required("text");
      k = options.intOption("k", 10, 1);
      slop = options.intOption("slop", 0, 0);
      String m = options.all.getOrDefault("match", "any").trim().toLowerCase(Locale.ROOT);
      Map<String, Integer> kinds = Map.of("any", TextQuery.ANY, "all", TextQuery.ALL, "phrase", TextQuery.PHRASE);
      if (!kinds.containsKey(m)) throw new LanceException.InvalidArgument("option match must be any, all or phrase, not '" + m + "'");
      match = kinds.get(m);
      String g = options.all.getOrDefault("global", "false").trim().toLowerCase(Locale.ROOT);
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

    TextQuery query() {
      TextQuery q = TextQuery.of(column, text, k).match(match).slop(slop).prefilter(options.filter);
      return columns == null ? q : q.columns(List.of(columns));
    }

    StructType schema(Dataset ds) {
      List<byte[]> splits = ds.planTextSearch(column, 0).splits();
      if (splits.isEmpty()) throw new LanceException.NotFound("table " + options.requireUri() + " has no rows to search");
      try (ArrowStream s = ds.searchText(splits.get(0), query(), ds.textStatistics(query()), SparkTypes.allocator())) {
        return SparkTypes.schema(s.schema());
      }
    }
  }

  static final class TextPartition extends SplitSource.SearchWork {
    private static final long serialVersionUID = 1L;
    final byte[] stats;
    final Query q;

    TextPartition(List<byte[]> splits, boolean global, byte[] stats, Query q, Snapshots.Ref snapshot) {
      super(splits, global, snapshot);
      this.stats = stats;
      this.q = q;
    }

    @Override
    ArrowStream one(Dataset ds, byte[] split) {
      return ds.searchText(split, q.query(), stats, SparkTypes.allocator());
    }

    @Override
    ArrowStream merge(List<ArrowStream> parts) {
      return Dataset.mergeText(parts, q.k, 0, SparkTypes.allocator());
    }
  }

}
