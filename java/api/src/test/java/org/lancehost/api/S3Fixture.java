package org.lancehost.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A moto S3 server with one table pylance wrote (java/tests/s3_fixture.py), for tests that need
 * object-store requests; stopped by {@link #close()}.
 */
public final class S3Fixture implements AutoCloseable {
  private final Process process;
  public final String uri;
  public final Map<String, String> options = new HashMap<>();
  public final long count;
  public final long sumId;

  public S3Fixture() throws IOException {
    String script = Paths.get(System.getProperty("lancehost.test.root"), "java", "tests", "s3_fixture.py").toString();
    process = new ProcessBuilder(System.getProperty("lancehost.test.python", "python3"), script)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (line == null) {
      process.destroy();
      throw new IOException("s3_fixture.py ended without a table (its errors are above)");
    }
    JsonNode j = new ObjectMapper().readTree(line);
    uri = j.get("uri").asText();
    j.get("options").fields().forEachRemaining(e -> options.put(e.getKey(), e.getValue().asText()));
    count = j.get("count").asLong();
    sumId = j.get("sum_id").asLong();
  }

  @Override
  public void close() throws Exception {
    process.getOutputStream().close(); // the script stops its server when its stdin closes
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }
  }
}
