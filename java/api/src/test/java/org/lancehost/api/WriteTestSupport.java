package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** pylance, another reader, on tables the Java tests wrote. */
public final class WriteTestSupport {
  private WriteTestSupport() {}

  /** Runs a Python snippet with arguments and parses the JSON it prints (its stderr in the failure). */
  public static JsonNode python(String code, String... args) throws Exception {
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("python3", "-c", code));
    cmd.addAll(java.util.List.of(args));
    java.io.File err = java.io.File.createTempFile("pylance-", ".err");
    try {
      Process p = new ProcessBuilder(cmd).redirectError(err).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(120, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), java.nio.file.Files.readString(err.toPath()));
      return new ObjectMapper().readTree(out);
    } finally {
      err.delete();
    }
  }

  /** What pylance reads: version, rows, sum(id), nulls in name, sum of vec[1]. */
  public static JsonNode pylance(Path uri) throws Exception {
    String code = "import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "t = ds.to_table()\n"
        + "ids = t['id'].to_pylist()\n"
        + "print(json.dumps({'version': ds.version, 'rows': t.num_rows, 'sum_id': sum(ids), 'distinct': len(set(ids)),"
        + " 'null_names': t['name'].null_count, 'names_ok': all(n == ('n%d' % i) for i, n in zip(ids, t['name'].to_pylist()) if n is not None),"
        + " 'sum_vec1': sum(v[1] for v in t['vec'].to_pylist()), 'type': str(t.schema.field('vec').type)}))\n";
    return python(code, uri.toString());
  }


  /** What pylance reads: {"version": v, "rows": [[id, name], ...]} ordered by id. */
  public static JsonNode pylanceRows(Path uri) throws Exception {
    String code = "import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "t = ds.to_table(columns=['id', 'name']).sort_by('id')\n"
        + "print(json.dumps({'version': ds.version, 'rows': [list(r) for r in zip(t['id'].to_pylist(), t['name'].to_pylist())]}))\n";
    return python(code, uri.toString());
  }

  /** The _rowaddr pylance reads for the row with this id. */
  public static JsonNode pylanceRowAddress(Path uri, long id) throws Exception {
    String code = "import json, sys, lance\n"
        + "t = lance.dataset(sys.argv[1]).to_table(columns=['id'], filter='id = ' + sys.argv[2], with_row_address=True)\n"
        + "print(json.dumps(t['_rowaddr'][0].as_py()))\n";
    return python(code, uri.toString(), Long.toString(id));
  }

  /** Files in a table's data directory (staged and committed alike). */
  public static long dataFiles(Path uri) throws Exception {
    Path data = uri.resolve("data");
    if (!java.nio.file.Files.isDirectory(data)) return 0;
    try (java.util.stream.Stream<Path> s = java.nio.file.Files.list(data)) {
      return s.count();
    }
  }
}
