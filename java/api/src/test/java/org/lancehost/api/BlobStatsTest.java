package org.lancehost.api;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.lancehost.Blobs;
import org.lancehost.Dataset;
import org.lancehost.LanceException;

/** Statistics and blobs from Java against pylance's view of the same tables. */
class BlobStatsTest {
  @Test
  void fragmentStatisticsArePylances() {
    JsonNode b = Fixtures.expected().get("basic");
    try (Dataset ds = Dataset.open(b.get("uri").asText())) {
      Dataset.Statistics st = ds.statistics();
      assertEquals(b.get("fragments").size(), st.fragments.size());
      for (int i = 0; i < st.fragments.size(); i++) {
        JsonNode w = b.get("fragments").get(i);
        long[] f = st.fragments.get(i);
        assertEquals(w.get(0).asLong(), f[0]);
        assertEquals(w.get(1).asLong(), f[1]);
        assertEquals(w.get(2).asLong(), f[2]);
        // the records say the same
        Dataset.FragmentStats r = st.fragmentStats.get(i);
        assertEquals(w.get(0).asLong(), r.id());
        assertEquals(w.get(1).asLong(), r.physicalRows());
        assertEquals(w.get(2).asLong(), r.deletedRows());
        assertEquals(f[3], r.bytesOnDisk());
        assertTrue(r.bytesOnDisk() > 0, r.toString());
      }
      assertTrue(st.columnBytes.containsKey("vec"), st.columnBytes.toString());
    }
  }

  @Test
  void blobBytesArePylancesAndRangeReadsCut() throws Exception {
    JsonNode b = Fixtures.expected().get("blobs");
    long[] rowIds = new long[b.get("row_ids").size()];
    for (int i = 0; i < rowIds.length; i++) rowIds[i] = b.get("row_ids").get(i).asLong();
    try (Dataset ds = Dataset.open(b.get("uri").asText()); Blobs blobs = ds.takeBlobs("blob", rowIds)) {
      assertEquals(rowIds.length, blobs.count());
      for (int i = 0; i < rowIds.length; i++) {
        Blobs.Info info = blobs.info(i);
        assertEquals(rowIds[i], info.rowId);
        assertEquals(b.get("sizes").get(i).asLong(), info.size);
        byte[] all = blobs.readAll(i);
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(all));
        assertEquals(b.get("sha256").get(i).asText(), sha, "blob " + i);
        byte[] part = blobs.read(i, 10, 20);
        assertArrayEquals(java.util.Arrays.copyOfRange(all, 10, 30), part);
      }
      assertThrows(LanceException.class, () -> blobs.info(rowIds.length), "an index past the set");
      assertThrows(LanceException.InvalidArgument.class, () -> ds.takeBlobs("id", rowIds), "not a blob column");
      Blobs closed = ds.takeBlobs("blob", rowIds);
      closed.close();
      assertThrows(LanceException.InvalidArgument.class, closed::count, "a closed blob set");
    }
  }
}
