package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.LanceException;
import org.lancehost.Maintenance;
import org.lancehost.ScanOptions;
import org.lancehost.Split;
import org.lancehost.SplitPlan;

/** Compaction, cleanup, tags and combined splits, with pylance as the other reader. */
class MaintenanceTest {
  /** pylance writes six 500-row fragments and deletes some rows: seven versions. */
  static JsonNode write(Path uri) throws Exception {
    String code = "import json, sys, lance, pyarrow as pa\n"
        + "uri = sys.argv[1]\n"
        + "for f in range(6):\n"
        + "    t = pa.table({'id': pa.array(range(f * 500, f * 500 + 500), pa.int64())})\n"
        + "    lance.write_dataset(t, uri, mode='append' if f else 'create')\n"
        + "ds = lance.dataset(uri)\n"
        + "ds.delete('id % 10 = 3')\n"
        + "ds = lance.dataset(uri)\n"
        + "ids = ds.to_table()['id'].to_pylist()\n"
        + "print(json.dumps({'version': ds.version, 'rows': len(ids), 'sum_id': sum(ids),"
        + " 'fragments': len(ds.get_fragments())}))\n";
    return WriteTestSupport.python(code, uri.toString());
  }

  static JsonNode pylance(Path uri) throws Exception {
    String code = "import json, sys, lance\n"
        + "ds = lance.dataset(sys.argv[1])\n"
        + "ids = ds.to_table()['id'].to_pylist()\n"
        + "print(json.dumps({'version': ds.version, 'rows': len(ids), 'sum_id': sum(ids),"
        + " 'fragments': len(ds.get_fragments()), 'versions': [v['version'] for v in ds.versions()],"
        + " 'tags': {k: v['version'] for k, v in ds.tags.list().items()}}))\n";
    return WriteTestSupport.python(code, uri.toString());
  }

  static long rows(Dataset ds, byte[] split) {
    long n = 0;
    try (RootAllocator a = new RootAllocator(); ArrowStream s = ds.scan(split, ScanOptions.all().columns("id"), a)) {
      for (VectorSchemaRoot b = s.next(); b != null; b = s.next()) {
        n += b.getRowCount();
        b.close();
      }
    }
    return n;
  }

  @Test
  void compactTagCleanUpAndCombineAsPylanceSees(@TempDir Path dir) throws Exception {
    Path uri = dir.resolve("t.lance");
    JsonNode before = write(uri);
    assertEquals(6, before.get("fragments").asInt());
    long v0 = before.get("version").asLong();
    try (Dataset ds = Dataset.open(uri.toString())) {
      // combined splits: one split over the six fragments returns every row once
      SplitPlan plan = ds.planScan(1);
      assertEquals(6, plan.splits().size());
      byte[] all = Split.combine(plan.splits());
      assertEquals(before.get("rows").asLong(), rows(ds, all));
      assertEquals(before.get("rows").asLong(), Split.info(all).rowCount());
      assertThrows(LanceException.InvalidArgument.class, () -> Split.combine(List.of()));
      assertThrows(LanceException.class, () -> Split.combine(List.of(all, new byte[] {1, 2, 3})));

      ds.createTag("before-compaction", 0);
      ds.createTag("first", 1);
      assertThrows(LanceException.class, () -> ds.createTag("first", 2), "a name already taken");
      assertThrows(LanceException.NotFound.class, () -> ds.createTag("nowhere", 999));

      Maintenance.CompactResult r = ds.compact(Maintenance.CompactOptions.defaults());
      // Lance commits a reservation of fragment ids first, then the rewrite (pylance's
      // compact_files too): the rewrite is the latest version
      assertTrue(r.version() > v0, r.toString());
      assertEquals(6, r.fragmentsRemoved());
      assertEquals(1, r.fragmentsAdded());
      assertEquals(v0, ds.version(), "the handle keeps its version");
      JsonNode after = pylance(uri);
      assertEquals(r.version(), after.get("version").asLong());
      assertEquals(1, after.get("fragments").asInt());
      assertEquals(before.get("rows").asLong(), after.get("rows").asLong());
      assertEquals(before.get("sum_id").asLong(), after.get("sum_id").asLong());
      assertEquals(v0, after.get("tags").get("before-compaction").asLong());
      assertEquals(1, after.get("tags").get("first").asLong());
      List<String> names = new ArrayList<>();
      for (Maintenance.Tag t : ds.tags()) names.add(t.name() + "=" + t.version());
      assertEquals(List.of("before-compaction=" + v0, "first=1"), names);
      // nothing left to compact: nothing committed
      try (Dataset latest = Dataset.open(uri.toString())) {
        assertEquals(r.version(), latest.compact(Maintenance.CompactOptions.defaults()).version());
        assertThrows(LanceException.InvalidArgument.class,
            () -> latest.compact(Maintenance.CompactOptions.defaults().deletionThreshold(2f)));

        // cleanup of everything older than now: tagged and latest versions stay
        latest.deleteTag("before-compaction");
        assertThrows(LanceException.NotFound.class, () -> latest.deleteTag("before-compaction"));
        Maintenance.CleanupResult c = latest.cleanup(Duration.ZERO, false);
        JsonNode cleaned = pylance(uri);
        List<Long> versions = new ArrayList<>();
        cleaned.get("versions").forEach(v -> versions.add(v.asLong()));
        assertEquals(List.of(1L, r.version()), versions, "the tagged first version and the latest remain");
        assertEquals(r.version() - 2, c.versionsRemoved(), "every version but the first and the latest");
        assertTrue(c.bytesRemoved() > 0, c.toString());
        assertEquals(before.get("sum_id").asLong(), cleaned.get("sum_id").asLong());
        try (Dataset first = Dataset.openTag(uri.toString(), java.util.Map.of(), "first")) {
          assertEquals(500, first.countRows());
        }
        assertThrows(LanceException.InvalidArgument.class, () -> latest.cleanup(Duration.ofMillis(-1), false));
      }
    }
  }
}
