package org.lancehost.trino;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.inject.Scopes;
import com.google.inject.multibindings.OptionalBinder;
import io.airlift.configuration.ConfigBinder;
import io.trino.Session;
import io.trino.execution.FailureInjector;
import io.trino.execution.FailureInjector.InjectedFailureType;
import io.trino.execution.QueryInfo;
import io.trino.execution.StageInfo;
import io.trino.execution.StagesInfo;
import io.trino.execution.TestingFailureInjectionConfig;
import io.trino.execution.TestingFailureInjector;
import io.trino.operator.RetryPolicy;
import io.trino.spi.ErrorType;
import io.trino.sql.planner.optimizations.PlanNodeSearcher;
import io.trino.sql.planner.plan.MergeWriterNode;
import io.trino.sql.planner.plan.TableWriterNode;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.FaultTolerantExecutionConnectorTestHelper;
import io.trino.testing.QueryRunner.MaterializedResultWithPlan;
import io.trino.testing.TestingSession;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Writes under Trino's fault-tolerant execution (retry-policy TASK, and QUERY for CREATE TABLE AS
 * and INSERT; a file-system exchange): a task attempt of every stage of the statement is made to
 * fail, Trino runs it (or the whole query) again, and the table
 * pylance reads afterwards holds each row once, in one new version — the commit takes only the
 * shares of the attempts Trino kept.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TrinoRetryTest {
  private DistributedQueryRunner trino;
  private Path warehouse;
  private Path exchange;

  @BeforeAll
  void start() throws Exception {
    warehouse = Files.createTempDirectory("lance-host-trino-retry");
    exchange = Files.createTempDirectory("lance-host-trino-exchange");
    Path fixtures = Path.of(System.getProperty("lancehost.test.fixtures"));
    // the source rows: the fixtures' items table, copied so this class writes only its own tables
    copy(fixtures.resolve("warehouse").resolve("items.lance"), warehouse.resolve("items.lance"));
    Session session = TestingSession.testSessionBuilder().setCatalog("lance").setSchema("default").build();
    Map<String, String> props = new HashMap<>(FaultTolerantExecutionConnectorTestHelper.getExtraProperties());
    // Trino's testing failure injector in place of the no-op one servers bind by default
    trino = DistributedQueryRunner.builder(session).setWorkerCount(2).setExtraProperties(props)
        .withExchange("filesystem", Map.of("exchange.base-directories", exchange.toUri().toString()))
        .setAdditionalModule(binder -> {
          ConfigBinder.configBinder(binder).bindConfig(TestingFailureInjectionConfig.class);
          OptionalBinder.newOptionalBinder(binder, FailureInjector.class).setBinding()
              .to(TestingFailureInjector.class).in(Scopes.SINGLETON);
        })
        .build();
    trino.installPlugin(new LanceHostPlugin());
    trino.createCatalog("lance", "lance_host", Map.of("lance.type", "dir", "lance.root", warehouse.toString(),
        "lance-host.split-target-rows", "300"));
  }

  @AfterAll
  void stop() throws Exception {
    if (trino != null) trino.close();
    for (Path dir : new Path[] {warehouse, exchange}) {
      if (dir == null) continue;
      try (var paths = Files.walk(dir)) {
        for (Path p : (Iterable<Path>) paths.sorted(java.util.Comparator.reverseOrder())::iterator) Files.delete(p);
      }
    }
  }

  private static void copy(Path from, Path to) throws Exception {
    try (var paths = Files.walk(from)) {
      for (Path p : (Iterable<Path>) paths::iterator) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) Files.createDirectories(target);
        else Files.copy(p, target);
      }
    }
  }

  /**
   * Runs `sql` with the first attempt of one task in each of the stages 0 to 3 failing (an internal
   * error, which Trino retries); returns how many task attempts failed in the stages that write
   * (the table writer's or the merge writer's).
   */
  private int runWithFailures(String sql) {
    return runWithFailures(sql, RetryPolicy.TASK);
  }

  /** {@link #runWithFailures(String)} under `policy` (QUERY: Trino runs the whole query again). */
  private int runWithFailures(String sql, RetryPolicy policy) {
    String token = "lance-host-retry-" + UUID.randomUUID();
    Session session = Session.builder(trino.getDefaultSession()).setTraceToken(Optional.of(token))
        .setSystemProperty("retry_policy", policy.name()).build();
    for (int stage = policy == RetryPolicy.QUERY ? 1 : 0; stage <= 3; stage++) {
      trino.injectTaskFailure(token, stage, 0, 0, InjectedFailureType.TASK_FAILURE, Optional.of(ErrorType.INTERNAL_ERROR));
    }
    MaterializedResultWithPlan r = trino.executeWithPlan(session, sql);
    QueryInfo info = trino.getCoordinator().getQueryManager().getFullQueryInfo(r.queryId());
    assertEquals(policy, info.getRetryPolicy());
    if (policy == RetryPolicy.QUERY) {
      // the stages shown are the last attempt's; the query's statistics keep the failed ones
      return info.getQueryStats().getFailedTasks();
    }
    int failed = 0;
    for (StageInfo stage : StagesInfo.getAllStages(info.getStages())) {
      boolean writes = PlanNodeSearcher.searchFrom(stage.plan().getRoot())
          .where(n -> n instanceof TableWriterNode || n instanceof MergeWriterNode).matches();
      if (writes) failed += stage.stageStats().getFailedTasks();
    }
    return failed;
  }

  /** What `expression` (Python, over the rows `t` and dataset `ds`) is, as pylance reads `table`. */
  private JsonNode pylance(String table, String expression) throws Exception {
    String code = "import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1]); t = ds.to_table().to_pylist()\n"
        + "print(json.dumps(" + expression + "))\n";
    Process p = new ProcessBuilder(System.getProperty("lancehost.test.python", "python3"), "-c", code,
        warehouse.resolve(table + ".lance").toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    return new ObjectMapper().readTree(out.substring(out.indexOf('{')));
  }

  private static final String ROWS = "{'version': ds.version, 'count': len(t), 'ids': sorted(r['id'] for r in t),"
      + " 'qty': sorted((r['id'], r['qty']) for r in t), 'names': sorted((r['id'], r['name'] or '') for r in t)}";

  @Test
  void createTableAsAndInsertUnderTaskRetriesWriteEachRowOnce() throws Exception {
    JsonNode items = pylance("items", ROWS);
    // CREATE TABLE AS: the table made (version 1) and its rows (version 2), every row once
    int failed = runWithFailures("CREATE TABLE copied AS SELECT id, qty, name FROM items");
    assertTrue(failed >= 1, "a writing task attempt failed and was retried: " + failed);
    JsonNode copied = pylance("copied", ROWS);
    assertEquals(2, copied.get("version").asLong());
    assertEquals(items.get("ids"), copied.get("ids"));
    assertEquals(items.get("qty"), copied.get("qty"));
    assertEquals(items.get("names"), copied.get("names"));
    // INSERT ... SELECT: one more version holding the source rows once more, not twice
    failed = runWithFailures("INSERT INTO copied SELECT id + 1000000, qty, name FROM items WHERE id % 3 = 0");
    assertTrue(failed >= 1, "a writing task attempt failed and was retried: " + failed);
    JsonNode after = pylance("copied", "{'version': ds.version, 'count': len(t),"
        + " 'new': sorted(r['id'] - 1000000 for r in t if r['id'] >= 1000000),"
        + " 'distinct': len(set(r['id'] for r in t))}");
    assertEquals(3, after.get("version").asLong(), "one version per statement");
    java.util.List<Long> want = new java.util.ArrayList<>();
    items.get("ids").forEach(n -> {
      if (n.asLong() % 3 == 0) want.add(n.asLong());
    });
    java.util.List<Long> got = new java.util.ArrayList<>();
    after.get("new").forEach(n -> got.add(n.asLong()));
    assertEquals(want, got);
    assertEquals(after.get("count").asLong(), after.get("distinct").asLong(), "no row twice");
  }

  @Test
  void createTableAsAndInsertUnderQueryRetriesWriteEachRowOnce() throws Exception {
    JsonNode items = pylance("items", ROWS);
    int failed = runWithFailures("CREATE TABLE copied_q AS SELECT id, qty, name FROM items", RetryPolicy.QUERY);
    assertTrue(failed >= 1, "a writing task attempt failed and the query ran again: " + failed);
    JsonNode copied = pylance("copied_q", ROWS);
    assertEquals(2, copied.get("version").asLong());
    assertEquals(items.get("ids"), copied.get("ids"));
    assertEquals(items.get("names"), copied.get("names"));
    failed = runWithFailures("INSERT INTO copied_q SELECT id + 1000000, qty, name FROM items", RetryPolicy.QUERY);
    assertTrue(failed >= 1, "a writing task attempt failed and the query ran again: " + failed);
    JsonNode after = pylance("copied_q", "{'version': ds.version, 'count': len(t), 'distinct': len(set(r['id'] for r in t))}");
    assertEquals(3, after.get("version").asLong(), "one version per statement");
    assertEquals(2L * items.get("count").asLong(), after.get("count").asLong());
    assertEquals(after.get("count").asLong(), after.get("distinct").asLong(), "no row twice");
  }

  @Test
  void deleteUpdateAndMergeUnderTaskRetriesChangeEachRowOnce() throws Exception {
    trino.execute("CREATE TABLE edited AS SELECT id, qty, name FROM items");
    JsonNode before = pylance("edited", ROWS);
    long version = before.get("version").asLong();
    // row by row (the predicates use a function, so nothing is pushed whole)
    int failed = runWithFailures("DELETE FROM edited WHERE mod(id, 5) = 1");
    assertTrue(failed >= 1, "a writing task attempt failed and was retried: " + failed);
    failed = runWithFailures("UPDATE edited SET qty = qty + 7 WHERE mod(id, 5) = 2");
    assertTrue(failed >= 1, "a writing task attempt failed and was retried: " + failed);
    failed = runWithFailures("MERGE INTO edited e USING (SELECT id, qty FROM items WHERE mod(id, 5) IN (1, 3)) s "
        + "ON e.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.qty * 2 "
        + "WHEN NOT MATCHED THEN INSERT (id, qty, name) VALUES (s.id, s.qty, 'merged')");
    assertTrue(failed >= 1, "a writing task attempt failed and was retried: " + failed);
    JsonNode after = pylance("edited", "{'version': ds.version, 'count': len(t), 'distinct': len(set(r['id'] for r in t)),"
        + " 'rows': sorted((r['id'], r['qty'], r['name'] or '') for r in t)}");
    assertEquals(version + 3, after.get("version").asLong(), "one version per statement");
    assertEquals(after.get("count").asLong(), after.get("distinct").asLong(), "no row twice");
    // the rows the three statements make of the rows pylance read before them
    java.util.List<String> want = new java.util.ArrayList<>();
    for (JsonNode r : before.get("names")) {
      long id = r.get(0).asLong();
      JsonNode q = null;
      for (JsonNode x : before.get("qty")) {
        if (x.get(0).asLong() == id) {
          q = x.get(1);
          break;
        }
      }
      long m = Math.floorMod(id, 5);
      if (m == 1) want.add(id + "/" + q.asLong() + "/merged"); // deleted, then inserted by the MERGE
      else if (m == 2) want.add(id + "/" + (q.asLong() + 7) + "/" + r.get(1).asText());
      else if (m == 3) want.add(id + "/" + (q.asLong() * 2) + "/" + r.get(1).asText());
      else want.add(id + "/" + q.asLong() + "/" + r.get(1).asText());
    }
    java.util.List<String> got = new java.util.ArrayList<>();
    for (JsonNode r : after.get("rows")) got.add(r.get(0).asLong() + "/" + r.get(1).asLong() + "/" + r.get(2).asText());
    want.sort(null);
    got.sort(null);
    assertEquals(want, got);
  }
}
