package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.AggregateSpec;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.DynamicFilter;
import org.lancehost.LanceException;
import org.lancehost.LanceHost;
import org.lancehost.ScanOptions;
import org.lancehost.Split;
import org.lancehost.SplitPlan;
import org.lancehost.VectorQuery;

/** Every group of the Java API against tables pylance wrote; answers compared with pylance's. */
class ApiTest {
  static BufferAllocator allocator;
  static JsonNode basic;
  static JsonNode indexed;

  @BeforeAll
  static void setUp() {
    allocator = new RootAllocator();
    basic = Fixtures.expected().get("basic");
    indexed = Fixtures.expected().get("indexed");
  }

  @AfterAll
  static void tearDown() {
    assertEquals(0, LanceHost.liveBatches(), "every imported batch was released");
    allocator.close(); // fails if any buffer is still held
  }

  @Test
  void aStreamReportsItsIoAndTimeAndNothingOnceClosed() throws Exception {
    // a local table: rows and time, no object-store requests
    try (Dataset ds = Dataset.open(basic.get("uri").asText());
         ArrowStream s = ds.scan(ScanOptions.all().columns("id"), allocator)) {
      long rows = 0;
      for (VectorSchemaRoot b = s.next(); b != null; b = s.next()) {
        rows += b.getRowCount();
        b.close();
      }
      assertEquals(basic.get("count").asLong(), rows);
      assertEquals(0, s.ioStats().readRequests(), "a local table sends no object-store request");
      assertTrue(s.nanosInNext() > 0);
    }
    // on S3 (moto): requests and bytes, a projection reads less than the whole table
    try (S3Fixture s3 = new S3Fixture(); Dataset ds = Dataset.open(s3.uri, s3.options, 0)) {
      org.lancehost.IoStats io;
      long sum = 0;
      try (ArrowStream s = ds.scan(ScanOptions.all().columns("id", "name"), allocator)) {
        for (VectorSchemaRoot b = s.next(); b != null; b = s.next()) {
          BigIntVector id = (BigIntVector) b.getVector("id");
          for (int i = 0; i < b.getRowCount(); i++) sum += id.get(i);
          b.close();
        }
        io = s.ioStats();
        assertEquals(s3.sumId, sum, "the rows pylance wrote");
        assertTrue(io.readRequests() > 0 && io.readBytes() > 0, io.toString());
        assertEquals(0, io.indexReadRequests(), "no index was read: " + io);
        s.close();
        assertEquals(org.lancehost.IoStats.NONE, s.ioStats(), "a closed stream reports none");
      }
      // the id column again: served by the session's data cache (on by default), no request
      try (ArrowStream s = ds.scan(ScanOptions.all().columns("id"), allocator)) {
        for (VectorSchemaRoot b = s.next(); b != null; b = s.next()) b.close();
        org.lancehost.IoStats ids = s.ioStats();
        assertEquals(0, ids.readRequests(), ids.toString());
        assertTrue(ids.dataCacheHits() > 0 && ids.dataCacheHitBytes() > 0 && ids.dataCacheHitBytes() <= io.readBytes(),
            ids + " vs " + io);
        assertEquals(io.dataCacheHits() + ids.dataCacheHits(), io.plus(ids).dataCacheHits());
      }
    }
  }

  /** Every row of a stream as column-name -> Java value maps (closes the stream and batches). */
  static List<Map<String, Object>> rows(ArrowStream stream) {
    List<Map<String, Object>> out = new ArrayList<>();
    try (stream) {
      while (true) {
        VectorSchemaRoot b = stream.next();
        if (b == null) break;
        try (b) {
          for (int r = 0; r < b.getRowCount(); r++) {
            Map<String, Object> row = new HashMap<>();
            for (FieldVector v : b.getFieldVectors()) row.put(v.getName(), v.getObject(r));
            out.add(row);
          }
        }
      }
    }
    return out;
  }

  static long asLong(Object o) {
    return ((Number) o).longValue();
  }

  @Test
  void versionAndProfile() {
    assertTrue(LanceHost.version().matches("\\d+\\.\\d+\\.\\d+.*"), LanceHost.version());
    assertTrue(List.of("debug", "release").contains(LanceHost.buildProfile()));
    // the test command builds the default features: every store and tokenizer
    assertTrue(LanceHost.buildFeatures().containsAll(List.of("store-azure", "store-gcs", "store-oss", "store-cos",
        "store-tos", "store-hf", "commit-dynamodb", "tokenizer-jieba", "tokenizer-lindera")), LanceHost.buildFeatures().toString());
    assertTrue(LanceHost.metrics().containsKey("ops.open"));
  }

  @Test
  void openVersionsAndCounts() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      assertEquals(basic.get("version").asLong(), ds.version());
      assertEquals(basic.get("version").asLong(), ds.latestVersion());
      assertEquals(basic.get("count").asLong(), ds.countRows());
      assertEquals(basic.get("count_filter").asLong(), ds.countRows(basic.get("filter").asText()));
      List<Long> versions = new ArrayList<>();
      for (Dataset.Version v : ds.versions()) versions.add(v.version);
      List<Long> expected = new ArrayList<>();
      basic.get("versions").forEach(n -> expected.add(n.asLong()));
      assertEquals(expected, versions);
      assertTrue(ds.uri().endsWith("basic.lance"), ds.uri());
      Schema s = ds.schema();
      assertEquals(List.of("id", "value", "qty", "name", "category", "flag", "day", "ts", "vec", "meta"),
          s.getFields().stream().map(f -> f.getName()).toList());
      assertEquals(new ArrowType.FixedSizeList(basic.get("query").size()), s.findField("vec").getType());
    }
    try (Dataset v1 = Dataset.open(basic.get("uri").asText(), null, 1)) {
      assertEquals(1, v1.version());
      assertEquals(basic.get("count_v1").asLong(), v1.countRows());
      List<Long> ids = new ArrayList<>();
      for (Map<String, Object> r : rows(v1.scan(ScanOptions.all().columns("id"), allocator))) ids.add(asLong(r.get("id")));
      List<Long> expected = new ArrayList<>();
      basic.get("ids_v1").forEach(n -> expected.add(n.asLong()));
      assertEquals(expected, ids);
    }
    // Time travel by commit time: just after the instant version 2 was committed opens version
    // 2; the start of its millisecond, when that is before it, version 1 (compared at the
    // microsecond, not the millisecond).
    long t2 = basic.get("version_times_us").get(1).asLong();
    try (Dataset at = Dataset.openAt(basic.get("uri").asText(), null, Instant.EPOCH.plus(t2 + 2, ChronoUnit.MICROS))) {
      assertEquals(2, at.version());
    }
    if (t2 % 1000 > 2 && basic.get("version_times_us").get(0).asLong() < t2 - t2 % 1000 - 2) {
      try (Dataset at = Dataset.openAt(basic.get("uri").asText(), null, Instant.ofEpochMilli(t2 / 1000))) {
        assertEquals(1, at.version());
      }
    }
  }

  @Test
  void filteredProjectionEqualsPylance() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      ScanOptions o = ScanOptions.all().columns("id", "value", "name").filter(basic.get("filter").asText());
      TreeMap<Long, Map<String, Object>> got = new TreeMap<>();
      for (Map<String, Object> r : rows(ds.scan(o, allocator))) got.put(asLong(r.get("id")), r);
      JsonNode want = basic.get("filtered");
      assertEquals(want.size(), got.size());
      int i = 0;
      for (Map<String, Object> r : got.values()) {
        JsonNode w = want.get(i++);
        assertEquals(w.get("id").asLong(), asLong(r.get("id")));
        assertEquals(w.get("value").asDouble(), (Double) r.get("value"), 0.0);
        assertEquals(w.get("name").isNull() ? null : w.get("name").asText(), r.get("name") == null ? null : r.get("name").toString());
      }
      assertTrue(ds.explainScan(o).contains("value"), "explain names the filter column");
    }
  }

  @Test
  void everyTypeOfTheHeadRowsEqualsPylance() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      List<Map<String, Object>> got = rows(ds.scan(ScanOptions.all().limit(50), allocator));
      got.sort((a, b) -> Long.compare(asLong(a.get("id")), asLong(b.get("id"))));
      JsonNode want = basic.get("head");
      assertEquals(want.size(), got.size());
      for (int i = 0; i < got.size(); i++) {
        Map<String, Object> r = got.get(i);
        JsonNode w = want.get(i);
        assertEquals(w.get("id").asLong(), asLong(r.get("id")));
        if (w.get("value").isNull()) assertNull(r.get("value"));
        else assertEquals(w.get("value").asDouble(), (Double) r.get("value"), 0.0);
        assertEquals(w.get("qty").asInt(), ((Integer) r.get("qty")).intValue());
        if (w.get("name").isNull()) assertNull(r.get("name"));
        else assertEquals(w.get("name").asText(), r.get("name").toString());
        assertEquals(w.get("category").asText(), r.get("category").toString());
        assertEquals(w.get("flag").asBoolean(), r.get("flag"));
        assertEquals(LocalDate.parse(w.get("day").asText()), LocalDate.ofEpochDay(((Integer) r.get("day")).longValue()));
        assertEquals(LocalDateTime.parse(w.get("ts").asText()), r.get("ts"));
      }
    }
  }

  @Test
  void vectorsComeAsFixedSizeListsWithoutCopies() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText());
        ArrowStream s = ds.scan(ScanOptions.all().columns("id", "vec").limit(5), allocator)) {
      Map<Long, float[]> got = new HashMap<>();
      while (true) {
        VectorSchemaRoot b = s.next();
        if (b == null) break;
        try (b) {
          FixedSizeListVector vec = (FixedSizeListVector) b.getVector("vec");
          Float4Vector values = (Float4Vector) vec.getDataVector();
          BigIntVector ids = (BigIntVector) b.getVector("id");
          for (int r = 0; r < b.getRowCount(); r++) {
            float[] v = new float[vec.getListSize()];
            for (int j = 0; j < v.length; j++) v[j] = values.get(r * v.length + j);
            got.put(ids.get(r), v);
          }
        }
      }
      JsonNode ids = basic.get("head_vec_ids");
      for (int i = 0; i < ids.size(); i++) {
        float[] v = got.get(ids.get(i).asLong());
        assertNotNull(v);
        JsonNode w = basic.get("head_vec").get(i);
        for (int j = 0; j < v.length; j++) assertEquals((float) w.get(j).asDouble(), v[j], 0.0f);
      }
    }
  }

  /**
   * Issue 60, dynamic filters: tightened after the first batch of an ordered scan, the rest of
   * the stream is exactly pylance's rows after that batch that the predicate keeps; a key-set
   * update equals pylance's IN; a refused update leaves the predicate; the filter's own column
   * is read and dropped when not projected.
   */
  @Test
  void aDynamicFilterTightenedMidStreamKeepsExactlyItsRows() throws Exception {
    String uri = basic.get("uri").asText();
    JsonNode want = WriteTestSupport.python("import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "ids = ds.to_table(columns=['id'])['id'].to_pylist()\n"
        + "keys = sorted(ds.to_table(columns=['id'], filter='id IN (5, 6, 70, 71, 11998)')['id'].to_pylist())\n"
        + "print(json.dumps({'ids': ids, 'keys': keys}))\n", uri);
    List<Long> all = new ArrayList<>();
    want.get("ids").forEach(n -> all.add(n.asLong()));
    try (Dataset ds = Dataset.open(uri); DynamicFilter f = new DynamicFilter(ds, List.of("id", "qty"))) {
      List<Long> got = new ArrayList<>();
      int seen;
      try (ArrowStream stream = ds.scan(ScanOptions.all().columns("id", "name").batchSize(100).dynamicFilter(f),
          allocator)) {
        try (VectorSchemaRoot first = stream.next()) {
          assertEquals(List.of("id", "name"), first.getSchema().getFields().stream().map(x -> x.getName()).toList());
          seen = first.getRowCount();
        }
        assertEquals(100, seen);
        f.setSql("id % 3 = 0");
        assertThrows(LanceException.InvalidArgument.class, () -> f.setSql("name = 'x'"));
        assertEquals(1, f.generation());
        while (true) {
          VectorSchemaRoot b = stream.next();
          if (b == null) break;
          try (b) {
            for (int r = 0; r < b.getRowCount(); r++) got.add(asLong(b.getVector("id").getObject(r)));
          }
        }
      }
      List<Long> expected = new ArrayList<>();
      for (long id : all.subList(seen, all.size())) if (id % 3 == 0) expected.add(id);
      assertFalse(expected.isEmpty());
      assertEquals(expected, got);

      f.setKeys("id", 5, 6, 70, 71, 11998);
      List<Long> keys = new ArrayList<>();
      for (Map<String, Object> r : rows(ds.scan(ScanOptions.all().columns("id").dynamicFilter(f), allocator))) {
        keys.add(asLong(r.get("id")));
      }
      java.util.Collections.sort(keys);
      List<Long> wantKeys = new ArrayList<>();
      want.get("keys").forEach(n -> wantKeys.add(n.asLong()));
      assertEquals(wantKeys, keys);
      assertEquals(2, f.generation());
      assertThrows(LanceException.InvalidArgument.class, () -> f.setKeys("id", "not a number"));
      assertThrows(LanceException.InvalidArgument.class,
          () -> ds.scan(ScanOptions.all().limit(3).dynamicFilter(f), allocator));
    }
  }

  /**
   * Issue 60, runtime filters: a key set handed to each split scan keeps exactly the rows
   * pylance's {@code id IN (...)} keeps, ANDed with the filter; names too (text keys, a null
   * key); keys that do not fit the column are refused.
   */
  @Test
  void aRuntimeKeySetOnEverySplitEqualsPylance() throws Exception {
    String uri = basic.get("uri").asText();
    long[] keys = {3, 4, 17, 250, 4999, 123456789, -5};
    JsonNode want = WriteTestSupport.python("import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "a = sorted(ds.to_table(columns=['id'], filter='id IN (3, 4, 17, 250, 4999, 123456789, -5)')['id'].to_pylist())\n"
        + "b = sorted(ds.to_table(columns=['id'], filter='id IN (3, 4, 17, 250, 4999) AND id > 10')['id'].to_pylist())\n"
        + "names = [n for n in ds.to_table(columns=['name'], filter='name IS NOT NULL', limit=2)['name'].to_pylist()]\n"
        + "c = sorted(ds.to_table(columns=['id'], filter='name IN (' + ', '.join(repr(n) for n in names) + ')')['id'].to_pylist())\n"
        + "print(json.dumps({'a': a, 'b': b, 'names': names, 'c': c}))\n", uri);
    try (Dataset ds = Dataset.open(uri)) {
      List<Long> a = new ArrayList<>(), b = new ArrayList<>(), c = new ArrayList<>();
      String[] names = {want.get("names").get(0).asText(), null, want.get("names").get(1).asText()};
      for (byte[] split : ds.planScan(0).splits()) {
        for (Map<String, Object> r : rows(ds.scan(split, ScanOptions.all().columns("id").keys("id", keys), allocator))) {
          a.add(asLong(r.get("id")));
        }
        ScanOptions filtered = ScanOptions.all().columns("id").filter("id > 10").keys("id", keys);
        for (Map<String, Object> r : rows(ds.scan(split, filtered, allocator))) b.add(asLong(r.get("id")));
        for (Map<String, Object> r : rows(ds.scan(split, ScanOptions.all().columns("id").keys("name", names), allocator))) {
          c.add(asLong(r.get("id")));
        }
      }
      java.util.Collections.sort(a);
      java.util.Collections.sort(b);
      java.util.Collections.sort(c);
      List<Long> wa = new ArrayList<>(), wb = new ArrayList<>(), wc = new ArrayList<>();
      want.get("a").forEach(n -> wa.add(n.asLong()));
      want.get("b").forEach(n -> wb.add(n.asLong()));
      want.get("c").forEach(n -> wc.add(n.asLong()));
      assertFalse(wa.isEmpty() || wc.isEmpty());
      assertEquals(wa, a);
      assertEquals(wb, b);
      assertEquals(wc, c);
      assertEquals(0, rows(ds.scan(ScanOptions.all().columns("id").keys("id", new long[0]), allocator)).size());
      // the plan of a scan with keys has the key set in its filter (explainScan honours it)
      String plain = ds.explainScan(ScanOptions.all().columns("id"));
      String keyed = ds.explainScan(ScanOptions.all().columns("id").keys("id", 4999L, 250L));
      assertTrue(keyed.contains("4999") && !plain.contains("4999"), keyed);
      LanceException.InvalidArgument bad = assertThrows(LanceException.InvalidArgument.class,
          () -> ds.scan(ScanOptions.all().columns("id").keys("id", "x"), allocator).readAll());
      assertTrue(bad.getMessage().contains("do not fit column 'id'"), bad.getMessage());
    }
  }

  @Test
  void splitsPlannedOnceScannedInParallelCoverTheSnapshot() throws Exception {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      SplitPlan plan = ds.planScan(0);
      assertTrue(plan.splits().size() >= 6, "one split per fragment: " + plan.splits().size());
      long rowsBySplitInfo = 0;
      for (byte[] s : plan.splits()) {
        Split info = Split.info(s);
        assertEquals(Split.SCAN, info.kind());
        assertEquals(org.lancehost.SplitKind.SCAN, info.splitKind());
        assertEquals(ds.version(), info.version());
        rowsBySplitInfo += info.rowCount();
      }
      assertEquals(basic.get("count").asLong(), rowsBySplitInfo);
      byte[] token = ds.snapshot();
      ExecutorService pool = Executors.newFixedThreadPool(3);
      try {
        List<Future<List<Long>>> parts = new ArrayList<>();
        for (byte[] split : plan.splits()) {
          // A worker: its own dataset from the shipped token, one split.
          parts.add(pool.submit(() -> {
            List<Long> ids = new ArrayList<>();
            try (Dataset w = Dataset.fromSnapshot(token, null)) {
              assertEquals(ds.version(), w.version());
              for (Map<String, Object> r : rows(w.scan(split, ScanOptions.all().columns("id"), allocator))) {
                ids.add(asLong(r.get("id")));
              }
              assertEquals(ids.size(), w.countRows(split, null));
            }
            return ids;
          }));
        }
        Set<Long> all = new HashSet<>();
        long n = 0;
        for (Future<List<Long>> f : parts) {
          List<Long> ids = f.get();
          n += ids.size();
          all.addAll(ids);
        }
        assertEquals(basic.get("count").asLong(), n);
        assertEquals(n, all.size(), "no row twice");
        for (long id : all) assertNotEquals(7, id % 10, "deleted rows stay deleted");
      } finally {
        pool.shutdown();
      }
      // Row-slice splits cover the same rows.
      SplitPlan slices = ds.planScanSlices(700);
      long n = 0;
      for (byte[] s : slices.splits()) n += ds.countRows(s, null);
      assertEquals(basic.get("count").asLong(), n);
      assertTrue(slices.splits().size() > plan.splits().size());
    }
  }

  @Test
  void splitScopedSnapshotsRunTheirSplitsAndRefuseTheWholeTable() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      byte[] full = ds.snapshot();
      Set<Long> all = new HashSet<>();
      long n = 0;
      for (byte[] split : ds.planScanSlices(700).splits()) {
        byte[] scoped = ds.splitSnapshot(split);
        assertTrue(scoped.length < full.length, scoped.length + " vs " + full.length);
        try (Dataset w = Dataset.fromSnapshot(scoped, null)) {
          assertEquals(ds.version(), w.version());
          for (Map<String, Object> r : rows(w.scan(split, ScanOptions.all().columns("id"), allocator))) {
            all.add(asLong(r.get("id")));
            n++;
          }
          LanceException.InvalidArgument e = assertThrows(LanceException.InvalidArgument.class, w::countRows);
          assertTrue(e.getMessage().contains("split-scoped"), e.getMessage());
          assertThrows(LanceException.InvalidArgument.class, w::snapshot);
        }
      }
      assertEquals(basic.get("count").asLong(), n);
      assertEquals(n, all.size(), "no row twice");
      byte[] flat = ds.planVectorSearch("vec", VectorQuery.METRIC_DEFAULT, false, 0).splits().get(0);
      assertThrows(LanceException.NotSupported.class, () -> ds.splitSnapshot(flat));
    }
  }

  @Test
  void aggregatesEqualPylance() {
    AggregateSpec spec = AggregateSpec.create().groupBy("category").countStar("n")
        .add(org.lancehost.AggregateFunction.SUM, "qty", "sum_qty").add(AggregateSpec.MIN, "value", "min_value")
        .add(AggregateSpec.MAX, "value", "max_value").add(AggregateSpec.AVG, "value", "avg_value")
        .addExpression(AggregateSpec.SUM, "value * 2.0 + CAST(qty AS DOUBLE)", "expr")
        .add(org.lancehost.AggregateFunction.COUNT_DISTINCT, "qty", "distinct_qty")
        .add(org.lancehost.AggregateFunction.APPROX_COUNT_DISTINCT, "qty", "approx_qty");
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      List<Map<String, Object>> one = rows(ds.aggregate(spec, allocator));
      // The distributed shape: partial states per split, merged once.
      List<ArrowStream> partials = new ArrayList<>();
      for (byte[] s : ds.planScan(0).splits()) partials.add(ds.aggregate(s, spec, allocator));
      List<Map<String, Object>> merged = rows(Dataset.mergeAggregates(partials, allocator));
      for (List<Map<String, Object>> got : List.of(one, merged)) {
        JsonNode groups = basic.get("groups");
        assertEquals(groups.size(), got.size());
        for (Map<String, Object> r : got) {
          JsonNode g = groups.get(r.get("category").toString());
          assertEquals(g.get("count").asLong(), asLong(r.get("n")));
          assertEquals(g.get("sum_qty").asLong(), asLong(r.get("sum_qty")));
          assertEquals(g.get("min_value").asDouble(), (Double) r.get("min_value"), 0.0);
          assertEquals(g.get("max_value").asDouble(), (Double) r.get("max_value"), 0.0);
          double avg = g.get("sum_value").asDouble() / g.get("n_value").asDouble();
          assertEquals(avg, (Double) r.get("avg_value"), Math.abs(avg) * 1e-12);
          // value is NULL in some rows: the expression is too, and SUM leaves it out
          double want = 2 * g.get("sum_value").asDouble() + g.get("sum_qty_where_value").asDouble();
          assertEquals(want, (Double) r.get("expr"), Math.abs(want) * 1e-12);
          // exact across the splits' partial states
          assertEquals(g.get("distinct_qty").asLong(), asLong(r.get("distinct_qty")));
          // the HyperLogLog estimate: within 3 standard errors (and 2 for the smallest counts)
          long exact = g.get("distinct_qty").asLong();
          assertTrue(Math.abs(asLong(r.get("approx_qty")) - exact) <= Math.max(2, 0.048 * exact), r.toString());
        }
      }
      // integer arithmetic could wrap in the engine: refused
      LanceException e = assertThrows(LanceException.NotSupported.class,
          () -> rows(ds.aggregate(AggregateSpec.create().addExpression(AggregateSpec.SUM, "qty * 2", null), allocator)));
      assertTrue(e.getMessage().contains("DECIMAL(38, 0)"), e.getMessage());
    }
  }

  @Test
  void aSpecMayBeASubstraitPlan() {
    // written by the fixture generator with the substrait package: cat, count(*), sum(qty) WHERE id < 5000
    byte[] plan = java.util.HexFormat.of().parseHex(basic.get("substrait_plan_id_lt_5000").asText());
    AggregateSpec spec = AggregateSpec.fromSubstrait(plan);
    plan[0] ^= 0x55; // the spec holds its own copy
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      List<ArrowStream> partials = new ArrayList<>();
      for (byte[] s : ds.planScanSlices(700).splits()) partials.add(ds.aggregate(s, spec, allocator));
      for (List<Map<String, Object>> got : List.of(rows(ds.aggregate(spec, allocator)),
          rows(Dataset.mergeAggregates(partials, allocator)))) {
        JsonNode groups = basic.get("groups_id_lt_5000");
        assertEquals(groups.size(), got.size());
        for (Map<String, Object> r : got) {
          JsonNode g = groups.get(r.get("cat").toString());
          assertEquals(g.get("count").asLong(), asLong(r.get("n")));
          assertEquals(g.get("sum_qty").asLong(), asLong(r.get("sum_qty")));
        }
      }
      // a plan says the whole spec: a filter beside it is refused, not combined
      LanceException e = assertThrows(LanceException.InvalidArgument.class,
          () -> rows(ds.aggregate(spec.filter("id > 3"), allocator)));
      assertTrue(e.getMessage().contains("a plan says the whole spec"), e.getMessage());
      e = assertThrows(LanceException.InvalidArgument.class,
          () -> rows(ds.aggregate(AggregateSpec.fromSubstrait(new byte[] {-1, -1, -1}), allocator)));
      assertTrue(e.getMessage().contains("not a Substrait plan"), e.getMessage());
      assertThrows(LanceException.InvalidArgument.class, () -> AggregateSpec.fromSubstrait(new byte[0]));
    }
  }

  @Test
  void groupKeysMayBeExpressions() {
    // per category, the rows whose value is set and the others: the fixture's counts
    AggregateSpec spec = AggregateSpec.create().groupBy("category").groupByExpression("has_value", "value IS NOT NULL")
        .countStar("n").add(AggregateSpec.SUM, "qty", "sum_qty");
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      List<ArrowStream> partials = new ArrayList<>();
      for (byte[] s : ds.planScanSlices(700).splits()) partials.add(ds.aggregate(s, spec, allocator));
      for (List<Map<String, Object>> got : List.of(rows(ds.aggregate(spec, allocator)),
          rows(Dataset.mergeAggregates(partials, allocator)))) {
        Map<String, long[]> seen = new HashMap<>();
        for (Map<String, Object> r : got) {
          long[] c = seen.computeIfAbsent(r.get("category").toString(), k -> new long[3]);
          if ((Boolean) r.get("has_value")) {
            c[0] += asLong(r.get("n"));
            c[2] += asLong(r.get("sum_qty"));
          } else {
            c[1] += asLong(r.get("n"));
          }
        }
        JsonNode groups = basic.get("groups");
        assertEquals(groups.size(), seen.size());
        for (Map.Entry<String, long[]> en : seen.entrySet()) {
          JsonNode g = groups.get(en.getKey());
          assertEquals(g.get("n_value").asLong(), en.getValue()[0], en.getKey());
          assertEquals(g.get("count").asLong() - g.get("n_value").asLong(), en.getValue()[1], en.getKey());
          assertEquals(g.get("sum_qty_where_value").asLong(), en.getValue()[2], en.getKey());
        }
      }
      LanceException e = assertThrows(LanceException.NotSupported.class, () -> rows(ds.aggregate(
          AggregateSpec.create().groupByExpression("twice", "qty * 2").countStar(null), allocator)));
      assertTrue(e.getMessage().contains("DECIMAL(38, 0)"), e.getMessage());
    }
  }

  static float[] vector(JsonNode q) {
    float[] v = new float[q.size()];
    for (int i = 0; i < v.length; i++) v[i] = (float) q.get(i).asDouble();
    return v;
  }

  /** Plans a search, runs every split, merges: the ids and distances pylance's exact search gave. */
  static void searchEqualsPylance(JsonNode t, int nprobes) {
    try (Dataset ds = Dataset.open(t.get("uri").asText())) {
      SplitPlan plan = ds.planVectorSearch("vec", VectorQuery.METRIC_DEFAULT, true, 0);
      VectorQuery q = VectorQuery.of("vec", vector(t.get("query")), 10).nprobes(nprobes).columns(List.of("id"));
      List<ArrowStream> parts = new ArrayList<>();
      for (byte[] s : plan.splits()) parts.add(ds.search(s, q, allocator));
      List<Map<String, Object>> got = rows(Dataset.mergeTopK(parts, 10, 0, allocator));
      assertEquals(t.get("nn_ids").size(), got.size());
      for (int i = 0; i < got.size(); i++) {
        assertEquals(t.get("nn_ids").get(i).asLong(), asLong(got.get(i).get("id")), "rank " + i);
        double want = t.get("nn_distances").get(i).asDouble();
        assertEquals(want, ((Number) got.get(i).get("_distance")).doubleValue(), 1e-4 * Math.max(1, want));
      }
      if (t.has("index_names")) {
        assertEquals(t.get("index_names").get(0).asText(), plan.indexName());
        boolean segment = false, flat = false;
        for (byte[] s : plan.splits()) {
          segment |= Split.info(s).kind() == Split.INDEX_SEGMENT;
          flat |= Split.info(s).kind() == Split.FLAT;
        }
        assertTrue(segment && flat, "an index segment split and a flat split for the unindexed rows");
      }
    }
  }

  /** refine/filter are refineFactor/prefilter under the names the other surfaces use (issue 59). */
  @Test
  void refineAndFilterAreTheSharedNamesOfRefineFactorAndPrefilter() {
    try (Dataset ds = Dataset.open(indexed.get("uri").asText())) {
      SplitPlan plan = ds.planVectorSearch("vec", VectorQuery.METRIC_DEFAULT, true, 0);
      VectorQuery base = VectorQuery.of("vec", vector(indexed.get("query")), 10).nprobes(1).columns(List.of("id"));
      List<List<Long>> answers = new ArrayList<>();
      for (VectorQuery q : List.of(base.refine(3).filter("id % 3 = 0"), base.refineFactor(3).prefilter("id % 3 = 0"))) {
        List<ArrowStream> parts = new ArrayList<>();
        for (byte[] s : plan.splits()) parts.add(ds.search(s, q, allocator));
        List<Long> ids = new ArrayList<>();
        for (Map<String, Object> r : rows(Dataset.mergeTopK(parts, 10, 0, allocator))) ids.add(asLong(r.get("id")));
        answers.add(ids);
      }
      assertEquals(answers.get(1), answers.get(0));
      assertEquals(10, answers.get(0).size());
      assertTrue(answers.get(0).stream().allMatch(id -> id % 3 == 0), answers.get(0).toString());
    }
  }

  @Test
  void flatVectorSearchEqualsPylance() {
    searchEqualsPylance(basic, 0);
  }

  @Test
  void indexedVectorSearchEqualsPylanceExact() {
    searchEqualsPylance(indexed, 4); // every IVF partition probed: exact
  }

  @Test
  void takeReturnsRowsById() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      List<Map<String, Object>> some = rows(ds.scan(ScanOptions.all().columns("id").withRowId(true).limit(20), allocator));
      long[] rowIds = some.stream().mapToLong(r -> asLong(r.get("_rowid"))).toArray();
      List<Map<String, Object>> taken = rows(ds.take(rowIds, List.of("id"), allocator));
      assertEquals(some.size(), taken.size());
      for (int i = 0; i < some.size(); i++) assertEquals(some.get(i).get("id"), taken.get(i).get("id"));
    }
  }

  @Test
  void badInputsAreExceptionsNotCrashes() {
    String uri = basic.get("uri").asText();
    LanceException e = assertThrows(LanceException.class, () -> Dataset.open(Fixtures.root().resolve("no-such-table").toString()));
    assertTrue(e.code() == 2 || e.code() == 3, e.codeName() + ": " + e.getMessage());
    assertThrows(LanceException.NotFound.class, () -> Dataset.open(uri, null, 999));
    Dataset ds = Dataset.open(uri);
    assertThrows(LanceException.InvalidArgument.class, () -> ds.countRows("id >>> 3"));
    assertThrows(LanceException.InvalidArgument.class, () -> ds.scan(ScanOptions.all().columns("nope"), allocator));
    assertThrows(LanceException.InvalidArgument.class, () -> ds.countRows("name = 'a\0b'"));
    LanceException bad = assertThrows(LanceException.class, () -> ds.scan(new byte[] {1, 2, 3}, null, allocator));
    assertTrue(bad instanceof LanceException.Corrupt || bad instanceof LanceException.InvalidArgument, bad.codeName());
    assertThrows(LanceException.InvalidArgument.class, () -> Split.info(null));
    // A wrong-type aggregate column: the library does not sum strings.
    assertThrows(LanceException.NotSupported.class,
        () -> rows(ds.aggregate(AggregateSpec.create().add(AggregateSpec.SUM, "name", null), allocator)));
    // A query vector of the wrong dimension.
    byte[] split = ds.planVectorSearch("vec", 0, true, 0).splits().get(0);
    assertThrows(LanceException.InvalidArgument.class,
        () -> ds.search(split, VectorQuery.of("vec", new float[] {1, 2}, 3), allocator));
    ArrowStream s = ds.scan(ScanOptions.all().columns("id"), allocator);
    s.close();
    assertThrows(LanceException.InvalidArgument.class, s::next, "a closed stream");
    s.close(); // twice is harmless
    ds.close();
    assertThrows(LanceException.InvalidArgument.class, ds::countRows, "a closed dataset");
    assertThrows(LanceException.InvalidArgument.class, ds::snapshot);
    ds.close();
  }

  @Test
  void aStreamStaysValidAfterItsDatasetIsClosedAndCancelStopsIt() {
    Dataset ds = Dataset.open(basic.get("uri").asText());
    ArrowStream s = ds.scan(ScanOptions.all().columns("id").batchSize(100), allocator);
    ds.close();
    VectorSchemaRoot first = s.next();
    assertNotNull(first);
    first.close();
    s.cancel();
    LanceException e = assertThrows(LanceException.class, () -> {
      for (VectorSchemaRoot b = s.next(); b != null; b = s.next()) b.close();
    });
    assertEquals(12, e.code(), e.getMessage());
    s.close();
  }

  @Test
  void repeatedScansHoldNoMemory() {
    try (Dataset ds = Dataset.open(basic.get("uri").asText())) {
      for (int i = 0; i < 30; i++) {
        try (ArrowStream s = ds.scan(ScanOptions.all(), allocator)) {
          VectorSchemaRoot b = s.next(); // read one batch, drop the rest with the stream
          b.close();
        }
      }
      assertEquals(0, LanceHost.liveBatches());
      assertEquals(0, allocator.getAllocatedMemory());
    }
  }
}
