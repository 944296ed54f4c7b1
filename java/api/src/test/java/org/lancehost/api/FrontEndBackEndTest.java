package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.lancehost.Dataset;
import org.lancehost.Split;
import org.lancehost.SplitPlan;
import org.lancehost.VectorQuery;

/**
 * The seed's front end / back end split: a Java planner pins a snapshot and plans a vector
 * search; a C process (java/tests/split_worker.c) executes the split bytes it is handed and
 * merges; the answer equals pylance's exact search.
 */
class FrontEndBackEndTest {
  @Test
  void aJavaPlannerAndACWorkerAnswerAsPylance() throws Exception {
    JsonNode t = Fixtures.expected().get("indexed");
    Path dir = Files.createTempDirectory("lance-host-fe-be");
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("lancehost.test.worker"));
    try (Dataset fe = Dataset.open(t.get("uri").asText())) {
      SplitPlan plan = fe.planVectorSearch("vec", VectorQuery.METRIC_DEFAULT, true, 0);
      assertEquals(t.get("index_names").get(0).asText(), plan.indexName());
      Path token = dir.resolve("snapshot");
      Files.write(token, fe.snapshot());
      float[] q = ApiTest.vector(t.get("query"));
      ByteBuffer b = ByteBuffer.allocate(4 * q.length).order(ByteOrder.LITTLE_ENDIAN);
      for (float x : q) b.putFloat(x);
      Path query = dir.resolve("query");
      Files.write(query, b.array());
      cmd.add(token.toString());
      cmd.add(query.toString());
      cmd.add("10");
      boolean segment = false;
      for (int i = 0; i < plan.splits().size(); i++) {
        byte[] split = plan.splits().get(i);
        segment |= Split.info(split).kind() == Split.INDEX_SEGMENT;
        Path p = dir.resolve("split-" + i);
        Files.write(p, split);
        cmd.add(p.toString());
      }
      assertTrue(segment, "the plan has index segment splits");
    }
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try {
      check(t, p);
    } finally {
      try (var files = Files.list(dir)) {
        for (Path f : files.toList()) Files.delete(f);
      }
      Files.delete(dir);
    }
  }

  private static void check(JsonNode t, Process p) throws Exception {
    List<String> lines = new ArrayList<>();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) lines.add(line);
    }
    assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the worker finished");
    assertEquals(0, p.exitValue(), String.join("\n", lines));
    assertEquals(t.get("nn_ids").size(), lines.size(), String.join("\n", lines));
    for (int i = 0; i < lines.size(); i++) {
      String[] f = lines.get(i).trim().split(" ");
      assertEquals(t.get("nn_ids").get(i).asLong(), Long.parseLong(f[0]), "rank " + i);
      double want = t.get("nn_distances").get(i).asDouble();
      assertEquals(want, Double.parseDouble(f[1]), 1e-4 * Math.max(1, want));
    }
  }
}
