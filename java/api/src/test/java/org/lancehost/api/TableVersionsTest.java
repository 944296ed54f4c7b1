package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.LanceHost;
import org.lancehost.ScanOptions;
import org.lancehost.Split;
import org.lancehost.Write;

/** Commit preconditions, the table config and change data from Java, with pylance as the other side. */
class TableVersionsTest {
  static BufferAllocator allocator;

  @BeforeAll
  static void setUp() {
    allocator = new RootAllocator();
  }

  @AfterAll
  static void tearDown() {
    assertEquals(0, LanceHost.liveBatches());
    allocator.close();
  }

  /** One batch: ids start..end, name = prefix + id. */
  static VectorSchemaRoot rows(long start, long end, String prefix) {
    VectorSchemaRoot root = VectorSchemaRoot.create(RowChangeTest.SCHEMA, allocator);
    BigIntVector id = (BigIntVector) root.getVector("id");
    VarCharVector name = (VarCharVector) root.getVector("name");
    id.allocateNew((int) (end - start));
    name.allocateNew((int) (end - start));
    for (long i = start; i < end; i++) {
      id.set((int) (i - start), i);
      name.setSafe((int) (i - start), (prefix + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    root.setRowCount((int) (end - start));
    return root;
  }

  static Path table(String name, long n) throws Exception {
    Path uri = WriteTest.fresh(name);
    Write.write(uri.toString(), null, RowChangeTest.SCHEMA, List.of(rows(0, n, "n")).iterator(),
        Write.Options.mode(Write.CREATE));
    return uri;
  }
  @Test
  void commitsLandOnlyOnTheExpectedVersionAndWhileTheFenceHolds() throws Exception {
    Path uri = table("preconditions.lance", 100);
    String u = uri.toString();
    // a stale expected version: refused, nothing written
    long files = WriteTestSupport.dataFiles(uri);
    assertThrows(LanceException.Conflict.class, () -> Write.write(u, null, RowChangeTest.SCHEMA,
        List.of(rows(100, 110, "x")).iterator(),
        Write.Options.mode(Write.APPEND).expectedVersion(7)));
    assertEquals(files, WriteTestSupport.dataFiles(uri));
    Write.Result r = Write.write(u, null, RowChangeTest.SCHEMA,
        List.of(rows(100, 110, "x")).iterator(),
        Write.Options.mode(Write.APPEND).expectedVersion(1));
    assertEquals(2, r.version);
    // the fence: set here, read by pylance; moved by pylance, honoured here
    try (Dataset at = Dataset.open(u)) {
      Write.Result c = at.updateConfig(Map.of("fence", "job-1"), null, null);
      assertEquals(3, c.version);
    }
    JsonNode py = WriteTestSupport.python("import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "before = ds.config()\n"
        + "ds.update_config({'fence': 'job-2'})\n"
        + "print(json.dumps({'before': before, 'version': lance.dataset(sys.argv[1]).version}))\n", u);
    assertEquals("job-1", py.get("before").get("fence").asText());
    assertEquals(4, py.get("version").asLong());
    try (Dataset at = Dataset.open(u)) {
      assertEquals(Map.of("fence", "job-2"), at.config());
      List<byte[]> shares = List.of(Write.stage(u, at, RowChangeTest.SCHEMA,
          List.of(rows(200, 210, "s")).iterator(),
          Write.Options.mode(Write.APPEND)).bytes);
      LanceException.FailedPrecondition e = assertThrows(LanceException.FailedPrecondition.class,
          () -> Write.commit(u, shares, Write.Options.mode(Write.APPEND).requiredConfig(Map.of("fence", "job-1"))));
      assertTrue(e.getMessage().contains("'job-2'"), e.getMessage());
      assertEquals(5, Write.commit(u, shares,
          Write.Options.mode(Write.APPEND).requiredConfig(Map.of("fence", "job-2")).expectedVersion(4)).version);
      // a compare-and-set of the token with a stale value is refused
      assertThrows(LanceException.FailedPrecondition.class, () -> at.updateConfig(Map.of("fence", "job-3"), null,
          Write.Options.mode(Write.APPEND).requiredConfig(Map.of("fence", "job-1"))));
    }
    long[] v = new long[1];
    Map<Long, String> rows = RowChangeTest.pylanceRows(uri, v);
    assertEquals(5, v[0]);
    assertEquals(120, rows.size());
  }

  @Test
  void changeSplitsEqualPylancesDelta() throws Exception {
    Path uri = WriteTest.fresh("changes.lance");
    String u = uri.toString();
    // pylance writes a history with stable row ids and prints its delta since version 1
    JsonNode py = WriteTestSupport.python("import json, sys, lance, pyarrow as pa\n"
        + "u = sys.argv[1]\n"
        + "rows = lambda a, b, t: pa.table({'id': pa.array(range(a, b), pa.int64()), 'name': [t + str(i) for i in range(a, b)]})\n"
        + "lance.write_dataset(rows(0, 100, 'a'), u, max_rows_per_file=40, enable_stable_row_ids=True)\n"
        + "lance.write_dataset(rows(100, 130, 'b'), u, mode='append')\n"
        + "lance.dataset(u).update({'name': \"'u'\"}, where='id < 5')\n"
        + "lance.dataset(u).delete('id >= 50 AND id < 53')\n"
        + "d = lance.dataset(u).delta(1)\n"
        + "ins = d.get_inserted_rows().read_all()['id'].to_pylist()\n"
        + "upd = d.get_updated_rows().read_all()['id'].to_pylist()\n"
        + "dele = d.get_deleted_row_ids().read_all()['_rowid'].to_pylist()\n"
        + "print(json.dumps({'insert': sorted(ins), 'update': sorted(upd), 'delete': sorted(dele)}))\n", u);
    Map<String, List<Long>> got = new TreeMap<>();
    try (Dataset ds = Dataset.open(u)) {
      for (byte[] split : ds.planChanges(1, 0, 0).splits()) {
        try (Dataset worker = Dataset.forSplit(split, null);
            ArrowStream s = worker.scan(split, ScanOptions.all().columns("id"), allocator)) {
          for (VectorSchemaRoot next = s.next(); next != null; next = s.next()) {
            try (VectorSchemaRoot b = next) {
              BigIntVector id = (BigIntVector) b.getVector("id");
              VarCharVector kind = (VarCharVector) b.getVector("_change_type");
              org.apache.arrow.vector.UInt8Vector rowid = (org.apache.arrow.vector.UInt8Vector) b.getVector("_rowid");
              for (int i = 0; i < b.getRowCount(); i++) {
                String k = new String(kind.get(i), java.nio.charset.StandardCharsets.UTF_8);
                got.computeIfAbsent(k, x -> new ArrayList<>()).add(k.equals("delete") ? rowid.get(i) : id.get(i));
              }
            }
          }
        }
      }
      // a table without stable row ids is refused, not answered empty
      Path plain = table("changes-plain.lance", 10);
      try (Dataset p = Dataset.open(plain.toString())) {
        assertThrows(LanceException.NotSupported.class, () -> p.planChanges(0, 0, 0));
      }
    }
    for (String k : List.of("insert", "update", "delete")) {
      List<Long> want = new ArrayList<>();
      py.get(k).forEach(n -> want.add(n.asLong()));
      List<Long> have = new ArrayList<>(got.getOrDefault(k, List.of()));
      have.sort(null);
      assertEquals(want, have, k);
      assertFalse(want.isEmpty(), k);
    }
  }
  @Test
  void branchesAndAShallowCloneAsPylanceReadsThem() throws Exception {
    Path uri = table("branches.lance", 20);
    String u = uri.toString();
    try (Dataset main = Dataset.open(u)) {
      assertEquals("main", main.branch());
      try (Dataset dev = main.createBranch("dev", 0)) {
        assertEquals("dev", dev.branch());
        assertTrue(dev.uri().endsWith("/tree/dev"), dev.uri());
        Write.Result r = Write.write(dev.uri(), dev, RowChangeTest.SCHEMA, List.of(rows(100, 105, "d")).iterator(),
            Write.Options.mode(Write.APPEND));
        assertTrue(r.committed);
      }
      assertEquals(1, main.branches().size());
      assertEquals("main", main.branches().get("dev").parent);
      assertEquals(1, main.branches().get("dev").parentVersion);
      try (Dataset dev = Dataset.openBranch(u, null, "dev", 0)) {
        assertEquals(25, dev.countRows());
      }
      try (Dataset clone = main.shallowClone(WriteTest.fresh("branches-clone.lance").toString(), null)) {
        assertEquals(20, clone.countRows());
      }
    }
    JsonNode py = WriteTestSupport.python("import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "print(json.dumps({'main': ds.count_rows(), 'dev': ds.checkout_version(('dev', None)).count_rows()}))\n", u);
    assertEquals(20, py.get("main").asLong());
    assertEquals(25, py.get("dev").asLong());
    // the catalog opens the table on the branch, and at a tag
    WriteTestSupport.python("import json, sys, lance\n"
        + "lance.dataset(sys.argv[1]).tags.create('one', 1)\n"
        + "print(json.dumps({}))\n", u);
    try (org.lancehost.Catalog cat = org.lancehost.Catalog.open(Map.of("root", uri.getParent().toString()))) {
      String table = uri.getFileName().toString().replace(".lance", "");
      try (Dataset dev = cat.openTableBranch(List.of(), table, "dev", 0)) {
        assertEquals("dev", dev.branch());
        assertEquals(25, dev.countRows());
      }
      try (Dataset one = cat.openTableTag(List.of(), table, "one")) {
        assertEquals(1, one.version());
        assertEquals(20, one.countRows());
      }
      assertThrows(LanceException.NotFound.class, () -> cat.openTableBranch(List.of(), table, "nope", 0));
    }
    try (Dataset main = Dataset.open(u)) {
      main.deleteBranch("dev");
      assertTrue(main.branches().isEmpty());
      assertThrows(LanceException.NotFound.class, () -> Dataset.openBranch(u, null, "dev", 0));
    }
  }
  @Test
  void stableRowIdsSurviveTheSettersAfterIt() throws Exception {
    // Issue 58 item 18: every setter rebuilt the options with the flag off.
    Path uri = WriteTest.fresh("stable-setters.lance");
    String u = uri.toString();
    Write.Options o = Write.Options.mode(Write.CREATE).stableRowIds(true).commitMessage("first").statementId("s-1")
        .maxRowsPerFile(100).storageOptions(java.util.Map.of()).expectedVersion(0);
    Write.write(u, null, RowChangeTest.SCHEMA, List.of(rows(0, 20, "a")).iterator(), o);
    JsonNode py = WriteTestSupport.python("import json, sys, lance\n"
        + "print(json.dumps({'stable': lance.dataset(sys.argv[1]).has_stable_row_ids}))\n", u);
    assertTrue(py.get("stable").asBoolean());
  }

  @Test
  void aTableCreatedWithStableRowIdsHasChangeSplits() throws Exception {
    Path uri = WriteTest.fresh("stable.lance");
    String u = uri.toString();
    Write.Result c = Write.write(u, null, RowChangeTest.SCHEMA, List.of(rows(0, 50, "a")).iterator(),
        Write.Options.mode(Write.CREATE).stableRowIds(true));
    assertEquals(1, c.version);
    try (Dataset v1 = Dataset.open(u)) {
      Write.write(u, v1, RowChangeTest.SCHEMA, List.of(rows(50, 57, "b")).iterator(),
          Write.Options.mode(org.lancehost.WriteMode.APPEND));
    }
    long inserted = 0;
    try (Dataset ds = Dataset.open(u)) {
      // the kinds as a set of enums (the same bits as Dataset.CHANGE_INSERTED)
      for (byte[] split : ds.planChanges(1, java.util.EnumSet.of(org.lancehost.ChangeType.INSERTED), 0).splits()) {
        assertEquals(org.lancehost.SplitKind.CHANGES, Split.info(split).splitKind());
        try (ArrowStream s = ds.scan(split, ScanOptions.all().columns("id"), allocator)) {
          for (VectorSchemaRoot next = s.next(); next != null; next = s.next()) {
            try (VectorSchemaRoot b = next) {
              BigIntVector id = (BigIntVector) b.getVector("id");
              for (int i = 0; i < b.getRowCount(); i++) assertTrue(id.get(i) >= 50);
              inserted += b.getRowCount();
            }
          }
        }
      }
    }
    assertEquals(7, inserted);
    JsonNode py = WriteTestSupport.python("import json, sys, lance\n"
        + "print(json.dumps({'stable': lance.dataset(sys.argv[1]).has_stable_row_ids}))\n", u);
    assertTrue(py.get("stable").asBoolean());
  }
  /**
   * Several tables committed together from Java: through this repository's REST server with
   * batch commits, two tables' shares land as one version each (pylance reads both through the
   * namespace); a table no namespace manages is refused with nothing committed.
   */
  @Test
  void sharesOfTwoTablesCommitTogetherThroughANamespace() throws Exception {
    String server = System.getProperty("lancehost.test.restserver", "");
    assertFalse(server.isEmpty(), "set -Dlancehost.test.restserver (CMake's LANCE_HOST_REST_SERVER)");
    Path root = WriteTest.fresh("multi-warehouse");
    java.nio.file.Files.createDirectories(root);
    Process p = new ProcessBuilder(server, root.toString(), "--batch-commits")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      java.io.BufferedReader out = new java.io.BufferedReader(
          new java.io.InputStreamReader(p.getInputStream(), java.nio.charset.StandardCharsets.UTF_8));
      String line = out.readLine();
      assertNotNull(line);
      assertTrue(line.startsWith("LISTENING "), line);
      String uri = "http://127.0.0.1:" + line.substring("LISTENING ".length()).trim();
      try (org.lancehost.Catalog cat = org.lancehost.Catalog.open(Map.of("type", "rest", "uri", uri))) {
        List<Write.TableCommit> tables = new ArrayList<>();
        for (String t : List.of("a", "b")) {
          cat.createTable(List.of(), t, RowChangeTest.SCHEMA, List.of(rows(0, 10, "n")).iterator(), null);
          try (Dataset ds = cat.openTable(List.of(), t, 0)) {
            Write.Staged share = Write.stage(ds.uri(), ds, RowChangeTest.SCHEMA,
                List.of(rows(100, 105, t)).iterator(), Write.Options.mode(Write.APPEND));
            tables.add(new Write.TableCommit(ds.uri(), List.of(share.bytes),
                Write.Options.mode(Write.APPEND).statementId("job-3/" + t)));
          }
        }
        List<Write.Result> done = Write.commitTables(tables);
        assertEquals(2, done.size());
        for (Write.Result r : done) {
          assertTrue(r.committed);
          assertEquals(2, r.version);
        }
        // again with the same statement ids: the versions, nothing committed
        for (Write.Result r : Write.commitTables(tables)) {
          assertFalse(r.committed);
          assertEquals(2, r.version);
        }
        JsonNode py = WriteTestSupport.python("import json, sys, lance, lance.namespace as ln\n"
            + "ns = ln.RestNamespace(uri=sys.argv[1])\n"
            + "out = {}\n"
            + "for t in ('a', 'b'):\n"
            + "    ds = lance.dataset(namespace_client=ns, table_id=[t])\n"
            + "    out[t] = [ds.version, sorted(ds.to_table()['id'].to_pylist())[-1], ds.count_rows()]\n"
            + "print(json.dumps(out))\n", uri);
        for (String t : List.of("a", "b")) {
          assertEquals(2, py.get(t).get(0).asLong(), t);
          assertEquals(104, py.get(t).get(1).asLong(), t);
          assertEquals(15, py.get(t).get(2).asLong(), t);
        }
        // a table by path, which no namespace manages: refused, neither table changes
        Path plain = table("multi-plain.lance", 10);
        try (Dataset pd = Dataset.open(plain.toString()); Dataset a = cat.openTable(List.of(), "a", 0)) {
          Write.Staged sp = Write.stage(plain.toString(), pd, RowChangeTest.SCHEMA, List.of(rows(10, 12, "p")).iterator(),
              Write.Options.mode(Write.APPEND));
          Write.Staged sa = Write.stage(a.uri(), a, RowChangeTest.SCHEMA, List.of(rows(200, 202, "a")).iterator(),
              Write.Options.mode(Write.APPEND));
          assertThrows(LanceException.NotSupported.class, () -> Write.commitTables(List.of(
              new Write.TableCommit(a.uri(), List.of(sa.bytes), null),
              new Write.TableCommit(plain.toString(), List.of(sp.bytes), null))));
          try (Dataset again = cat.openTable(List.of(), "a", 0); Dataset p2 = Dataset.open(plain.toString())) {
            assertEquals(2, again.version());
            assertEquals(1, p2.version());
          }
        }
      }
    } finally {
      p.getOutputStream().close();
      assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS));
    }
  }
}
