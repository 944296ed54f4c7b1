package org.lancehost.trino;

import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.type.Type;

/**
 * A column of a Lance table.
 *
 * @param name the column's name as the table spells it (Trino shows it in lower case)
 * @param type its Trino type (TypeMapping)
 */
public record LanceHostColumnHandle(String name, Type type) implements ColumnHandle {}
