package org.lancehost.trino;

import com.fasterxml.jackson.annotation.JsonIgnore;
import io.trino.spi.connector.ConnectorMergeTableHandle;
import io.trino.spi.connector.ConnectorTableHandle;
import java.util.List;

/**
 * A MERGE, UPDATE or DELETE Trino runs row by row (what the pushed predicates could not do):
 * planned at the pinned version; each merge sink stages the row addresses it deletes and the rows
 * it inserts at that version, and the coordinator commits all of them as one version.
 *
 * @param table the table (its pinned version is the planned one)
 * @param location where the table lives (the URI its writes and the commit name)
 * @param token the planned version's snapshot token (no credentials)
 * @param columns the table's data columns in the order of Trino's merge pages
 */
public record LanceHostMergeHandle(LanceHostTableHandle table, String location, byte[] token,
    List<LanceHostColumnHandle> columns) implements ConnectorMergeTableHandle {
  @JsonIgnore
  @Override
  public ConnectorTableHandle getTableHandle() {
    return table;
  }

  /** The same rows as an insert, for the sink that stages the inserted rows. */
  LanceHostInsertHandle inserts() {
    return new LanceHostInsertHandle(table, location, token, columns);
  }
}
