package org.lancehost.trino;

import io.trino.spi.StandardErrorCode;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ConnectorInsertTableHandle;
import io.trino.spi.connector.ConnectorOutputTableHandle;
import io.trino.spi.connector.ConnectorPageSink;
import io.trino.spi.connector.ConnectorPageSinkId;
import io.trino.spi.connector.ConnectorPageSinkProvider;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableCredentials;
import io.trino.spi.connector.ConnectorTransactionHandle;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.lancehost.Dataset;

/** Page sinks of INSERTs: each opens the planned version from the handle's token. */
final class LanceHostPageSinkProvider implements ConnectorPageSinkProvider {
  private final Tables tables;
  private final BufferAllocator allocator;

  LanceHostPageSinkProvider(Tables tables, BufferAllocator allocator) {
    this.tables = tables;
    this.allocator = allocator;
  }

  @Override
  public ConnectorPageSink createPageSink(ConnectorTransactionHandle transaction, ConnectorSession session,
      ConnectorOutputTableHandle output, Optional<ConnectorTableCredentials> credentials, ConnectorPageSinkId id) {
    // the rows of a CREATE TABLE AS: an insert into the table the coordinator created
    return createPageSink(transaction, session, (ConnectorInsertTableHandle) output, credentials, id);
  }

  @Override
  public io.trino.spi.connector.ConnectorMergeSink createMergeSink(ConnectorTransactionHandle transaction,
      ConnectorSession session, io.trino.spi.connector.ConnectorMergeTableHandle handle,
      Optional<ConnectorTableCredentials> credentials, ConnectorPageSinkId id) {
    LanceHostMergeHandle merge = (LanceHostMergeHandle) handle;
    var storage = tables.storageOptions(merge.table()); // the worker's own describe
    Dataset insertsAt = Dataset.fromSnapshot(merge.token(), storage);
    try {
      return new LanceHostMergeSink(merge, insertsAt, Dataset.fromSnapshot(merge.token(), storage), storage, allocator);
    } catch (RuntimeException e) {
      insertsAt.close();
      throw e;
    }
  }

  @Override
  public ConnectorPageSink createPageSink(ConnectorTransactionHandle transaction, ConnectorSession session,
      ConnectorInsertTableHandle handle, Optional<ConnectorTableCredentials> credentials, ConnectorPageSinkId id) {
    LanceHostInsertHandle insert = (LanceHostInsertHandle) handle;
    // the worker's own storage options (its catalog's describe), never the planner's
    var storage = tables.storageOptions(insert.table());
    Dataset at = Dataset.fromSnapshot(insert.token(), storage);
    return new LanceHostPageSink(insert, at, storage, allocator);
  }
}
