package org.lancehost.sparktest;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.lancehost.api.Fixtures;

/**
 * The connector on local-cluster: two executor JVMs of their own, which load the natives from the
 * lance-host jar on their class path (nothing tells them where a library is) and open the
 * snapshot from the split bytes they are sent.
 */
class SparkClusterTest {
  static SparkSession spark;
  static JsonNode basic;
  /** moto with 4-second IAM keys, their issuer and a REST namespace vending them (java/tests/credentials_fixture.py). */
  static Process credFixture;
  static JsonNode cred;

  @BeforeAll
  static void start() throws Exception {
    String server = System.getProperty("lancehost.test.restserver", "");
    assertFalse(server.isEmpty(), "set -Dlancehost.restserver (the lance-host-rest-server binary)");
    String script = java.nio.file.Paths.get(System.getProperty("lancehost.test.root"), "java", "tests",
        "credentials_fixture.py").toString();
    credFixture = new ProcessBuilder(System.getProperty("lancehost.test.python", "python3"), script, "--rest", server)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String line = new java.io.BufferedReader(new java.io.InputStreamReader(credFixture.getInputStream(),
        java.nio.charset.StandardCharsets.UTF_8)).readLine();
    assertNotNull(line, "credentials_fixture.py ended without a table (its errors are above)");
    cred = new com.fasterxml.jackson.databind.ObjectMapper().readTree(line);
    SparkSession.Builder b = SparkSession.builder().master("local-cluster[2,1,1024]").appName("lance-host-java-cluster")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
        .config("spark.executor.extraClassPath", System.getProperty("lancehost.test.jars"))
        .config("spark.sql.catalog.lc", "org.lancehost.spark.LanceHostCatalog")
        .config("spark.sql.catalog.lc.root", Fixtures.root().resolve("cluster-written").toString())
        .config("spark.sql.catalog.cred", "org.lancehost.spark.LanceHostCatalog")
        .config("spark.sql.catalog.cred.type", "rest")
        .config("spark.sql.catalog.cred.uri", cred.get("rest").asText());
    cred.get("base").fields().forEachRemaining(e -> b.config("spark.sql.catalog.cred.storage." + e.getKey(), e.getValue().asText()));
    spark = b.getOrCreate();
    basic = Fixtures.expected().get("basic");
    // Executors register a while after the context starts (longer on a loaded machine).
    long deadline = System.nanoTime() + 240_000_000_000L;
    while (spark.sparkContext().getExecutorMemoryStatus().size() < 3 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
  }

  @AfterAll
  static void stop() throws Exception {
    spark.stop();
    credFixture.getOutputStream().close();
    if (!credFixture.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)) credFixture.destroyForcibly();
  }

  /**
   * Issue 60: a catalog table's tasks carry the catalog's name and properties, never the storage
   * options it vended; each executor describes the table through its own catalog. The driver
   * described the table with a key that lives 4 seconds; the executors (JVMs of their own, where
   * nothing refreshes that key) read only after it expired and was deleted at the storage — they
   * get fresh keys from their describe. Shipping the driver's key, they failed with
   * PERMISSION_DENIED. Then an append through the catalog: its tasks stage with what they describe.
   */
  @Test
  void executorsDescribeACatalogTableThroughTheirOwnCatalog() throws Exception {
    Dataset<Row> t = spark.table("cred.t");
    t.queryExecution().analyzed(); // the driver describes the table now
    Thread.sleep((long) (cred.get("lifetime_s").asDouble() * 1000) + 1500);
    List<Row> ids = t.select("id").collectAsList();
    assertEquals(cred.get("count").asLong(), ids.size());
    assertEquals(cred.get("sum_id").asLong(), ids.stream().mapToLong(r -> r.getLong(0)).sum());

    spark.range(100_000, 100_600, 1, 3).selectExpr("id").writeTo("cred.t").append();
    String code = "import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1], storage_options=json.loads(sys.argv[2]))\n"
        + "t = ds.to_table(filter='id >= 100000')\n"
        + "print(json.dumps({'rows': ds.count_rows(), 'new': t.num_rows, 'sum_new': sum(t['id'].to_pylist())}))\n";
    JsonNode py = org.lancehost.api.WriteTestSupport.python(code, cred.get("uri").asText(),
        new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(cred.get("admin")));
    assertEquals(cred.get("count").asLong() + 600, py.get("rows").asLong());
    assertEquals(600, py.get("new").asLong());
    assertEquals((100_000L + 100_599L) * 600 / 2, py.get("sum_new").asLong());
  }

  @Test
  void executorsReadSplitsAndAnswerAsPylance() {
    assertEquals(3, spark.sparkContext().getExecutorMemoryStatus().size(), "a driver and two executors");
    Dataset<Row> t = spark.read().format("lance_host").load(basic.get("uri").asText());
    assertTrue(t.rdd().getNumPartitions() >= 6, "one partition per split");
    assertEquals(basic.get("count").asLong(), t.filter("id >= 0").count());
    List<Row> f = t.filter("value > 120 AND category = 'c2'").select("id").orderBy("id").collectAsList();
    JsonNode want = basic.get("filtered");
    assertEquals(want.size(), f.size());
    for (int i = 0; i < f.size(); i++) assertEquals(want.get(i).get("id").asLong(), f.get(i).getLong(0));
    for (Row r : t.groupBy("category").agg(functions.sum("qty")).collectAsList()) {
      assertEquals(basic.get("groups").get(r.getString(0)).get("sum_qty").asLong(), r.getLong(1));
    }
  }

  @Test
  void executorsStageAndTheDriverCommitsOnce() throws Exception {
    java.nio.file.Path dir = Fixtures.root().resolve("cluster-written");
    java.nio.file.Files.createDirectories(dir);
    String uri = dir.resolve("t.lance").toString();
    Dataset<Row> rows = spark.range(0, 6000, 1, 4).selectExpr("id", "concat('n', id) AS name",
        "array(CAST(id AS FLOAT), CAST(id / 2 AS FLOAT), CAST(-id AS FLOAT), CAST(1 AS FLOAT)) AS vec");
    rows.write().format("lance_host").option("vector_columns", "vec:4").mode("append").save(uri);
    rows.selectExpr("id + 6000 AS id", "name", "vec").write().format("lance_host").mode("append").save(uri);
    JsonNode py = org.lancehost.api.WriteTestSupport.pylance(java.nio.file.Path.of(uri));
    assertEquals(2, py.get("version").asLong(), "one version per write");
    assertEquals(12000, py.get("rows").asLong());
    assertEquals(12000, py.get("distinct").asLong());
    assertEquals(11999L * 12000 / 2, py.get("sum_id").asLong());
  }

  @Test
  void executorsRunAMergeAsOneVersionAndHoldNoBatchAfterwards() throws Exception {
    java.nio.file.Path dir = Fixtures.root().resolve("cluster-written");
    java.nio.file.Files.createDirectories(dir);
    String uri = dir.resolve("merged.lance").toString();
    spark.range(0, 4000, 1, 4).selectExpr("id", "concat('n', id) AS name").write().format("lance_host")
        .mode("append").save(uri);
    spark.range(3000, 5000, 1, 4).selectExpr("id", "concat('m', id) AS name").createOrReplaceTempView("cluster_src");
    spark.sql("MERGE INTO lc.merged t USING cluster_src s ON t.id = s.id "
        + "WHEN MATCHED THEN UPDATE SET t.name = s.name WHEN NOT MATCHED THEN INSERT *");
    JsonNode py = org.lancehost.api.WriteTestSupport.pylanceRows(java.nio.file.Path.of(uri));
    assertEquals(2, py.get("version").asLong(), "one version for the merge");
    assertEquals(5000, py.get("rows").size());
    long i = 0;
    for (JsonNode r : py.get("rows")) {
      assertEquals(i, r.get(0).asLong());
      assertEquals((i >= 3000 ? "m" : "n") + i, r.get(1).asText());
      i++;
    }
    // A long job's executors stay flat: after more queries, no executor holds an imported batch.
    for (int q = 0; q < 10; q++) {
      assertEquals(5000, spark.read().format("lance_host").load(uri).filter("id >= " + q).count() + q);
    }
    List<String> held = spark.range(0, 32, 1, 32).mapPartitions(
        (org.apache.spark.api.java.function.MapPartitionsFunction<Long, String>) rows -> List.of(
            org.apache.spark.SparkEnv.get().executorId() + "=" + org.lancehost.LanceHost.liveBatches()).iterator(),
        org.apache.spark.sql.Encoders.STRING()).distinct().collectAsList();
    java.util.Set<String> executors = new java.util.HashSet<>();
    for (String h : held) {
      executors.add(h.split("=")[0]);
      assertTrue(h.endsWith("=0"), "an executor holds batches: " + held);
    }
    assertEquals(2, executors.size(), "both executors checked: " + held);
  }
}
