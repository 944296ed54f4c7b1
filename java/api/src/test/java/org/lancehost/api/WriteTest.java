package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.LanceHost;
import org.lancehost.Write;

/** Writes from Java, checked by pylance (another reader). */
class WriteTest {
  static BufferAllocator allocator;
  static final Schema SCHEMA = new Schema(List.of(
      Field.nullable("id", new ArrowType.Int(64, true)),
      Field.nullable("name", ArrowType.Utf8.INSTANCE),
      new Field("vec", FieldType.nullable(new ArrowType.FixedSizeList(4)),
          List.of(Field.nullable("item", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE))))));

  @BeforeAll
  static void setUp() {
    allocator = new RootAllocator();
  }

  @AfterAll
  static void tearDown() {
    assertEquals(0, LanceHost.liveBatches());
    allocator.close(); // fails when the library did not release a batch it was handed
  }

  /** Rows start..end: id, name "n<id>" (null every 5th), vec (id, id/2, -id, 1). */
  static VectorSchemaRoot batch(BufferAllocator a, long start, long end) {
    VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, a);
    int n = (int) (end - start);
    BigIntVector id = (BigIntVector) root.getVector("id");
    VarCharVector name = (VarCharVector) root.getVector("name");
    FixedSizeListVector vec = (FixedSizeListVector) root.getVector("vec");
    Float4Vector vals = (Float4Vector) vec.getDataVector();
    id.allocateNew(n);
    name.allocateNew(n);
    vec.allocateNew();
    vals.allocateNew(4 * n);
    for (int i = 0; i < n; i++) {
      long v = start + i;
      id.set(i, v);
      if (v % 5 == 0) name.setNull(i);
      else name.setSafe(i, ("n" + v).getBytes(StandardCharsets.UTF_8));
      vec.setNotNull(i);
      float[] f = {v, v / 2f, -v, 1f};
      for (int j = 0; j < 4; j++) vals.set(4 * i + j, f[j]);
    }
    vals.setValueCount(4 * n);
    root.setRowCount(n);
    return root;
  }

  /** Batches of `size` rows over [start, end), built lazily as the library asks for them. */
  static Iterator<VectorSchemaRoot> batches(long start, long end, long size) {
    return batches(allocator, start, end, size);
  }

  static Iterator<VectorSchemaRoot> batches(BufferAllocator a, long start, long end, long size) {
    return new Iterator<>() {
      long next = start;

      @Override
      public boolean hasNext() {
        return next < end;
      }

      @Override
      public VectorSchemaRoot next() {
        if (!hasNext()) throw new NoSuchElementException();
        long e = Math.min(end, next + size);
        VectorSchemaRoot b = batch(a, next, e);
        next = e;
        return b;
      }
    };
  }

  static JsonNode pylance(Path uri) throws Exception {
    return WriteTestSupport.pylance(uri);
  }

  static long dataFiles(Path uri) throws Exception {
    return WriteTestSupport.dataFiles(uri);
  }

  static Path fresh(String name) throws Exception {
    Path dir = Fixtures.root().resolve("written");
    Files.createDirectories(dir);
    Path p = dir.resolve(name);
    assertFalse(Files.exists(p));
    return p;
  }

  @Test
  void createAndAppendInOneProcess() throws Exception {
    Path uri = fresh("one.lance");
    Write.Result r = Write.write(uri.toString(), null, SCHEMA, batches(0, 5000, 700), Write.Options.mode(Write.CREATE));
    assertTrue(r.committed);
    assertEquals(1, r.version);
    assertEquals(5000, r.rowsWritten);
    try (Dataset at = Dataset.open(uri.toString())) {
      Write.Result a = Write.write(uri.toString(), at, SCHEMA, batches(5000, 6000, 1000),
          Write.Options.mode(Write.APPEND).commitMessage("from java"));
      assertEquals(2, a.version);
    }
    JsonNode py = pylance(uri);
    assertEquals(2, py.get("version").asLong());
    assertEquals(6000, py.get("rows").asLong());
    assertEquals(6000, py.get("distinct").asLong());
    assertEquals(5999L * 6000 / 2, py.get("sum_id").asLong());
    assertEquals(1200, py.get("null_names").asLong());
    assertTrue(py.get("names_ok").asBoolean());
    assertEquals(5999.0 * 6000 / 4, py.get("sum_vec1").asDouble(), 1.0);
    assertTrue(py.get("type").asText().startsWith("fixed_size_list<item: float>[4]"), py.get("type").asText());
  }

  @Test
  void stagedSharesCommitOncePerStatementAndAbortLeavesNothing() throws Exception {
    Path uri = fresh("staged.lance");
    Write.write(uri.toString(), null, SCHEMA, batches(0, 100, 100), Write.Options.mode(Write.CREATE));
    List<byte[]> shares = new ArrayList<>();
    byte[] token;
    try (Dataset planner = Dataset.open(uri.toString())) {
      token = planner.snapshot();
    }
    for (int w = 0; w < 3; w++) { // three workers, each from the shipped snapshot token
      try (Dataset at = Dataset.fromSnapshot(token, null)) {
        Write.Staged s = Write.stage(uri.toString(), at, SCHEMA, batches(100 + 1000L * w, 1100 + 1000L * w, 300),
            Write.Options.mode(Write.APPEND));
        assertEquals(1000, s.result.rowsWritten);
        assertFalse(s.result.committed);
        shares.add(s.bytes);
      }
    }
    assertEquals(1, pylance(uri).get("version").asLong(), "staging commits nothing");
    Write.Result c = Write.commit(uri.toString(), shares, Write.Options.mode(Write.APPEND).statementId("q-1"));
    assertTrue(c.committed);
    assertEquals(2, c.version);
    Write.Result again = Write.commit(uri.toString(), shares, Write.Options.mode(Write.APPEND).statementId("q-1"));
    assertFalse(again.committed, "a retried commit of the same statement writes nothing");
    assertEquals(2, again.version);
    JsonNode py = pylance(uri);
    assertEquals(2, py.get("version").asLong());
    assertEquals(3100, py.get("rows").asLong());
    assertEquals(3100, py.get("distinct").asLong());

    // A share that is aborted leaves no file and no version.
    long files = dataFiles(uri);
    Write.Staged s;
    try (Dataset at = Dataset.open(uri.toString())) {
      s = Write.stage(uri.toString(), at, SCHEMA, batches(9000, 9500, 500), Write.Options.mode(Write.APPEND));
    }
    assertTrue(dataFiles(uri) > files);
    assertTrue(Write.abort(List.of(s.bytes), null) >= 1);
    assertEquals(files, dataFiles(uri));
    assertEquals(2, pylance(uri).get("version").asLong());
  }

  @Test
  void aFailingSourceIsAnErrorAndLeavesTheTableAsItWas() throws Exception {
    Path uri = fresh("failing.lance");
    Write.write(uri.toString(), null, SCHEMA, batches(0, 10, 10), Write.Options.mode(Write.CREATE));
    Iterator<VectorSchemaRoot> good = batches(10, 2010, 500);
    Iterator<VectorSchemaRoot> failing = new Iterator<>() {
      int n = 0;

      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public VectorSchemaRoot next() {
        if (n++ == 3) throw new IllegalStateException("the source broke after three batches");
        return good.next();
      }
    };
    try (Dataset at = Dataset.open(uri.toString())) {
      LanceException e = assertThrows(LanceException.HostStream.class,
          () -> Write.write(uri.toString(), at, SCHEMA, failing, Write.Options.mode(Write.APPEND)));
      assertTrue(e.getMessage().contains("the source broke"), e.getMessage());
    }
    JsonNode py = pylance(uri);
    assertEquals(1, py.get("version").asLong());
    assertEquals(10, py.get("rows").asLong());
    // A batch of another schema is refused.
    Schema other = new Schema(List.of(Field.nullable("id", new ArrowType.Int(32, true))));
    VectorSchemaRoot wrong = VectorSchemaRoot.create(other, allocator);
    wrong.setRowCount(0);
    try (Dataset at = Dataset.open(uri.toString())) {
      assertThrows(LanceException.class,
          () -> Write.write(uri.toString(), at, SCHEMA, List.of(wrong).iterator(), Write.Options.mode(Write.APPEND)));
    }
    assertEquals(1, pylance(uri).get("version").asLong());
  }
}
