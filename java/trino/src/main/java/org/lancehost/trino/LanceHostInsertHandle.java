package org.lancehost.trino;

import io.trino.spi.connector.ConnectorInsertTableHandle;
import io.trino.spi.connector.ConnectorOutputTableHandle;
import java.util.List;

/**
 * An INSERT into a table (or the rows of a CREATE TABLE AS, into the table it created): planned at the pinned version, whose snapshot token the page sinks
 * open to stage their shares (appends need the version they are planned at).
 *
 * @param table the table (its pinned version is the planned one)
 * @param location where the table lives (the URI its writes and the commit name)
 * @param token the planned version's snapshot token (no credentials)
 * @param columns the table's columns in the order of Trino's pages
 */
public record LanceHostInsertHandle(LanceHostTableHandle table, String location, byte[] token,
    List<LanceHostColumnHandle> columns) implements ConnectorInsertTableHandle, ConnectorOutputTableHandle {}
