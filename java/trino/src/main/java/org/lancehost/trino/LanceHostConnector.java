package org.lancehost.trino;

import io.trino.spi.connector.Connector;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorPageSinkProvider;
import io.trino.spi.connector.ConnectorPageSourceProvider;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorSplitManager;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.transaction.IsolationLevel;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/** A lance-host catalog as a Trino connector: reads, and INSERT into existing tables. */
final class LanceHostConnector implements Connector {
  private final Tables tables;
  private final LanceHostMetadata metadata;
  private final LanceHostSplitManager splits;
  private final LanceHostPageSourceProvider pages;
  private final LanceHostPageSinkProvider sinks;
  private final BufferAllocator allocator = new RootAllocator();

  LanceHostConnector(Tables tables, long splitRows, long dynamicFilterWaitMillis) {
    this.tables = tables;
    this.metadata = new LanceHostMetadata(tables);
    this.splits = new LanceHostSplitManager(tables, splitRows);
    this.pages = new LanceHostPageSourceProvider(tables, dynamicFilterWaitMillis, allocator);
    this.sinks = new LanceHostPageSinkProvider(tables, allocator);
  }

  @Override
  public ConnectorTransactionHandle beginTransaction(IsolationLevel isolationLevel, boolean readOnly, boolean autoCommit) {
    return LanceHostTransactionHandle.INSTANCE;
  }

  @Override
  public ConnectorMetadata getMetadata(ConnectorSession session, ConnectorTransactionHandle transaction) {
    return metadata;
  }

  @Override
  public ConnectorSplitManager getSplitManager() {
    return splits;
  }

  @Override
  public ConnectorPageSourceProvider getPageSourceProvider() {
    return pages;
  }

  @Override
  public java.util.Set<io.trino.spi.function.table.ConnectorTableFunction> getTableFunctions() {
    return java.util.Set.of(new VectorSearchFunction(metadata), new TextSearchFunction(metadata));
  }

  /** {@code vector_columns}: which ARRAY(REAL) / ARRAY(DOUBLE) columns of a new table are vectors, and their length. */
  @Override
  public java.util.List<io.trino.spi.session.PropertyMetadata<?>> getTableProperties() {
    return java.util.List.of(io.trino.spi.session.PropertyMetadata.stringProperty(LanceHostMetadata.VECTOR_COLUMNS,
        "Vector columns of a new table with their length, 'name:length[,name:length...]': ARRAY(REAL) or "
            + "ARRAY(DOUBLE) columns stored as fixed-size lists (searchable)", null, false));
  }

  @Override
  public ConnectorPageSinkProvider getPageSinkProvider() {
    return sinks;
  }

  @Override
  public void shutdown() {
    tables.close();
    allocator.close();
  }
}
