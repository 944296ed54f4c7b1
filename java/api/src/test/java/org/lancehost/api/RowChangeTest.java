package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.LanceHost;
import org.lancehost.ScanOptions;
import org.lancehost.Write;

/** Updates, merge-inserts, staged deletes and row-level changes from Java, judged by pylance. */
class RowChangeTest {
  static BufferAllocator allocator;
  static final Schema SCHEMA = new Schema(List.of(
      Field.nullable("id", new ArrowType.Int(64, true)), Field.nullable("name", ArrowType.Utf8.INSTANCE)));

  @BeforeAll
  static void setUp() {
    allocator = new RootAllocator();
  }

  @AfterAll
  static void tearDown() {
    assertEquals(0, LanceHost.liveBatches());
    allocator.close();
  }

  /** One batch: the given ids, name = prefix + id. */
  static VectorSchemaRoot rows(List<Long> ids, String prefix) {
    VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
    BigIntVector id = (BigIntVector) root.getVector("id");
    VarCharVector name = (VarCharVector) root.getVector("name");
    id.allocateNew(ids.size());
    name.allocateNew(ids.size());
    for (int i = 0; i < ids.size(); i++) {
      id.set(i, ids.get(i));
      name.setSafe(i, (prefix + ids.get(i)).getBytes(StandardCharsets.UTF_8));
    }
    root.setRowCount(ids.size());
    return root;
  }

  static List<Long> range(long start, long end) {
    List<Long> out = new ArrayList<>();
    for (long i = start; i < end; i++) out.add(i);
    return out;
  }

  /** A table of ids 0..n named "n<id>", 250 rows per file, written by this library. */
  static Path table(String name, long n) throws Exception {
    Path uri = WriteTest.fresh(name);
    Write.write(uri.toString(), null, SCHEMA, List.of(rows(range(0, n), "n")).iterator(),
        Write.Options.mode(Write.CREATE).maxRowsPerFile(250));
    return uri;
  }

  /** What pylance reads: the version and id -> name. */
  static Map<Long, String> pylanceRows(Path uri, long[] version) throws Exception {
    JsonNode py = WriteTestSupport.pylanceRows(uri);
    version[0] = py.get("version").asLong();
    Map<Long, String> out = new HashMap<>();
    for (JsonNode r : py.get("rows")) {
      assertFalse(out.containsKey(r.get(0).asLong()), "a row twice: " + r);
      out.put(r.get(0).asLong(), r.get(1).isNull() ? null : r.get(1).asText());
    }
    return out;
  }

  /**
   * Dataset.delete(predicate, statementId): one version per statement — the retry an engine makes
   * after a lost answer commits nothing more and answers with that version; pylance reads the rows
   * deleted once. The 0.14 view delete(predicate) still gives {version, rows deleted}.
   */
  @Test
  void aDeleteWithAStatementIdCommitsOnceAndARetrySaysSo() throws Exception {
    Path uri = table("delete_once", 600);
    Write.Result first, retry;
    try (Dataset at = Dataset.open(uri.toString())) {
      first = at.delete("id < 100", "engine-query-7");
      retry = at.delete("id < 100", "engine-query-7");
    }
    assertTrue(first.committed);
    assertEquals(100, first.rowsDeleted);
    assertFalse(retry.committed, "the retry commits nothing more");
    assertEquals(first.version, retry.version);
    long[] version = new long[1];
    Map<Long, String> rows = pylanceRows(uri, version);
    assertEquals(first.version, version[0]);
    assertEquals(500, rows.size());
    assertTrue(rows.keySet().stream().allMatch(id -> id >= 100));
    try (Dataset at = Dataset.open(uri.toString())) {
      long[] old = at.delete("id < 150");
      assertEquals(first.version + 1, old[0]);
      assertEquals(50, old[1]);
    }
    assertThrows(LanceException.InvalidArgument.class, () -> {
      try (Dataset at = Dataset.open(uri.toString())) {
        at.delete(null, "x");
      }
    });
  }

  /** (id, _rowaddr) of the rows matching `filter`, read by this library from `at`. */
  static List<long[]> addresses(Dataset at, String filter) {
    List<long[]> out = new ArrayList<>();
    try (ArrowStream s = at.scan(ScanOptions.all().columns("id", "_rowaddr").filter(filter), allocator)) {
      for (VectorSchemaRoot next = s.next(); next != null; next = s.next()) {
        try (VectorSchemaRoot b = next) {
          BigIntVector id = (BigIntVector) b.getVector("id");
          UInt8Vector addr = (UInt8Vector) b.getVector("_rowaddr");
          for (int i = 0; i < b.getRowCount(); i++) out.add(new long[] {id.get(i), addr.get(i)});
        }
      }
    }
    return out;
  }

  @Test
  void updateAndMergeInsertAreOneVersionEachAsPylanceReadsThem() throws Exception {
    Path uri = table("update-merge.lance", 1000);
    try (Dataset at = Dataset.open(uri.toString())) {
      Write.Result u = at.update(Map.of("name", "'changed'"), "id < 100", null);
      assertTrue(u.committed);
      assertEquals(2, u.version);
      assertEquals(100, u.rowsUpdated);
    }
    try (Dataset at = Dataset.open(uri.toString())) {
      Write.Result m = at.mergeInsert(SCHEMA, List.of(rows(range(900, 1100), "m")).iterator(),
          new Dataset.Merge(List.of("id")).whenMatched(org.lancehost.WhenMatched.UPDATE_ALL, null)
              .whenNotMatched(org.lancehost.WhenNotMatched.INSERT), "merge-1");
      assertEquals(3, m.version);
      assertEquals(100, m.rowsUpdated);
      assertEquals(100, m.rowsInserted);
    }
    long[] v = new long[1];
    Map<Long, String> got = pylanceRows(uri, v);
    assertEquals(3, v[0]);
    assertEquals(1100, got.size());
    for (long i = 0; i < 1100; i++) {
      String want = i < 100 ? "changed" : i >= 900 ? "m" + i : "n" + i;
      assertEquals(want, got.get(i), "row " + i);
    }
    // bad input: no columns, an unknown column, a merge without keys
    try (Dataset at = Dataset.open(uri.toString())) {
      assertThrows(LanceException.InvalidArgument.class, () -> at.update(Map.of(), null, null));
      assertThrows(LanceException.InvalidArgument.class, () -> at.update(Map.of("nope", "1"), null, null));
      assertThrows(LanceException.InvalidArgument.class, () -> new Dataset.Merge(List.of()));
    }
    assertEquals(3, WriteTestSupport.pylanceRows(uri).get("version").asLong());
  }

  @Test
  void stagedDeletesAndAStagedMergeCommitOnce() throws Exception {
    Path uri = table("staged-delete.lance", 1000);
    List<byte[]> shares = new ArrayList<>();
    try (Dataset at = Dataset.open(uri.toString())) {
      List<byte[]> splits = at.planScan(250).splits();
      assertEquals(4, splits.size());
      long deleted = 0;
      for (byte[] split : splits) {
        Write.Staged s = at.stageDelete(split, "id % 4 = 0");
        deleted += s.result.rowsDeleted;
        shares.add(s.bytes);
      }
      assertEquals(250, deleted);
    }
    Write.Result c = Write.commit(uri.toString(), shares, Write.Options.mode(Write.APPEND).statementId("del-1"));
    assertEquals(2, c.version);
    assertEquals(250, c.rowsDeleted);
    try (Dataset at = Dataset.open(uri.toString())) {
      Write.Staged m = at.stageMergeInsert(SCHEMA, List.of(rows(range(0, 8), "x")).iterator(),
          new Dataset.Merge(List.of("id")).whenMatched(Dataset.Merge.MATCHED_UPDATE_ALL, null));
      Write.Result r = Write.commit(uri.toString(), List.of(m.bytes), Write.Options.mode(Write.APPEND));
      assertEquals(3, r.version);
    }
    long[] v = new long[1];
    Map<Long, String> got = pylanceRows(uri, v);
    assertEquals(3, v[0]);
    for (long i = 0; i < 1000; i++) {
      String want = i < 8 ? "x" + i : i % 4 == 0 ? null : "n" + i;
      assertEquals(want, got.get(i), "row " + i);
    }
    assertEquals(752, got.size()); // ids 0 and 4 were deleted, so the merge inserted them again
  }

  @Test
  void rowLevelChangesOfShuffledWorkersAreOneVersionAndTheSameRowNeverTwice() throws Exception {
    Path uri = table("row-level.lance", 1000);
    byte[] token;
    List<long[]> changed;
    try (Dataset planner = Dataset.open(uri.toString())) {
      token = planner.snapshot();
      changed = addresses(planner, "id % 3 = 0");
    }
    assertEquals(334, changed.size());
    List<byte[]> shares = new ArrayList<>();
    for (int w = 0; w < 2; w++) { // two workers, rows dealt alternately (as a shuffle leaves them)
      List<Long> ids = new ArrayList<>();
      List<Long> addrs = new ArrayList<>();
      for (int k = w; k < changed.size(); k += 2) {
        ids.add(changed.get(k)[0]);
        addrs.add(changed.get(k)[1]);
      }
      try (Dataset at = Dataset.fromSnapshot(token, null)) {
        Write.Staged d = at.stageRowDeletes(addrs.stream().mapToLong(Long::longValue).toArray());
        assertEquals(addrs.size(), d.result.rowsDeleted);
        Write.Staged a = Write.stage(uri.toString(), at, SCHEMA, List.of(rows(ids, "r")).iterator(),
            Write.Options.mode(Write.APPEND));
        shares.add(d.bytes);
        shares.add(a.bytes);
      }
    }
    Write.Result c = Write.commit(uri.toString(), shares, Write.Options.mode(Write.APPEND).statementId("upd-7"));
    assertTrue(c.committed);
    assertEquals(2, c.version);
    assertEquals(334, c.rowsDeleted);
    assertEquals(334, c.rowsInserted);
    assertFalse(Write.commit(uri.toString(), shares, Write.Options.mode(Write.APPEND).statementId("upd-7")).committed);
    long[] v = new long[1];
    Map<Long, String> got = pylanceRows(uri, v);
    assertEquals(2, v[0]);
    assertEquals(1000, got.size());
    for (long i = 0; i < 1000; i++) assertEquals((i % 3 == 0 ? "r" : "n") + i, got.get(i), "row " + i);

    // Two statements planned at one version change the same row: the second is a conflict.
    try (Dataset at = Dataset.open(uri.toString())) {
      long[] addr = {addresses(at, "id = 1").get(0)[1]};
      List<byte[]> first = List.of(at.stageRowDeletes(addr).bytes, Write.stage(uri.toString(), at, SCHEMA,
          List.of(rows(List.of(1L), "a")).iterator(), Write.Options.mode(Write.APPEND)).bytes);
      List<byte[]> second = List.of(at.stageRowDeletes(addr).bytes, Write.stage(uri.toString(), at, SCHEMA,
          List.of(rows(List.of(1L), "b")).iterator(), Write.Options.mode(Write.APPEND)).bytes);
      Write.commit(uri.toString(), first, Write.Options.mode(Write.APPEND));
      assertThrows(LanceException.Conflict.class, () -> Write.commit(uri.toString(), second, Write.Options.mode(Write.APPEND)));
      Write.abort(second, null);
      // bad input: null, an address twice
      assertThrows(LanceException.InvalidArgument.class, () -> at.stageRowDeletes(null));
      assertThrows(LanceException.InvalidArgument.class, () -> at.stageRowDeletes(new long[] {addr[0], addr[0]}));
    }
    got = pylanceRows(uri, v);
    assertEquals(3, v[0]);
    assertEquals("a1", got.get(1L));
    assertEquals(1000, got.size());
  }
}
