package org.lancehost;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.lancehost.api.Fixtures;

/**
 * The library's log records reach SLF4J: the tests' provider (slf4j-simple, configured by the
 * pom) writes the logger org.lancehost.native at debug into a file this test reads.
 */
class LibraryLogTest {
  static String logged() throws Exception {
    Path file = Paths.get(System.getProperty("org.slf4j.simpleLogger.logFile"));
    return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
  }

  @Test
  void recordsOfAScanArriveAsSlf4jRecordsAtTheConfiguredLevel() throws Exception {
    assertEquals(4, LibraryLog.configuredLevel(), "the pom enables debug for org.lancehost.native");
    String uri = Fixtures.expected().get("basic").get("uri").asText();
    int before = logged().length();
    // Records come from this thread and from the library's own (attached to the JVM)
    try (RootAllocator allocator = new RootAllocator(); Dataset ds = Dataset.open(uri);
         ArrowStream s = ds.scan(ScanOptions.all().columns("id"), allocator)) {
      for (VectorSchemaRoot b = s.next(); b != null; b = s.next()) b.close();
    }
    String after = logged().substring(before);
    List<String> lines = after.lines().filter(l -> l.contains(" org.lancehost.native.")).toList();
    assertFalse(lines.isEmpty(), "no record of the library reached SLF4J: " + after);
    assertTrue(lines.stream().anyMatch(l -> l.contains("DEBUG") && l.contains("org.lancehost.native.lance")), lines.toString());

    // off: nothing more arrives; back at warn: debug records stay out
    LibraryLog.setLevel("off");
    int mark = logged().length();
    try (Dataset ds = Dataset.open(uri)) {
      assertTrue(ds.countRows() > 0);
    }
    assertTrue(logged().substring(mark).lines().noneMatch(l -> l.contains(" org.lancehost.native.")), "records after off");
    LibraryLog.setLevel("warn");
    mark = logged().length();
    try (Dataset ds = Dataset.open(uri)) {
      assertTrue(ds.countRows() > 0);
    }
    assertFalse(logged().substring(mark).contains("DEBUG org.lancehost.native"), "debug records after setLevel(warn)");
    assertThrows(IllegalArgumentException.class, () -> LibraryLog.setLevel("loud"));
    LibraryLog.setLevel("debug");
  }
}
