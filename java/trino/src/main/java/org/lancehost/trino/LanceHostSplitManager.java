package org.lancehost.trino;

import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplit;
import io.trino.spi.connector.ConnectorSplitManager;
import io.trino.spi.connector.ConnectorSplitSource;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.Constraint;
import io.trino.spi.connector.FixedSplitSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.lancehost.Dataset;
import org.lancehost.Split;

/**
 * Plans the pinned version's scan splits on the coordinator (one per fragment, or row slices
 * of about `splitRows` rows) and ships each as split bytes with the version's snapshot token.
 */
final class LanceHostSplitManager implements ConnectorSplitManager {
  private final Tables tables;
  private final long splitRows;

  LanceHostSplitManager(Tables tables, long splitRows) {
    this.tables = tables;
    this.splitRows = splitRows;
  }

  @Override
  public ConnectorSplitSource getSplits(ConnectorTransactionHandle transaction, ConnectorSession session,
      ConnectorTableHandle handle, Set<ColumnHandle> columns, Constraint constraint) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    List<ConnectorSplit> out = new ArrayList<>();
    try (Dataset ds = tables.open(t, t.version())) {
      byte[] token = ds.snapshot();
      if (t.aggregation() != null || t.search() != null) {
        // the library computes the final aggregate or top k over the whole version (in parallel inside)
        return new FixedSplitSource(List.of(new LanceHostSplit(token, new byte[0], ds.countRows())));
      }
      for (byte[] split : (splitRows > 0 ? ds.planScanSlices(splitRows) : ds.planScan(0)).splits()) {
        out.add(new LanceHostSplit(token, split, Split.info(split).rowCount()));
      }
    }
    return new FixedSplitSource(out);
  }
}
