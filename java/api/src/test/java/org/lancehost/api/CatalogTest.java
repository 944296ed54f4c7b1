package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.lancehost.Catalog;
import org.lancehost.Dataset;
import org.lancehost.LanceException;

/** The directory catalog from Java, over the warehouse pylance wrote. */
class CatalogTest {
  @Test
  void listsDescribesOpensAndManagesNamespaces() throws Exception {
    Path root = Fixtures.root().resolve("tables");
    try (Catalog cat = Catalog.open(Map.of("root", root.toString()))) {
      List<String> want = new ArrayList<>();
      Fixtures.expected().get("tables").forEach(n -> want.add(n.asText()));
      assertEquals(want, cat.listTables(List.of()));
      Catalog.TableInfo info = cat.describeTable(List.of(), "basic");
      assertTrue(info.location.endsWith("basic.lance"), info.location);
      assertEquals(Fixtures.expected().get("basic").get("version").asLong(), info.latestVersion);
      try (Dataset ds = cat.openTable(List.of(), "basic", 1)) {
        assertEquals(Fixtures.expected().get("basic").get("count_v1").asLong(), ds.countRows());
      }
      assertThrows(LanceException.NotFound.class, () -> cat.describeTable(List.of(), "nope"));
      cat.createNamespace(List.of("java_ns"), false, null);
      cat.createNamespace(List.of("java_ns", "inner"), false, null);
      assertTrue(cat.listNamespaces(List.of(), false).contains(List.of("java_ns")));
      assertEquals(List.of(List.of("java_ns", "inner")), cat.listNamespaces(List.of("java_ns"), false));
      assertThrows(LanceException.class, () -> cat.createNamespace(List.of("java_ns"), false, null), "exists");
      cat.createNamespace(List.of("java_ns"), true, null); // exist_ok
      assertThrows(LanceException.class, () -> cat.dropNamespace(List.of("java_ns"), false, false), "not empty");
      cat.dropNamespace(List.of("java_ns"), true, false);
      assertFalse(cat.listNamespaces(List.of(), false).contains(List.of("java_ns")));
    }
    LanceException e = assertThrows(LanceException.InvalidArgument.class, () -> Catalog.open(Map.of("rooot", "/x")));
    assertTrue(e.getMessage().contains("rooot"), e.getMessage());
    Catalog closed = Catalog.open(Map.of("root", root.toString()));
    closed.close();
    assertThrows(LanceException.InvalidArgument.class, () -> closed.listTables(List.of()));
  }
}
