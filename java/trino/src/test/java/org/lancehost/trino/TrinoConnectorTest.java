package org.lancehost.trino;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.trino.Session;
import io.trino.testing.DistributedQueryRunner;
import io.trino.testing.MaterializedResult;
import io.trino.testing.MaterializedRow;
import io.trino.testing.TestingSession;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The connector in Trino's own distributed query runner (a coordinator and two workers in this
 * JVM; handles and splits travel between them as JSON) against tables pylance wrote
 * (java/tests/trino_fixtures.py), every answer compared with pylance's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TrinoConnectorTest {
  private DistributedQueryRunner trino;
  private JsonNode expected;

  @BeforeAll
  void start() throws Exception {
    Path fixtures = Path.of(System.getProperty("lancehost.test.fixtures"));
    expected = new ObjectMapper().readTree(fixtures.resolve("expected.json").toFile());
    Session session = TestingSession.testSessionBuilder().setCatalog("lance").setSchema("default").build();
    trino = DistributedQueryRunner.builder(session).setWorkerCount(2).build();
    trino.installPlugin(new LanceHostPlugin());
    // a long dynamic-filter wait, so that the join test's probe splits get the filter also on a
    // loaded machine (the wait ends as soon as the build side is done)
    trino.createCatalog("lance", "lance_host",
        Map.of("lance.type", "dir", "lance.root", fixtures.resolve("warehouse").toString(),
            "lance-host.dynamic-filter-wait-ms", "60000"));
    trino.createCatalog("lance_slices", "lance_host",
        Map.of("lance.type", "dir", "lance.root", fixtures.resolve("warehouse").toString(),
            "lance-host.split-target-rows", "700"));
  }

  @AfterAll
  void stop() {
    if (trino != null) trino.close();
  }

  private MaterializedResult q(String sql) {
    return trino.execute(sql);
  }

  private List<Long> ids(String sql) {
    return q(sql).getMaterializedRows().stream().map(r -> ((Number) r.getField(0)).longValue()).sorted()
        .collect(Collectors.toList());
  }

  private List<Long> expectedIds(String key) {
    List<Long> out = new ArrayList<>();
    expected.get(key).forEach(n -> out.add(n.asLong()));
    return out;
  }

  private String explain(String sql) {
    return (String) q("EXPLAIN " + sql).getOnlyValue();
  }

  @Test
  void schemasTablesAndColumns() {
    assertTrue(q("SHOW SCHEMAS").getOnlyColumnAsSet().contains("default"));
    assertTrue(q("SHOW TABLES").getOnlyColumnAsSet().containsAll(java.util.Set.of("items", "empty", "sink", "docs")));
    List<String> columns = q("SELECT column_name FROM information_schema.columns WHERE table_name = 'items' "
        + "ORDER BY ordinal_position").getOnlyColumn().map(Object::toString).collect(Collectors.toList());
    // the struct column is not mapped and so not shown
    assertEquals(List.of("id", "qty", "small", "tiny", "value", "price", "big", "name", "category", "flag", "day", "ts",
        "vec"), columns);
    assertEquals("array(real)", q("SELECT data_type FROM information_schema.columns WHERE table_name = 'items' "
        + "AND column_name = 'vec'").getOnlyValue());
  }

  @Test
  void countsAndGroupedAggregatesEqualPylance() {
    for (String catalog : List.of("lance", "lance_slices")) {
      assertEquals(expected.get("count").asLong(), q("SELECT count(*) FROM " + catalog + ".default.items").getOnlyValue());
      Map<String, String> got = new TreeMap<>();
      for (MaterializedRow r : q("SELECT category, count(*), sum(qty), sum(price) FROM " + catalog
          + ".default.items GROUP BY category").getMaterializedRows()) {
        got.put((String) r.getField(0), r.getField(1) + "/" + r.getField(2) + "/" + r.getField(3));
      }
      Map<String, String> want = new TreeMap<>();
      expected.get("groups").fields().forEachRemaining(e -> want.put(e.getKey(), e.getValue().get("count").asLong()
          + "/" + e.getValue().get("sum_qty").asLong() + "/" + new BigDecimal(e.getValue().get("sum_price").asText())));
      assertEquals(want, got, catalog);
    }
    String grouped = "SELECT category, count(*), sum(qty), sum(price) FROM items GROUP BY category";
    assertTrue(explain(grouped).contains("lance_aggregate=[group by [category]"), explain(grouped));
    assertEquals(0L, q("SELECT count(*) FROM empty").getOnlyValue());
    assertEquals(0, q("SELECT id FROM empty").getRowCount());
  }

  @Test
  void aggregatesArePushedAndEqualPylance() {
    String sql = "SELECT category, min(name), max(price), count(name), sum(small), min(day), max(flag) FROM items "
        + "GROUP BY category";
    assertTrue(explain(sql).contains("lance_aggregate="), explain(sql));
    Map<String, String> got = new TreeMap<>();
    for (MaterializedRow r : q(sql).getMaterializedRows()) {
      got.put((String) r.getField(0), r.getField(1) + "|" + new BigDecimal(r.getField(2).toString()) + "|"
          + r.getField(3) + "|" + r.getField(4) + "|" + r.getField(5) + "|" + r.getField(6));
    }
    Map<String, String> want = new TreeMap<>();
    expected.get("groups2").fields().forEachRemaining(e -> {
      JsonNode g = e.getValue();
      want.put(e.getKey(), g.get("min_name").asText() + "|" + new BigDecimal(g.get("max_price").asText()) + "|"
          + g.get("count_name").asLong() + "|" + g.get("sum_small").asLong() + "|" + g.get("min_day").asText() + "|"
          + g.get("max_flag").asBoolean());
    });
    assertEquals(want, got);
    // a global aggregate under a pushed filter
    String c2 = "SELECT count(*), sum(qty), min(day), max(day) FROM items WHERE category = 'c2'";
    assertTrue(explain(c2).contains("lance_filter=[`category` = 'c2']") && explain(c2).contains("lance_aggregate="),
        explain(c2));
    MaterializedRow r = q(c2).getMaterializedRows().get(0);
    JsonNode w = expected.get("c2");
    assertEquals(List.of(w.get("count").asLong(), w.get("sum_qty").asLong(), w.get("min_day").asText(),
        w.get("max_day").asText()), List.of(r.getField(0), r.getField(1), r.getField(2).toString(), r.getField(3).toString()));
    // doubles (NaN, -0.0) and averages stay with Trino
    assertFalse(explain("SELECT sum(value) FROM items").contains("lance_aggregate"));
    assertFalse(explain("SELECT avg(qty) FROM items").contains("lance_aggregate"));
    assertEquals(0L, q("SELECT count(*) FROM items WHERE category = 'none'").getOnlyValue());
  }

  @Test
  void filtersArePushedAndExact() {
    String sql = "SELECT id FROM items WHERE qty < 100 AND category = 'c1'";
    assertEquals(expectedIds("ids_qty_lt_100_c1"), ids(sql));
    String plan = explain(sql);
    assertTrue(plan.contains("lance_filter=[") && plan.contains("`qty` < 100") && plan.contains("`category` = 'c1'"), plan);
    assertFalse(plan.contains("filterPredicate"), "nothing left for Trino to filter: " + plan);

    assertEquals(expectedIds("ids_name_eq"), ids("SELECT id FROM items WHERE name = '名前-000043'"));
    assertEquals(expectedIds("ids_day_and_flag"), ids("SELECT id FROM items WHERE day = DATE '2024-01-05' AND flag"));
    assertEquals(expectedIds("ids_price_range"), ids("SELECT id FROM items WHERE price > 500.00 AND price <= 600.00"));
    assertEquals(expectedIds("ids_small_in"), ids("SELECT id FROM items WHERE small IN (-300, 0, 17) AND tiny < 0"));
    assertEquals(expectedIds("ids_name_null"), ids("SELECT id FROM items WHERE name IS NULL"));
    // 38 digits: a literal Lance read as a double would lose them and answer wrongly
    String big = "SELECT id FROM items WHERE big > CAST('" + expected.get("big_3000").asText() + "' AS decimal(38,4))";
    assertEquals(expectedIds("ids_big_gt"), ids(big));
    assertTrue(explain(big).contains("`big` > CAST('"), explain(big));
    assertTrue(explain("SELECT id FROM items WHERE name IS NULL").contains("`name` IS NULL"));
  }

  @Test
  void floatingPointFiltersStayInTrino() {
    // NaN of either sign and -0.0 compare differently in Lance: Trino filters doubles itself
    String sql = "SELECT count(*) FROM items WHERE value > 120";
    assertEquals(expected.get("count_value_gt_120").asLong(), q(sql).getOnlyValue());
    String plan = explain(sql);
    assertFalse(plan.contains("`value`"), plan);
  }

  @Test
  void valuesOfEveryMappedTypeEqualPylance() {
    MaterializedResult r = q("SELECT id, qty, small, tiny, value, price, big, name, category, flag, day, ts, vec "
        + "FROM items WHERE id < 13 ORDER BY id");
    JsonNode first = expected.get("first");
    assertEquals(first.size(), r.getRowCount());
    String[] names = {"id", "qty", "small", "tiny", "value", "price", "big", "name", "category", "flag", "day", "ts", "vec"};
    for (int i = 0; i < first.size(); i++) {
      MaterializedRow row = r.getMaterializedRows().get(i);
      for (int c = 0; c < names.length; c++) {
        JsonNode want = first.get(i).get(names[c]);
        Object got = row.getField(c);
        String what = names[c] + " of row " + i;
        if (want == null || want.isNull()) {
          assertEquals(null, got, what);
        } else if (names[c].equals("value")) {
          // the double's bits as pylance wrote them (-0.0 keeps its sign); Trino's DOUBLE has
          // one NaN (it stores doubleToLongBits), so a NaN of either sign reads as NaN
          double wantValue = Double.longBitsToDouble(Long.parseUnsignedLong(want.asText().substring(5), 16));
          if (Double.isNaN(wantValue)) {
            assertTrue(Double.isNaN((Double) got), what);
          } else {
            assertEquals(want.asText(), String.format("bits:%016x", Double.doubleToRawLongBits((Double) got)), what);
          }
        } else if (names[c].equals("vec")) {
          List<Float> want4 = new ArrayList<>();
          want.forEach(x -> want4.add((float) x.asDouble()));
          assertEquals(want4, got, what);
        } else if (got instanceof BigDecimal d) {
          assertEquals(new BigDecimal(want.asText()), d, what);
        } else if (got instanceof LocalDate d) {
          assertEquals(want.asText(), d.toString(), what);
        } else if (got instanceof LocalDateTime t) {
          String text = t.toLocalDate() + " " + t.toLocalTime().withNano(0)
              + (t.getNano() == 0 ? "" : String.format(".%06d", t.getNano() / 1000));
          assertEquals(want.asText(), text.replace("T", " "), what);
        } else if (got instanceof Number n && want.isNumber()) {
          assertEquals(want.asLong(), n.longValue(), what);
        } else {
          assertEquals(want.isBoolean() ? want.asBoolean() : want.asText(), got, what);
        }
      }
    }
    List<Float> vec = new ArrayList<>();
    expected.get("vec_41").forEach(x -> vec.add((float) x.asDouble()));
    assertEquals(vec, q("SELECT vec FROM items WHERE id = 41").getOnlyValue());
    assertEquals(new BigDecimal(expected.get("max_big").asText()), q("SELECT max(big) FROM items").getOnlyValue());
  }

  @Test
  void decimalSumsThatOverflowAreRefusedNotWrapped() {
    // 3600 values of 34 integer digits: their sum needs more than 38 digits
    RuntimeException e = assertThrows(RuntimeException.class, () -> q("SELECT sum(big) FROM items"));
    // refused by the library (the sum is pushed) or by Trino: never wrapped
    assertTrue(e.getMessage().contains("does not fit decimal128(38, 4)") || e.getMessage().toLowerCase().contains("overflow"),
        e.getMessage());
    assertTrue(explain("SELECT sum(big) FROM items").contains("lance_aggregate="));
  }

  @Test
  void limitsArePushedIntoEachSplit() {
    assertEquals(7, q("SELECT id FROM items LIMIT 7").getRowCount());
    assertTrue(explain("SELECT id FROM items LIMIT 7").contains("lance_limit=7"));
    assertEquals(5, q("SELECT id FROM items WHERE category = 'c3' LIMIT 5").getMaterializedRows().stream()
        .filter(r -> ((Long) r.getField(0)) % 5 == 3).count());
  }

  private List<Long> orderedIds(String sql) {
    return q(sql).getMaterializedRows().stream().map(r -> ((Number) r.getField(0)).longValue())
        .collect(Collectors.toList());
  }

  @Test
  void topNIsPushedIntoEachSplitInTrinosOrder() {
    for (String catalog : List.of("lance", "lance_slices")) {
      String sql = "SELECT id, qty FROM " + catalog + ".default.items ORDER BY qty DESC, id LIMIT 6";
      assertEquals(expectedIds("top_qty_desc_id_6").stream().toList(), orderedIds(sql));
      String plan = explain(sql);
      assertTrue(plan.contains("lance_order=[`qty` DESC NULLS LAST, `id` ASC NULLS LAST]"), plan);
      // code-point order of strings (the table holds non-ASCII names), NULLs where asked
      List<Long> want = new ArrayList<>();
      expected.get("top_name_nulls_first_id_9").forEach(n -> want.add(n.asLong()));
      assertEquals(want, orderedIds("SELECT id FROM " + catalog + ".default.items ORDER BY name NULLS FIRST, id LIMIT 9"));
      List<Long> desc = new ArrayList<>();
      expected.get("top_name_desc_nulls_last_id_5").forEach(n -> desc.add(n.asLong()));
      assertEquals(desc, orderedIds("SELECT id FROM " + catalog + ".default.items ORDER BY name DESC NULLS LAST, id LIMIT 5"));
    }
    // a floating-point key is not pushed (Lance orders NaN otherwise)
    assertFalse(explain("SELECT id FROM items ORDER BY value LIMIT 3").contains("lance_order"));
  }

  @Test
  void timeTravelByVersionAndTimestamp() {
    assertEquals(expected.get("count_v1").asLong(), q("SELECT count(*) FROM items FOR VERSION AS OF 1").getOnlyValue());
    assertEquals(expected.get("count_v2").asLong(), q("SELECT count(*) FROM items FOR VERSION AS OF 2").getOnlyValue());
    assertEquals(expected.get("count_v1").asLong(), q("SELECT count(*) FROM items FOR TIMESTAMP AS OF TIMESTAMP '"
        + expected.get("v2_before_utc").asText() + " UTC'").getOnlyValue());
    assertEquals(expected.get("count_v2").asLong(), q("SELECT count(*) FROM items FOR TIMESTAMP AS OF TIMESTAMP '"
        + expected.get("v2_after_utc").asText() + " UTC'").getOnlyValue());
    RuntimeException missing = assertThrows(RuntimeException.class,
        () -> q("SELECT count(*) FROM items FOR VERSION AS OF 99"));
    assertTrue(missing.getMessage().contains("99"), missing.getMessage());
    assertThrows(RuntimeException.class, () -> q("SELECT count(*) FROM items FOR TIMESTAMP AS OF TIMESTAMP '2001-01-01 00:00:00 UTC'"));
  }

  @Test
  void joinDynamicFiltersArePushedIntoTheScans() {
    // the build side (qty = 0) is known only when it has run: its ids reach the probe side's
    // splits as a dynamic filter, which the scans apply (Trino's own check stays)
    String sql = "SELECT i.id, i.name FROM items i JOIN (SELECT id FROM items WHERE qty = 0) s ON i.id = s.id";
    List<Long> want = expectedIds("ids_qty_0");
    assertEquals(want, ids(sql));
    String analyzed = (String) q("EXPLAIN ANALYZE " + sql).getOnlyValue();
    String[] lines = analyzed.split("\n");
    long probeInput = -1;
    for (int i = 0; i < lines.length; i++) {
      if (!lines[i].contains("dynamicFilters = {")) continue;
      for (int j = i + 1; j < lines.length && j < i + 12; j++) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*Input: (\\d+) rows?").matcher(lines[j]);
        if (m.find()) {
          probeInput = Long.parseLong(m.group(1));
          break;
        }
      }
    }
    assertEquals(want.size(), probeInput, "the probe side's scans read only the joining rows:\n" + analyzed);
  }

  /** What `expression` (Python, over the table's rows `t` and dataset `ds`) is, as pylance reads `table`. */
  private JsonNode pylance(String table, String expression) throws Exception {
    Path path = Path.of(System.getProperty("lancehost.test.fixtures"), "warehouse", table + ".lance");
    String code = "import decimal, json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1]); t = ds.to_table().to_pylist()\n"
        + "print(json.dumps(" + expression + "))\n";
    Process p = new ProcessBuilder(System.getProperty("lancehost.test.python", "python3"), "-c", code, path.toString())
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    return new ObjectMapper().readTree(out.substring(out.indexOf('{')));
  }

  /** pylance's view of the sink table: version, rows, sum(id), sum(price), null names. */
  private JsonNode pylanceSink() throws Exception {
    return pylance("sink", "{'version': ds.version, 'count': len(t), 'sum_id': sum(r['id'] for r in t),"
        + " 'sum_price': str(sum((r['price'] for r in t), decimal.Decimal('0.00'))),"
        + " 'names_null': sum(1 for r in t if r['name'] is None),"
        + " 'vec_100041': [r['vec'] for r in t if r['id'] == 100041]}");
  }

  @Test
  void insertCommitsOneVersionThatPylanceReads() throws Exception {
    JsonNode before = pylanceSink();
    String columns = "id, qty, small, tiny, value, price, big, name, category, flag, day, ts, vec";
    MaterializedResult r = q("INSERT INTO sink SELECT id + 100000, qty, small, tiny, value, price, big, name, category, "
        + "flag, day, ts, vec FROM items WHERE id < 500");
    JsonNode want = expected.get("insert_lt_500");
    assertEquals(want.get("count").asLong(), ((Number) r.getOnlyValue()).longValue());
    JsonNode after = pylanceSink();
    assertEquals(before.get("version").asLong() + 1, after.get("version").asLong(), "one version per INSERT");
    assertEquals(before.get("count").asLong() + want.get("count").asLong(), after.get("count").asLong());
    assertEquals(before.get("sum_id").asLong() + want.get("sum_id").asLong() + 100000L * want.get("count").asLong(),
        after.get("sum_id").asLong());
    assertEquals(new BigDecimal(before.get("sum_price").asText()).add(new BigDecimal(want.get("sum_price").asText())),
        new BigDecimal(after.get("sum_price").asText()));
    assertEquals(before.get("names_null").asLong() + want.get("names_null").asLong(), after.get("names_null").asLong());
    List<Float> vec = new ArrayList<>();
    expected.get("vec_41").forEach(x -> vec.add((float) x.asDouble()));
    List<Float> written = new ArrayList<>();
    after.get("vec_100041").get(0).forEach(x -> written.add((float) x.asDouble()));
    assertEquals(vec, written);
    // and Trino reads back what it wrote, value for value
    assertEquals(0L, q("SELECT count(*) FROM ((SELECT " + columns.replace("id,", "id + 100000,")
        + " FROM items WHERE id < 500) EXCEPT (SELECT " + columns + " FROM sink WHERE id >= 100000 AND id < 100500))")
        .getOnlyValue());

    // a value the table cannot hold fails the INSERT and commits nothing
    RuntimeException e = assertThrows(RuntimeException.class, () -> q("INSERT INTO sink (id, vec) VALUES "
        + "(7, ARRAY[REAL '1.0', REAL '2.0'])"));
    assertTrue(e.getMessage().contains("vectors of 4 values"), e.getMessage());
    assertEquals(after.get("version").asLong(), pylanceSink().get("version").asLong(), "nothing committed");
    // a table with a column Trino cannot write is refused before anything is written
    RuntimeException unmapped = assertThrows(RuntimeException.class, () -> q("INSERT INTO items (id) VALUES (1)"));
    assertTrue(unmapped.getMessage().contains("meta"), unmapped.getMessage());
  }

  /** pylance's view of the edits table: version, rows, and the rows named 'renamed'. */
  private JsonNode pylanceEdits() throws Exception {
    return pylance("edits", "{'version': ds.version, 'count': len(t),"
        + " 'deleted_left': sum(1 for r in t if r['category'] == 'c1' and r['qty'] < 500),"
        + " 'renamed': sorted(r['id'] for r in t if r['name'] == 'renamed' and r['qty'] == 7)}");
  }

  @Test
  void deleteAndUpdateWithPushedPredicatesCommitOneVersionEach() throws Exception {
    JsonNode want = expected.get("edits");
    JsonNode v0 = pylanceEdits();
    long deleted = ((Number) q("DELETE FROM edits WHERE category = 'c1' AND qty < 500").getOnlyValue()).longValue();
    assertEquals(want.get("deleted_c1_qty_lt_500").asLong(), deleted);
    JsonNode v1 = pylanceEdits();
    assertEquals(v0.get("version").asLong() + 1, v1.get("version").asLong());
    assertEquals(want.get("count").asLong() - deleted, v1.get("count").asLong());
    assertEquals(0, v1.get("deleted_left").asLong());

    long updated = ((Number) q("UPDATE edits SET name = 'renamed', qty = 7 WHERE id < 50").getOnlyValue()).longValue();
    assertEquals(want.get("updated_id_lt_50").asLong(), updated);
    JsonNode v2 = pylanceEdits();
    assertEquals(v1.get("version").asLong() + 1, v2.get("version").asLong());
    assertEquals(updated, v2.get("renamed").size());
    assertEquals(v1.get("count").asLong(), v2.get("count").asLong(), "an update keeps every row");
    assertEquals(updated, q("SELECT count(*) FROM edits WHERE name = 'renamed' AND qty = 7").getOnlyValue());

    // a predicate that is not pushed (a double) runs row by row through Trino's merge API: the rows
    // pylance sees matching it are deleted, as one version
    long big = pylance("edits", "{'n': sum(1 for r in t if r['value'] is not None and r['value'] > 100)}").get("n").asLong();
    assertTrue(big > 0);
    assertEquals(big, ((Number) q("DELETE FROM edits WHERE value > 100").getOnlyValue()).longValue());
    JsonNode v3 = pylance("edits", "{'version': ds.version, 'count': len(t), "
        + "'left': sum(1 for r in t if r['value'] is not None and r['value'] > 100)}");
    assertEquals(v2.get("version").asLong() + 1, v3.get("version").asLong());
    assertEquals(v2.get("count").asLong() - big, v3.get("count").asLong());
    assertEquals(0, v3.get("left").asLong());
  }

  @Test
  void vectorSearchTableFunctionEqualsPylance() {
    List<String> q = new ArrayList<>();
    expected.get("nn_query").forEach(x -> q.add("REAL '" + x.asDouble() + "'"));
    String sql = "SELECT id, _distance, category FROM TABLE(lance.system.vector_search(table_name => 'items', "
        + "column_name => 'vec', query_vector => ARRAY[" + String.join(", ", q) + "], k => 7)) ORDER BY _distance, id";
    MaterializedResult r = q(sql);
    List<Long> ids = new ArrayList<>();
    for (MaterializedRow row : r.getMaterializedRows()) ids.add((Long) row.getField(0));
    assertEquals(expectedIds("nn_ids").stream().sorted().toList(), ids.stream().sorted().toList());
    for (int i = 0; i < r.getRowCount(); i++) {
      assertEquals(expected.get("nn_distances").get(i).asDouble(), ((Float) r.getMaterializedRows().get(i).getField(1)), 1e-3);
      assertEquals("c" + (ids.get(i) % 5), r.getMaterializedRows().get(i).getField(2));
    }
    assertTrue(explain(sql).contains("lance_search=[nearest 7 by vec]"), explain(sql));
    // a filter over the results stays Trino's (a search's results are not the table's rows)
    assertEquals(ids.stream().filter(id -> id % 2 == 0).count(), q("SELECT count(*) FROM TABLE(lance.system.vector_search("
        + "table_name => 'items', column_name => 'vec', query_vector => ARRAY[" + String.join(", ", q) + "], k => 7)) WHERE id % 2 = 0")
        .getOnlyValue());
    RuntimeException e = assertThrows(RuntimeException.class, () -> q("SELECT * FROM TABLE(lance.system.vector_search("
        + "table_name => 'items', column_name => 'nope', query_vector => ARRAY[REAL '1'], k => 3))"));
    assertTrue(e.getMessage().contains("no column 'nope'"), e.getMessage());
    RuntimeException dim = assertThrows(RuntimeException.class, () -> q("SELECT * FROM TABLE(lance.system.vector_search("
        + "table_name => 'items', column_name => 'vec', query_vector => ARRAY[REAL '1'], k => 3))"));
    assertTrue(dim.getMessage().toLowerCase().contains("dimension"), dim.getMessage());
  }
  @Test
  void prefilteredSearchesEqualPylance() {
    List<String> q = new ArrayList<>();
    expected.get("nn_query").forEach(x -> q.add("REAL '" + x.asDouble() + "'"));
    // the nearest 7 among the rows of category c2, not the c2 rows among the nearest 7
    String sql = "SELECT id, _distance, category FROM TABLE(lance.system.vector_search(table_name => 'items', "
        + "column_name => 'vec', query_vector => ARRAY[" + String.join(", ", q) + "], k => 7, "
        + "filter => 'category = ''c2''')) ORDER BY _distance, id";
    MaterializedResult r = q(sql);
    assertEquals(7, r.getRowCount());
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < r.getRowCount(); i++) {
      MaterializedRow row = r.getMaterializedRows().get(i);
      ids.add((Long) row.getField(0));
      assertEquals("c2", row.getField(2));
      assertEquals(expected.get("nn_c2_distances").get(i).asDouble(), (Float) row.getField(1), 1e-3);
    }
    assertEquals(expectedIds("nn_c2_ids").stream().sorted().toList(), ids.stream().sorted().toList());
    assertTrue(explain(sql).contains("where category = 'c2'"), explain(sql));
    // full text: the matches among rows with id >= 1500, indexed and appended alike
    MaterializedResult t = q("SELECT id FROM TABLE(lance.system.text_search(table_name => 'docs', "
        + "column_name => 'doc', query_text => 'zebra', k => 1000, filter => 'id >= 1500'))");
    List<Long> textIds = new ArrayList<>();
    for (MaterializedRow row : t.getMaterializedRows()) textIds.add((Long) row.getField(0));
    textIds.sort(null);
    List<Long> want = new ArrayList<>();
    expected.get("docs").get("zebra_late_ids").forEach(n -> want.add(n.asLong()));
    assertEquals(want, textIds);
    assertTrue(!want.isEmpty() && want.get(0) >= 1500, want.toString());
    // a filter that is not Lance SQL, or an empty one, fails the query
    RuntimeException bad = assertThrows(RuntimeException.class, () -> q("SELECT * FROM TABLE(lance.system.vector_search("
        + "table_name => 'items', column_name => 'vec', query_vector => ARRAY[" + String.join(", ", q) + "], k => 3, "
        + "filter => 'no_such_column > 1'))"));
    assertTrue(bad.getMessage().contains("no_such_column"), bad.getMessage());
    RuntimeException empty = assertThrows(RuntimeException.class, () -> q("SELECT * FROM TABLE(lance.system.text_search("
        + "table_name => 'docs', column_name => 'doc', query_text => 'zebra', filter => ' '))"));
    assertTrue(empty.getMessage().contains("filter must be Lance SQL"), empty.getMessage());
  }

  @Test
  void textSearchTableFunctionEqualsPylance() {
    JsonNode want = expected.get("docs");
    // a word in 1 of 97 rows, indexed and appended after the index: every match, pylance's scores
    MaterializedResult r = q("SELECT id, _score FROM TABLE(lance.system.text_search(table_name => 'docs', "
        + "column_name => 'doc', query_text => 'zebra', k => 1000))");
    List<Long> ids = new ArrayList<>();
    List<Double> scores = new ArrayList<>();
    for (MaterializedRow row : r.getMaterializedRows()) {
      ids.add((Long) row.getField(0));
      scores.add(((Float) row.getField(1)).doubleValue());
    }
    ids.sort(null);
    scores.sort(null);
    List<Long> wantIds = new ArrayList<>();
    want.get("zebra_ids").forEach(n -> wantIds.add(n.asLong()));
    assertEquals(wantIds, ids);
    assertEquals(want.get("zebra_count_by_scan").asLong(), ids.size(), "every row holding the word");
    for (int i = 0; i < scores.size(); i++) {
      assertEquals(want.get("zebra_scores").get(i).asDouble(), scores.get(i), 1e-4);
    }
    assertEquals(3L, q("SELECT count(*) FROM TABLE(lance.system.text_search(table_name => 'docs', "
        + "column_name => 'doc', query_text => 'zebra', k => 3))").getOnlyValue());
    RuntimeException e = assertThrows(RuntimeException.class, () -> q("SELECT * FROM TABLE(lance.system.text_search("
        + "table_name => 'docs', column_name => 'doc', query_text => 'zebra', k => 0))"));
    assertTrue(e.getMessage().contains("k must be positive"), e.getMessage());
  }

  @Test
  void textSearchMatchesAnyAllOrThePhraseAsPylanceDoes() {
    JsonNode want = expected.get("docs");
    String call = "SELECT id FROM TABLE(lance.system.text_search(table_name => 'docs', column_name => 'doc', "
        + "query_text => 'stone ember', k => 5000";
    Map<String, String> cases = new java.util.LinkedHashMap<>();
    cases.put("stone_ember_all", ", match => 'all'");
    cases.put("stone_ember_phrase", ", match => 'PHRASE'");
    cases.put("stone_ember_slop1", ", match => 'phrase', slop => 1");
    Map<String, List<Long>> got = new java.util.HashMap<>();
    for (var c : cases.entrySet()) {
      List<Long> wantIds = new ArrayList<>();
      want.get(c.getKey()).forEach(n -> wantIds.add(n.asLong()));
      got.put(c.getKey(), ids(call + c.getValue() + "))"));
      assertEquals(wantIds, got.get(c.getKey()), c.getKey());
    }
    // the three are different row sets (a phrase is rarer than both words, a slop widens it), and
    // `any` (the default) matches more than `all`
    assertTrue(got.get("stone_ember_phrase").size() < got.get("stone_ember_slop1").size()
        && got.get("stone_ember_slop1").size() < got.get("stone_ember_all").size(), got.toString());
    assertTrue(ids(call + "))").size() > got.get("stone_ember_all").size());
    assertTrue(explain(call + ", match => 'phrase', slop => 1))").contains("matching the phrase (slop 1) stone ember"),
        explain(call + ", match => 'phrase', slop => 1))"));
    for (String[] bad : new String[][] {{", match => 'near'", "match must be 'any', 'all' or 'phrase'"},
        {", match => 'phrase', slop => -1", "slop must be between 0"},
        {", slop => 2", "slop applies to match => 'phrase' only"},
        {", match => CAST(NULL AS VARCHAR)", "MATCH is NULL"},
        {", match => 'phrase', slop => CAST(NULL AS BIGINT)", "SLOP is NULL"}}) {
      RuntimeException e = assertThrows(RuntimeException.class, () -> q(call + bad[0] + "))"));
      assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
    }
  }

  @Test
  void theReadmeCatalogFileWorksAsWritten() throws Exception {
    String readme = java.nio.file.Files.readString(Path.of(System.getProperty("lancehost.test.root"), "README.md"));
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?ms)^```properties\\n(.*?)^```$").matcher(readme);
    assertTrue(m.find(), "the README shows a catalog properties file");
    java.util.Properties p = new java.util.Properties();
    p.load(new java.io.StringReader(m.group(1)));
    Map<String, String> props = new java.util.HashMap<>();
    p.stringPropertyNames().forEach(k -> props.put(k, p.getProperty(k)));
    String connector = props.remove("connector.name");
    // the README's warehouse is /data/warehouse; the test's is the fixtures'
    assertEquals("/data/warehouse", props.put("lance.root",
        Path.of(System.getProperty("lancehost.test.fixtures"), "warehouse").toString()));
    trino.createCatalog("readme", connector, props);
    assertEquals(expected.get("count").asLong(), q("SELECT count(*) FROM readme.default.items").getOnlyValue());
  }

  /**
   * Issue 61: CREATE TABLE makes an empty table pylance reads with the Lance type of each Trino
   * type, INSERT fills it, Trino reads back what it wrote; CREATE/DROP SCHEMA and DROP TABLE; what
   * cannot be created is refused naming it, with nothing created.
   */
  @Test
  void createTableInsertAndDropThroughDdl() throws Exception {
    q("DROP TABLE IF EXISTS created"); // what an earlier run in this build's warehouse may have left
    q("DROP SCHEMA IF EXISTS extra CASCADE");
    q("CREATE TABLE created (id BIGINT, n INTEGER, s SMALLINT, t TINYINT, r REAL, d DOUBLE, b BOOLEAN, v VARCHAR(10), "
        + "bin VARBINARY, day DATE, ts TIMESTAMP(6), tsm TIMESTAMP(3), price DECIMAL(12, 2))");
    JsonNode made = pylance("created", "{'version': ds.version, 'count': len(t), "
        + "'types': {f.name: str(f.type) for f in ds.schema}}");
    assertEquals(0, made.get("count").asLong());
    Map<String, String> want = new java.util.LinkedHashMap<>();
    String[][] types = {{"id", "int64"}, {"n", "int32"}, {"s", "int16"}, {"t", "int8"}, {"r", "float"}, {"d", "double"},
        {"b", "bool"}, {"v", "string"}, {"bin", "binary"}, {"day", "date32[day]"}, {"ts", "timestamp[us]"},
        {"tsm", "timestamp[ms]"}, {"price", "decimal128(12, 2)"}};
    for (String[] t : types) want.put(t[0], t[1]);
    Map<String, String> got = new java.util.LinkedHashMap<>();
    made.get("types").fields().forEachRemaining(e -> got.put(e.getKey(), e.getValue().asText()));
    assertEquals(want, got);

    String rows = "(BIGINT '1', -2147483648, SMALLINT '-32768', TINYINT '127', REAL '-0.0', DOUBLE '1e300', true, "
        + "'é中', X'00ff', DATE '1969-12-31', TIMESTAMP '2024-01-02 03:04:05.123456', "
        + "TIMESTAMP '1970-01-01 00:00:00.001', DECIMAL '-9999999999.99'), "
        + "(BIGINT '2', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";
    assertEquals(2L, ((Number) q("INSERT INTO created VALUES " + rows).getOnlyValue()).longValue());
    assertEquals(0L, q("SELECT count(*) FROM ((VALUES " + rows + ") EXCEPT (SELECT * FROM created))").getOnlyValue());
    JsonNode py = pylance("created", "{'version': ds.version, 'count': len(t), 'one': {k: str(v) for k, v in "
        + "next(r for r in t if r['id'] == 1).items()}, 'nulls': sum(v is None for v in next(r for r in t if r['id'] == 2).values())}");
    assertEquals(made.get("version").asLong() + 1, py.get("version").asLong());
    assertEquals(2, py.get("count").asLong());
    assertEquals(12, py.get("nulls").asLong());
    JsonNode one = py.get("one");
    assertEquals("-2147483648", one.get("n").asText());
    assertEquals("é中", one.get("v").asText());
    assertEquals("b'\\x00\\xff'", one.get("bin").asText());
    assertEquals("1969-12-31", one.get("day").asText());
    assertEquals("2024-01-02 03:04:05.123456", one.get("ts").asText());
    assertEquals("1970-01-01 00:00:00.001000", one.get("tsm").asText());
    assertEquals("-9999999999.99", one.get("price").asText());

    // IF NOT EXISTS leaves the table as it is; without it, an existing table is an error
    q("CREATE TABLE IF NOT EXISTS created (x BIGINT)");
    assertEquals(py.get("version").asLong(), pylance("created", "{'version': ds.version}").get("version").asLong());
    RuntimeException exists = assertThrows(RuntimeException.class, () -> q("CREATE TABLE created (x BIGINT)"));
    assertTrue(exists.getMessage().contains("already exists"), exists.getMessage());
    // a type lance_host cannot create is refused naming the column; nothing is created
    for (String bad : List.of("c CHAR(3)", "a ARRAY(REAL)", "z TIMESTAMP(3) WITH TIME ZONE", "m MAP(BIGINT, BIGINT)")) {
      RuntimeException e = assertThrows(RuntimeException.class, () -> q("CREATE TABLE refused (id BIGINT, " + bad + ")"));
      assertTrue(e.getMessage().contains("column '" + bad.split(" ")[0] + "'"), e.getMessage());
    }
    assertFalse(q("SHOW TABLES").getOnlyColumnAsSet().contains("refused"));

    q("DROP TABLE created");
    assertFalse(q("SHOW TABLES").getOnlyColumnAsSet().contains("created"));
    assertThrows(RuntimeException.class, () -> q("SELECT * FROM created"));

    // schemas are namespaces under the root
    q("CREATE SCHEMA extra");
    assertTrue(q("SHOW SCHEMAS").getOnlyColumnAsSet().contains("extra"));
    q("CREATE TABLE extra.t2 (id BIGINT, name VARCHAR)");
    q("INSERT INTO extra.t2 VALUES (5, 'five'), (6, NULL)");
    assertEquals(List.of(5L, 6L), ids("SELECT id FROM extra.t2"));
    RuntimeException notEmpty = assertThrows(RuntimeException.class, () -> q("DROP SCHEMA extra"));
    assertTrue(notEmpty.getMessage().contains("non-empty") || notEmpty.getMessage().contains("not empty"), notEmpty.getMessage());
    q("DROP SCHEMA extra CASCADE");
    assertFalse(q("SHOW SCHEMAS").getOnlyColumnAsSet().contains("extra"));
    assertThrows(RuntimeException.class, () -> q("CREATE SCHEMA \"default\""));
    assertThrows(RuntimeException.class, () -> q("DROP SCHEMA \"default\""));
  }

  /**
   * Issue 61: DELETE and UPDATE whose predicate does not push, and MERGE, run through Trino's
   * merge API: tasks stage the deleted rows' _rowaddr and the inserted rows at the pinned version,
   * the coordinator commits them as one version per statement. pylance reads the result, equal to
   * the rows the statements make of the rows the test wrote.
   */
  @Test
  void mergeUpdateAndDeleteRowByRowCommitOneVersionEach() throws Exception {
    q("DROP TABLE IF EXISTS merged");
    q("CREATE TABLE merged (id BIGINT, name VARCHAR, qty INTEGER, price DECIMAL(10, 2))");
    q("INSERT INTO merged SELECT id, 'n' || CAST(id AS VARCHAR), CAST(id % 10 AS INTEGER), "
        + "CAST(CAST(id AS DECIMAL(10, 2)) / 4 AS DECIMAL(10, 2)) FROM UNNEST(sequence(0, 299)) AS r(id)");
    long v0 = pylance("merged", "{'version': ds.version}").get("version").asLong();
    // the expected rows, from the rows written
    Map<Long, List<String>> want = new java.util.TreeMap<>();
    for (long id = 0; id < 300; id++) {
      want.put(id, List.of("n" + id, Long.toString(id % 10), new BigDecimal(id).divide(new BigDecimal(4))
          .setScale(2, java.math.RoundingMode.HALF_UP).toPlainString()));
    }

    assertEquals(30L, ((Number) q("DELETE FROM merged WHERE qty * 2 = 6").getOnlyValue()).longValue());
    want.values().removeIf(r -> r.get(1).equals("3"));
    assertEquals(v0 + 1, pylance("merged", "{'version': ds.version}").get("version").asLong(), "one version");

    long updated = want.keySet().stream().filter(id -> id % 7 == 0).count();
    assertEquals(updated, ((Number) q("UPDATE merged SET name = name || '!', price = price + 1 WHERE id % 7 = 0")
        .getOnlyValue()).longValue());
    for (Map.Entry<Long, List<String>> e : want.entrySet()) {
      if (e.getKey() % 7 != 0) continue;
      List<String> r = e.getValue();
      e.setValue(List.of(r.get(0) + "!", r.get(1), new BigDecimal(r.get(2)).add(BigDecimal.ONE).toPlainString()));
    }

    q("MERGE INTO merged t USING (VALUES (BIGINT '5', 'five'), (BIGINT '12', 'gone'), (BIGINT '1000', 'new')) "
        + "AS s(id, name) ON t.id = s.id "
        + "WHEN MATCHED AND s.name = 'gone' THEN DELETE "
        + "WHEN MATCHED THEN UPDATE SET name = s.name "
        + "WHEN NOT MATCHED THEN INSERT (id, name, qty, price) VALUES (s.id, s.name, 0, 0)");
    want.put(5L, List.of("five", want.get(5L).get(1), want.get(5L).get(2)));
    want.remove(12L);
    want.put(1000L, List.of("new", "0", "0.00"));

    JsonNode py = pylance("merged", "{'version': ds.version, 'rows': sorted([r['id'], r['name'], str(r['qty']), "
        + "str(r['price'])] for r in t)}");
    assertEquals(v0 + 3, py.get("version").asLong(), "one version per statement");
    List<List<String>> got = new ArrayList<>();
    py.get("rows").forEach(r -> got.add(List.of(r.get(0).asText(), r.get(1).asText(), r.get(2).asText(), r.get(3).asText())));
    List<List<String>> expectedRows = new ArrayList<>();
    want.forEach((id, r) -> expectedRows.add(List.of(Long.toString(id), r.get(0), r.get(1), r.get(2))));
    assertEquals(expectedRows, got);
    assertEquals((long) want.size(), q("SELECT count(*) FROM merged").getOnlyValue());
    q("DROP TABLE merged");
  }

  /**
   * CREATE TABLE AS: the table is created (version 1) and the query's rows committed into it as one
   * more version, pylance reading them; a CTAS that fails at run time leaves no table; one with a
   * column type lance_host cannot create is refused before anything is made.
   */
  @Test
  void createTableAsSelectCommitsTheRowsAndAFailedOneLeavesNoTable() throws Exception {
    q("DROP TABLE IF EXISTS ctas");
    JsonNode want = expected.get("insert_lt_500");
    assertEquals(want.get("count").asLong(), ((Number) q("CREATE TABLE ctas AS SELECT id, name, price, day, ts FROM items "
        + "WHERE id < 500").getOnlyValue()).longValue());
    JsonNode py = pylance("ctas", "{'version': ds.version, 'count': len(t), 'sum_id': sum(r['id'] for r in t), "
        + "'sum_price': str(sum((r['price'] for r in t), decimal.Decimal('0.00'))), "
        + "'names_null': sum(1 for r in t if r['name'] is None), 'types': [str(f.type) for f in ds.schema]}");
    assertEquals(2, py.get("version").asLong(), "created, then the rows: two versions");
    assertEquals(want.get("count").asLong(), py.get("count").asLong());
    assertEquals(want.get("sum_id").asLong(), py.get("sum_id").asLong());
    assertEquals(new BigDecimal(want.get("sum_price").asText()), new BigDecimal(py.get("sum_price").asText()));
    assertEquals(want.get("names_null").asLong(), py.get("names_null").asLong());
    assertEquals(0L, q("SELECT count(*) FROM ((SELECT id, name, price, day, ts FROM items WHERE id < 500) "
        + "EXCEPT (SELECT * FROM ctas))").getOnlyValue());

    // fails on the workers after the table was created: the table is dropped again
    RuntimeException e = assertThrows(RuntimeException.class,
        () -> q("CREATE TABLE ctas_failed AS SELECT id, 100 / (id - 250) AS x FROM items"));
    assertTrue(e.getMessage().toLowerCase().contains("division by zero"), e.getMessage());
    assertFalse(q("SHOW TABLES").getOnlyColumnAsSet().contains("ctas_failed"));
    assertFalse(java.nio.file.Files.exists(Path.of(System.getProperty("lancehost.test.fixtures"), "warehouse",
        "ctas_failed.lance")), "nothing of the failed table remains");
    // a type that cannot be created: refused before anything is made
    RuntimeException refused = assertThrows(RuntimeException.class,
        () -> q("CREATE TABLE ctas_vec AS SELECT id, vec FROM items"));
    assertTrue(refused.getMessage().contains("column 'vec'") && refused.getMessage().contains("vector_columns"),
        refused.getMessage());
    assertFalse(q("SHOW TABLES").getOnlyColumnAsSet().contains("ctas_vec"));
    q("DROP TABLE ctas");
  }
  /**
   * CREATE TABLE AS of a vector column keeps it a vector when the table property
   * {@code vector_columns} gives its length: pylance reads a fixed-size list of the same floats,
   * and the new table is searchable; bad lengths and names are refused before anything is made.
   */
  @Test
  void createTableAsSelectKeepsVectorColumnsNamedInVectorColumns() throws Exception {
    q("DROP TABLE IF EXISTS ctas_vectors");
    long n = ((Number) q("SELECT count(*) FROM items WHERE id < 100").getOnlyValue()).longValue();
    assertTrue(n > 50, "rows: " + n);
    assertEquals(n, ((Number) q("CREATE TABLE ctas_vectors WITH (vector_columns = 'vec:4') AS "
        + "SELECT id, vec FROM items WHERE id < 100").getOnlyValue()).longValue());
    JsonNode py = pylance("ctas_vectors", "{'types': [str(f.type) for f in ds.schema], 'rows': len(t), "
        + "'same': all(r['vec'] == [r['id'] + k / 8 for k in range(4)] for r in t)}");
    assertEquals("fixed_size_list<item: float>[4]", py.get("types").get(1).asText(), py.toString());
    assertEquals(n, py.get("rows").asLong());
    assertTrue(py.get("same").asBoolean(), py.toString());
    // searchable: the nearest row to the vector of id 42 is id 42
    assertEquals(42L, q("SELECT id FROM TABLE(lance.system.vector_search(table_name => 'ctas_vectors', "
        + "column_name => 'vec', query_vector => ARRAY[REAL '42', REAL '42.125', REAL '42.25', REAL '42.375'], k => 1))")
        .getOnlyValue());
    q("DROP TABLE ctas_vectors");
    // CREATE TABLE with the property: an empty table whose column is a vector of doubles
    q("CREATE TABLE made_vectors (id BIGINT, v ARRAY(DOUBLE)) WITH (vector_columns = 'v:3')");
    q("INSERT INTO made_vectors VALUES (1, ARRAY[1.0, 2.0, 3.0])");
    assertEquals("fixed_size_list<item: double>[3]",
        pylance("made_vectors", "{'types': [str(f.type) for f in ds.schema]}").get("types").get(1).asText());
    RuntimeException wrongLength = assertThrows(RuntimeException.class,
        () -> q("INSERT INTO made_vectors VALUES (2, ARRAY[1.0, 2.0])"));
    assertTrue(wrongLength.getMessage().contains("length") || wrongLength.getMessage().contains("3"), wrongLength.getMessage());
    q("DROP TABLE made_vectors");
    // refused before anything is made: a length that is not positive, a name that is no column,
    // a column that is not an array of floats, and a vector without a length
    for (String[] bad : new String[][] {{"vec:0", "positive length"}, {"nope:4", "not a column"},
        {"id:4", "ARRAY(REAL) or ARRAY(DOUBLE)"}, {"vec", "name:length"}}) {
      RuntimeException e = assertThrows(RuntimeException.class, () -> q("CREATE TABLE ctas_bad WITH (vector_columns = '"
          + bad[0] + "') AS SELECT id, vec FROM items"));
      assertTrue(e.getMessage().contains(bad[1]), bad[0] + ": " + e.getMessage());
      assertFalse(q("SHOW TABLES").getOnlyColumnAsSet().contains("ctas_bad"));
    }
  }

  @Test
  void unknownTablesAndBadCatalogProperties() {
    RuntimeException e = assertThrows(RuntimeException.class, () -> q("SELECT * FROM nope"));
    assertTrue(e.getMessage().contains("nope"), e.getMessage());
    RuntimeException bad = assertThrows(RuntimeException.class,
        () -> trino.createCatalog("bad", "lance_host", Map.of("root", "/x")));
    assertTrue(bad.getMessage().contains("prefix 'lance.'") || String.valueOf(bad.getCause()).contains("prefix 'lance.'"),
        bad.toString());
  }
}
