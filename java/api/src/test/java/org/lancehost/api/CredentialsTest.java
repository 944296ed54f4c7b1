package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.ArrowStream;
import org.lancehost.Credentials;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.ScanOptions;
import org.lancehost.Write;

/**
 * Credentials a Java host keeps in its own secret store, refreshed through a {@link
 * Credentials.Provider} (issue 60): a moto S3 server that accepts live IAM keys only, keys that
 * live a few seconds (java/tests/credentials_fixture.py), and pylance reading what was written.
 */
class CredentialsTest {
  static Process fixture;
  static JsonNode world;
  static BufferAllocator allocator;
  static final Schema SCHEMA = new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true))));
  static final HttpClient HTTP = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    allocator = new RootAllocator();
    String script = Paths.get(System.getProperty("lancehost.test.root"), "java", "tests", "credentials_fixture.py").toString();
    fixture = new ProcessBuilder(System.getProperty("lancehost.test.python", "python3"), script)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String line = new BufferedReader(new InputStreamReader(fixture.getInputStream(), StandardCharsets.UTF_8)).readLine();
    assertNotNull(line, "credentials_fixture.py ended without a table (its errors are above)");
    world = new ObjectMapper().readTree(line);
  }

  @AfterAll
  static void stop() throws Exception {
    fixture.getOutputStream().close();
    if (!fixture.waitFor(60, TimeUnit.SECONDS)) fixture.destroyForcibly();
    allocator.close();
  }

  static Map<String, String> fields(JsonNode j) {
    Map<String, String> m = new HashMap<>();
    j.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
    return m;
  }

  /** A new short-lived key from the issuer, with the table's other storage options. */
  static Map<String, String> vend() throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(world.get("issuer").asText())).build(),
        HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() == 403) throw new LanceException.PermissionDenied("the issuer refused");
    assertEquals(200, r.statusCode(), r.body());
    Map<String, String> m = fields(world.get("base"));
    m.putAll(fields(new ObjectMapper().readTree(r.body())));
    return m;
  }

  static long lifetimeMs() {
    return (long) (world.get("lifetime_s").asDouble() * 1000);
  }

  /** `n` batches of 100 ids from `start`, each handed over `pauseMs` after the one before. */
  static Iterator<VectorSchemaRoot> slow(long start, int n, long pauseMs) {
    return new Iterator<>() {
      int i = 0;

      @Override
      public boolean hasNext() {
        return i < n;
      }

      @Override
      public VectorSchemaRoot next() {
        if (!hasNext()) throw new NoSuchElementException();
        try {
          Thread.sleep(pauseMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
        VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
        BigIntVector id = (BigIntVector) root.getVector("id");
        id.allocateNew(100);
        for (int j = 0; j < 100; j++) id.set(j, start + 100L * i + j);
        root.setRowCount(100);
        i++;
        return root;
      }
    };
  }

  @Test
  void aStagedWriteOutlivesThreeLifetimesThroughTheProvider() throws Exception {
    String uri = world.get("uri").asText();
    List<String> asked = Collections.synchronizedList(new ArrayList<>());
    Map<String, String> first = vend();
    Credentials.register(uri, first, tableUri -> {
      asked.add(tableUri);
      return vend();
    });
    int batches = 24;
    long started = System.nanoTime();
    Write.Staged share;
    try (Dataset at = Dataset.open(uri, first, 0)) {
      share = Write.stage(uri, at, SCHEMA, slow(100_000, batches, lifetimeMs() * 33 / 10 / batches),
          Write.Options.mode(1).storageOptions(first).maxRowsPerFile(200));
    }
    long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertTrue(elapsedMs > 3 * lifetimeMs(), "the write outlived three lifetimes: " + elapsedMs + " ms");
    assertTrue(asked.size() >= 3, "the provider gave new keys along the way: " + asked.size());
    assertTrue(asked.stream().allMatch(uri::equals), asked.toString());
    assertEquals(100L * batches, share.result.rowsWritten);
    for (String secret : List.of(first.get("aws_access_key_id"), first.get("aws_secret_access_key"))) {
      assertFalse(new String(share.bytes, StandardCharsets.ISO_8859_1).contains(secret), "the share carries no secret");
    }

    Map<String, String> admin = fields(world.get("admin"));
    Write.Result committed = Write.commit(uri, List.of(share.bytes), Write.Options.mode(1).storageOptions(admin));
    assertTrue(committed.committed);
    String code = "import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1], storage_options=json.loads(sys.argv[2]))\n"
        + "new = ds.to_table(filter='id >= 100000')['id'].to_pylist()\n"
        + "print(json.dumps({'rows': ds.count_rows(), 'new': sorted(new), 'version': ds.version}))\n";
    JsonNode py = WriteTestSupport.python(code, uri, new ObjectMapper().writeValueAsString(admin));
    assertEquals(world.get("count").asLong() + 100L * batches, py.get("rows").asLong());
    assertEquals(committed.version, py.get("version").asLong());
    List<Long> want = new ArrayList<>();
    for (long v = 100_000; v < 100_000 + 100L * batches; v++) want.add(v);
    List<Long> got = new ArrayList<>();
    py.get("new").forEach(v -> got.add(v.asLong()));
    assertEquals(want, got);
  }

  @Test
  void aProviderThatRefusesFailsTheOperationWithItsCode() throws Exception {
    String uri = world.get("uri").asText();
    Map<String, String> first = vend();
    Credentials.register(uri, first, tableUri -> {
      throw new LanceException.PermissionDenied("the secret store refused");
    });
    try (Dataset ds = Dataset.open(uri, first, 0)) {
      Thread.sleep(lifetimeMs() + 500); // the key expired: reading needs the provider, which refuses
      LanceException e = assertThrows(LanceException.class, () -> {
        try (ArrowStream s = ds.scan(ScanOptions.all().columns("id"), allocator)) {
          s.readAll().forEach(VectorSchemaRoot::close);
        }
      });
      assertEquals(9, e.code(), e.toString()); // LANCE_ERR_PERMISSION_DENIED
    }
  }

  @Test
  void badRegistrationsAreRefused() throws Exception {
    Map<String, String> first = vend();
    Credentials.Provider p = tableUri -> first;
    assertThrows(LanceException.InvalidArgument.class, () -> Credentials.register(world.get("uri").asText(), first, null));
    assertThrows(LanceException.InvalidArgument.class, () -> Credentials.register("", first, p));
    assertThrows(LanceException.InvalidArgument.class, () -> Credentials.register(null, first, p));
    Map<String, String> never = new HashMap<>(first);
    never.remove("expires_at_millis");
    LanceException e = assertThrows(LanceException.InvalidArgument.class,
        () -> Credentials.register(world.get("uri").asText(), never, p));
    assertTrue(e.getMessage().contains("expires_at_millis"), e.getMessage());
  }
}
