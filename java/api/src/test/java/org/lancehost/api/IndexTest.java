package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.Metric;
import org.lancehost.ScalarIndexType;
import org.lancehost.Session;
import org.lancehost.Split;
import org.lancehost.SplitPlan;
import org.lancehost.TextQuery;
import org.lancehost.VectorIndexType;
import org.lancehost.Write;

/** Index builds, prewarm, full-text search and the session from Java. */
class IndexTest {
  static BufferAllocator allocator;

  @BeforeAll
  static void setUp() {
    allocator = new RootAllocator();
  }

  @AfterAll
  static void tearDown() {
    allocator.close();
  }

  @Test
  void fullTextSearchPlannedInJavaEqualsPylance() {
    JsonNode t = Fixtures.expected().get("indexed");
    try (Dataset ds = Dataset.open(t.get("uri").asText())) {
      assertTrue(ds.indexes().stream().anyMatch(i -> i.column.equals("doc") && i.type.equalsIgnoreCase("INVERTED")),
          "pylance's INVERTED index is listed");
      SplitPlan plan = ds.planTextSearch("doc", 0);
      boolean segment = false, flat = false;
      for (byte[] s : plan.splits()) {
        segment |= Split.info(s).kind() == Split.FTS_SEGMENT;
        flat |= Split.info(s).kind() == Split.FTS_FLAT;
      }
      assertTrue(segment && flat, "an index segment split and a flat split for the appended rows");
      TextQuery q = TextQuery.of("doc", "zebra", 1000).match(org.lancehost.TextMatch.ALL).columns(List.of("id"));
      byte[] stats = ds.textStatistics(q); // once, on the planner
      List<ArrowStream> parts = new ArrayList<>();
      for (byte[] s : plan.splits()) parts.add(ds.searchText(s, q, stats, allocator));
      List<Long> ids = new ArrayList<>();
      double last = Double.MAX_VALUE;
      for (Map<String, Object> r : ApiTest.rows(Dataset.mergeText(parts, 1000, 0, allocator))) {
        ids.add(ApiTest.asLong(r.get("id")));
        double score = ((Number) r.get("_score")).doubleValue();
        assertTrue(score <= last, "ordered by score");
        last = score;
      }
      ids.sort(null);
      List<Long> want = new ArrayList<>();
      t.get("zebra_pylance_ids").forEach(n -> want.add(n.asLong()));
      assertEquals(want, ids);
      List<Long> contains = new ArrayList<>();
      t.get("zebra_ids").forEach(n -> contains.add(n.asLong()));
      assertEquals(contains, ids, "every row containing the word, and no other");
      ds.prewarmIndex(ds.indexes().get(0).name);
      assertThrows(LanceException.NotFound.class, () -> ds.prewarmIndex("no_such_index"));
    }
  }

  /**
   * Issue 61: the index kinds as enums — the vector and scalar families shared numbers (IVF_PQ and
   * BTREE were both 0) — build what they name, as pylance reads it.
   */
  @Test
  void typedIndexKindsBuildWhatTheyName() throws Exception {
    Path dir = Fixtures.root().resolve("written");
    Files.createDirectories(dir);
    Path uri = dir.resolve("typed-index-kinds.lance");
    Write.write(uri.toString(), null, WriteTest.SCHEMA, WriteTest.batches(allocator, 0, 2000, 500), Write.Options.mode(Write.CREATE));
    try (Dataset ds = Dataset.open(uri.toString())) {
      assertEquals(2, ds.createScalarIndex("id", "id_bitmap", false, ScalarIndexType.BITMAP));
    }
    try (Dataset ds = Dataset.open(uri.toString())) {
      // the option object: the same build as the positional form (pylance checks the kind below)
      assertEquals(3, ds.createIndex("vec", org.lancehost.IndexOptions.vector(VectorIndexType.IVF_FLAT)
          .metric(Metric.COSINE).partitions(2).name("vec_cos")));
      assertThrows(LanceException.class, () -> ds.createIndex("vec",
          org.lancehost.IndexOptions.vector(VectorIndexType.IVF_FLAT).partitions(2).name("vec_cos")), "a taken name");
      // a vector option on a scalar index would be ignored: refused, nothing built
      LanceException.InvalidArgument bad = assertThrows(LanceException.InvalidArgument.class, () -> ds.createIndex("id",
          org.lancehost.IndexOptions.scalar(ScalarIndexType.BTREE).partitions(4).name("id_btree")));
      assertTrue(bad.getMessage().contains("vector index options"), bad.getMessage());
      assertThrows(LanceException.InvalidArgument.class, () -> ds.createIndex("id", null));
    }
    try (Dataset ds = Dataset.open(uri.toString())) {
      assertEquals("vec_cos", ds.planVectorSearch("vec", Metric.DEFAULT, true, 0).indexName());
      for (Dataset.Index i : ds.indexes()) {
        if (i.name.equals("vec_cos")) assertEquals("cosine", i.metric.toLowerCase());
      }
    }
    JsonNode py = WriteTestSupport.python("import json, sys, lance\n"
        + "print(json.dumps({i['name']: i['type'] for i in lance.dataset(sys.argv[1]).list_indices()}))\n", uri.toString());
    assertEquals("Bitmap", py.get("id_bitmap").asText());
    assertEquals("IVF_FLAT", py.get("vec_cos").asText());
    assertEquals(VectorIndexType.IVF_PQ.code(), Dataset.IVF_PQ);
    assertEquals(ScalarIndexType.BTREE.code(), Dataset.BTREE);
  }

  @Test
  void indexesBuiltFromJavaAreLanceIndexesPylanceLists() throws Exception {
    Path dir = Fixtures.root().resolve("written");
    Files.createDirectories(dir);
    Path uri = dir.resolve("indexed-from-java.lance");
    Write.write(uri.toString(), null, WriteTest.SCHEMA, WriteTest.batches(allocator, 0, 4000, 1000), Write.Options.mode(Write.CREATE));
    try (Dataset ds = Dataset.open(uri.toString())) {
      long v2 = ds.createScalarIndex("id", "id_idx", false, Dataset.BTREE);
      assertEquals(2, v2);
      assertThrows(LanceException.class, () -> ds.createScalarIndex("id", "id_idx", false, Dataset.BTREE),
          "the same name again without replace");
    }
    try (Dataset ds = Dataset.open(uri.toString())) {
      long v3 = ds.createVectorIndex("vec", "vec_idx", false, Dataset.IVF_FLAT, 0, 2, 0);
      assertEquals(3, v3);
    }
    try (Dataset ds = Dataset.open(uri.toString())) {
      long v4 = ds.createIndex("name", org.lancehost.IndexOptions.fullText(true).name("name_idx"));
      assertEquals(4, v4);
      assertEquals(2, ds.indexes().size(), "this handle keeps its version (two indexes)");
    }
    try (Dataset ds = Dataset.open(uri.toString())) {
      List<String> names = new ArrayList<>();
      for (Dataset.Index i : ds.indexes()) names.add(i.name);
      names.sort(null);
      assertEquals(List.of("id_idx", "name_idx", "vec_idx"), names);
      // The count through the BTREE index equals the rows that match.
      assertEquals(1000, ds.countRows("id >= 3000"));
      SplitPlan plan = ds.planVectorSearch("vec", 0, true, 0);
      assertEquals("vec_idx", plan.indexName());
    }
    JsonNode py = WriteTestSupport.pylance(uri);
    assertEquals(4, py.get("version").asLong());
    String code = "import lance, sys\nprint(sorted(i['name'] for i in lance.dataset(sys.argv[1]).list_indices()))";
    Process p = new ProcessBuilder("python3", "-c", code, uri.toString()).start();
    String out = new String(p.getInputStream().readAllBytes()).trim();
    assertEquals(0, p.waitFor());
    assertEquals("['id_idx', 'name_idx', 'vec_idx']", out);
  }

  @Test
  void distributedBuildsTrainOnceBuildOnWorkersAndCommitOnce() throws Exception {
    Path dir = Fixtures.root().resolve("written");
    Files.createDirectories(dir);
    Path uri = dir.resolve("distributed-index.lance");
    Write.write(uri.toString(), null, WriteTest.SCHEMA, WriteTest.batches(allocator, 0, 4000, 1000),
        Write.Options.mode(Write.CREATE).maxRowsPerFile(1000));
    byte[] token;
    List<byte[]> vectorTasks, scalarTasks, textTasks;
    try (Dataset fe = Dataset.open(uri.toString())) { // the coordinator
      token = fe.snapshot();
      byte[] model = fe.trainVectorIndex("vec", Dataset.IVF_FLAT, 0, 2, 0);
      vectorTasks = fe.planIndexBuild("vec", Dataset.IndexBuild.vector(model, Dataset.IVF_FLAT, 0).name("vec_idx"));
      scalarTasks = fe.planIndexBuild("id", Dataset.IndexBuild.scalar(Dataset.BTREE).name("id_idx"));
      textTasks = fe.planIndexBuild("name", Dataset.IndexBuild.inverted(true).name("name_idx").splits(2));
    }
    assertEquals(4, vectorTasks.size(), "one task per fragment");
    assertEquals(4, scalarTasks.size());
    assertEquals(2, textTasks.size());
    // Workers: each opens the shipped snapshot and builds its tasks, two at a time.
    List<List<byte[]>> segments = new ArrayList<>();
    for (List<byte[]> tasks : List.of(vectorTasks, scalarTasks, textTasks)) {
      List<byte[]> out = java.util.Collections.synchronizedList(new ArrayList<>());
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
      List<java.util.concurrent.Future<?>> done = new ArrayList<>();
      for (byte[] task : tasks) {
        done.add(pool.submit(() -> {
          try (Dataset be = Dataset.fromSnapshot(token, null)) {
            out.add(be.buildIndexTask(task));
          }
        }));
      }
      for (java.util.concurrent.Future<?> f : done) f.get();
      pool.shutdown();
      segments.add(out);
    }
    try (Dataset fe = Dataset.fromSnapshot(token, null)) {
      assertThrows(LanceException.InvalidArgument.class,
          () -> fe.commitIndexBuild(List.of(segments.get(1).get(0), segments.get(1).get(0)), false), "a segment twice");
      assertThrows(LanceException.class, () -> fe.buildIndexTask(new byte[] {1, 2, 3}), "garbage task bytes");
      assertEquals(2, fe.commitIndexBuild(segments.get(0), false));
    }
    try (Dataset fe = Dataset.open(uri.toString())) {
      assertEquals(3, fe.commitIndexBuild(segments.get(1), true));
    }
    try (Dataset fe = Dataset.open(uri.toString())) {
      assertEquals(4, fe.commitIndexBuild(segments.get(2), false));
    }
    try (Dataset ds = Dataset.open(uri.toString())) {
      SplitPlan plan = ds.planVectorSearch("vec", 0, true, 0);
      assertEquals("vec_idx", plan.indexName());
      long segmentSplits = plan.splits().stream().filter(b -> Split.info(b).kind() == Split.INDEX_SEGMENT).count();
      assertEquals(4, segmentSplits, "one segment per worker's task, searched as one split each");
      assertEquals(1000, ds.countRows("id >= 3000"));
    }
    // pylance lists the three indexes and answers a full-text query through the one built on workers.
    String code = "import lance, sys\nds = lance.dataset(sys.argv[1])\n"
        + "print(sorted(i['name'] for i in ds.list_indices()), ds.version,"
        + " ds.to_table(full_text_query='n1234', columns=['id'])['id'].to_pylist())";
    Process p = new ProcessBuilder("python3", "-c", code, uri.toString()).start();
    String out = new String(p.getInputStream().readAllBytes()).trim();
    String err = new String(p.getErrorStream().readAllBytes()).trim();
    assertEquals(0, p.waitFor(), err);
    // one entry per segment: the merged BTREE is one, the text index two, the vector index four
    assertEquals("['id_idx', 'name_idx', 'name_idx', 'vec_idx', 'vec_idx', 'vec_idx', 'vec_idx'] 4 [1234]", out);
  }

  @Test
  void theSessionReportsItsCachesAndRefusesLateConfiguration() {
    Session.Options d = Session.defaults();
    assertTrue(d.indexCacheBytes() > 0 && d.workerThreads() >= 0);
    Map<String, Long> stats = Session.stats();
    assertTrue(stats.containsKey("index_hits") && stats.containsKey("data_cache_misses"));
    // The session is in use (other tests ran): different settings are refused, the session unaffected.
    // The glue reads Session.Options by field name (a wrong name would be a NoSuchFieldError here),
    // and the refusal names the running session's values: this JVM's session started with the
    // defaults, which crossed the glue by name the other way.
    LanceException.FailedPrecondition e = assertThrows(LanceException.FailedPrecondition.class,
        () -> Session.configure(d.indexCacheBytes(12345 * 4096L)));
    assertTrue(e.getMessage().contains("worker_threads=" + d.workerThreads() + ", index_cache_bytes="
        + d.indexCacheBytes() + ", metadata_cache_bytes=" + d.metadataCacheBytes()), e.getMessage());
    assertTrue(stats.keySet().containsAll(List.of("index_hits", "index_misses", "metadata_bytes", "data_cache_hit_bytes",
        "data_cache_disk_write_drops", "text_tail_hits", "text_tail_misses")), stats.keySet().toString());
    assertTrue(stats.values().stream().allMatch(v -> v >= 0), stats.toString());
    assertThrows(LanceException.InvalidArgument.class, () -> d.workerThreads(-1));
  }
}
