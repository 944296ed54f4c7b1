package org.lancehost.trino;

import io.trino.spi.function.table.ConnectorTableFunctionHandle;
import java.util.List;

/**
 * What {@code vector_search} analysed: the table pinned, the search, and the columns it returns
 * (the table's mapped columns, then {@code _distance}).
 *
 * @param table the table, pinned at its latest version
 * @param search the search
 * @param columns the returned columns in order
 */
public record LanceHostSearchFunctionHandle(LanceHostTableHandle table, LanceHostSearch search,
    List<LanceHostColumnHandle> columns) implements ConnectorTableFunctionHandle {}
