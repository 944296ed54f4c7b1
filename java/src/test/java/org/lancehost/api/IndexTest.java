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
import org.lancehost.Session;
import org.lancehost.Split;
import org.lancehost.SplitPlan;
import org.lancehost.TextQuery;
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
      TextQuery q = TextQuery.of("doc", "zebra", 1000).columns(List.of("id"));
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
      long v4 = ds.createInvertedIndex("name", "name_idx", false, true);
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
  void theSessionReportsItsCachesAndRefusesLateConfiguration() {
    Session.Options d = Session.defaults();
    assertTrue(d.indexCacheBytes() > 0 && d.workerThreads() >= 0);
    Map<String, Long> stats = Session.stats();
    assertTrue(stats.containsKey("index_hits") && stats.containsKey("data_cache_misses"));
    // The session is in use (other tests ran): different settings are refused, the session unaffected.
    assertThrows(LanceException.FailedPrecondition.class, () -> Session.configure(d.indexCacheBytes(12345 * 4096L)));
    assertThrows(LanceException.InvalidArgument.class, () -> d.workerThreads(-1));
  }
}
