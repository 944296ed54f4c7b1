package org.lancehost.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;

/** The tables java/tests/fixtures.py wrote with pylance, and pylance's answers about them. */
public final class Fixtures {
  private Fixtures() {}

  private static JsonNode expected;

  public static Path root() {
    String dir = System.getProperty("lancehost.test.fixtures");
    if (dir == null) throw new IllegalStateException("set -Dlancehost.test.fixtures (java/tests/fixtures.py output)");
    return Paths.get(dir);
  }

  public static synchronized JsonNode expected() {
    if (expected == null) {
      try {
        expected = new ObjectMapper().readTree(root().resolve("expected.json").toFile());
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }
    return expected;
  }
}
