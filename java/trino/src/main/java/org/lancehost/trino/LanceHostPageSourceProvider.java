package org.lancehost.trino;

import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.ConnectorPageSourceProvider;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplit;
import io.trino.spi.connector.ConnectorTableCredentials;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.DynamicFilter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.lancehost.Dataset;

/** Opens a split's snapshot on the worker and reads it as pages. */
final class LanceHostPageSourceProvider implements ConnectorPageSourceProvider {
  private final Tables tables;
  private final BufferAllocator allocator;

  private final long dynamicFilterWaitMillis;

  LanceHostPageSourceProvider(Tables tables, long dynamicFilterWaitMillis, BufferAllocator allocator) {
    this.tables = tables;
    this.allocator = allocator;
    this.dynamicFilterWaitMillis = dynamicFilterWaitMillis;
  }

  @Override
  public ConnectorPageSource createPageSource(ConnectorTransactionHandle transaction, ConnectorSession session,
      ConnectorSplit split, ConnectorTableHandle table, Optional<ConnectorTableCredentials> credentials,
      List<ColumnHandle> columns, DynamicFilter dynamicFilter) {
    LanceHostSplit s = (LanceHostSplit) split;
    LanceHostTableHandle t = (LanceHostTableHandle) table;
    List<LanceHostColumnHandle> cols = new ArrayList<>();
    for (ColumnHandle c : columns) cols.add((LanceHostColumnHandle) c);
    // the worker's own storage options (its catalog's describe), never the planner's
    Dataset ds = Dataset.fromSnapshot(s.token(), tables.storageOptions(t));
    if (t.search() != null) {
      return LanceHostPageSource.search(ds, cols, t.search(), allocator);
    }
    if (t.aggregation() != null) {
      return LanceHostPageSource.aggregate(ds, cols, t.aggregation().spec(t.filter()), allocator);
    }
    return new LanceHostPageSource(ds, s.split(), cols, t.filter(), t.limit(), t.orderBy(), allocator,
        dynamicFilter, dynamicFilterWaitMillis);
  }
}
