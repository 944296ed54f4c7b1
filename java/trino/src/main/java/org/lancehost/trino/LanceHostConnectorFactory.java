package org.lancehost.trino;

import io.trino.spi.connector.Connector;
import io.trino.spi.connector.ConnectorContext;
import io.trino.spi.connector.ConnectorFactory;
import java.util.HashMap;
import java.util.Map;

/**
 * Makes a connector from a catalog properties file: {@code connector.name=lance_host} and the
 * lance-host catalog's properties, each with the prefix {@code lance.} ({@code lance.type=dir},
 * {@code lance.root=/data/warehouse}, {@code lance.storage.aws_endpoint=...}, or {@code
 * lance.type=rest}, {@code lance.uri=...}; see the C header's lance_catalog_open). Scan tuning:
 * {@code lance-host.split-target-rows} (rows per split; 0, the default, is one split per fragment).
 */
public final class LanceHostConnectorFactory implements ConnectorFactory {
  static final String PREFIX = "lance.";
  static final String SPLIT_ROWS = "lance-host.split-target-rows";

  @Override
  public String getName() {
    return "lance_host";
  }

  @Override
  public Connector create(String catalogName, Map<String, String> config, ConnectorContext context) {
    Map<String, String> catalog = new HashMap<>();
    long splitRows = 0;
    for (Map.Entry<String, String> e : config.entrySet()) {
      String key = e.getKey();
      if (key.startsWith(PREFIX) && key.length() > PREFIX.length()) {
        catalog.put(key.substring(PREFIX.length()), e.getValue());
      } else if (key.equals(SPLIT_ROWS)) {
        try {
          splitRows = Long.parseLong(e.getValue().trim());
        } catch (NumberFormatException ex) {
          throw new IllegalArgumentException(SPLIT_ROWS + " must be a whole number of rows, got '" + e.getValue() + "'");
        }
        if (splitRows < 0) throw new IllegalArgumentException(SPLIT_ROWS + " must not be negative");
      } else {
        throw new IllegalArgumentException("unknown property '" + key + "' of catalog '" + catalogName
            + "': lance-host catalog properties take the prefix '" + PREFIX + "' (e.g. lance.type, lance.root)");
      }
    }
    if (catalog.isEmpty()) {
      throw new IllegalArgumentException("catalog '" + catalogName + "' names no lance-host catalog: set lance.type "
          + "and lance.root (a directory catalog) or lance.uri (a REST catalog)");
    }
    return new LanceHostConnector(new Tables(catalog), splitRows);
  }
}
