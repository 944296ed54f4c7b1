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
 * {@code lance-host.split-target-rows} (rows per split; 0, the default, is one split per fragment)
 * and {@code lance-host.dynamic-filter-wait-ms} (how long a split waits for a join's dynamic filter
 * before it starts reading; default 2000, 0 = never).
 */
public final class LanceHostConnectorFactory implements ConnectorFactory {
  static final String PREFIX = "lance.";
  static final String SPLIT_ROWS = "lance-host.split-target-rows";
  static final String DYNAMIC_WAIT = "lance-host.dynamic-filter-wait-ms";

  @Override
  public String getName() {
    return "lance_host";
  }

  @Override
  public Connector create(String catalogName, Map<String, String> config, ConnectorContext context) {
    Map<String, String> catalog = new HashMap<>();
    long splitRows = 0;
    long dynamicWait = 2000;
    for (Map.Entry<String, String> e : config.entrySet()) {
      String key = e.getKey();
      if (key.startsWith(PREFIX) && key.length() > PREFIX.length()) {
        catalog.put(key.substring(PREFIX.length()), e.getValue());
      } else if (key.equals(SPLIT_ROWS)) {
        splitRows = wholeNumber(key, e.getValue());
      } else if (key.equals(DYNAMIC_WAIT)) {
        dynamicWait = wholeNumber(key, e.getValue());
      } else {
        throw new IllegalArgumentException("unknown property '" + key + "' of catalog '" + catalogName
            + "': lance-host catalog properties take the prefix '" + PREFIX + "' (e.g. lance.type, lance.root)");
      }
    }
    if (catalog.isEmpty()) {
      throw new IllegalArgumentException("catalog '" + catalogName + "' names no lance-host catalog: set lance.type "
          + "and lance.root (a directory catalog) or lance.uri (a REST catalog)");
    }
    return new LanceHostConnector(new Tables(catalog), splitRows, dynamicWait);
  }

  private static long wholeNumber(String key, String value) {
    long n;
    try {
      n = Long.parseLong(value.trim());
    } catch (NumberFormatException ex) {
      throw new IllegalArgumentException(key + " must be a whole number, got '" + value + "'");
    }
    if (n < 0) throw new IllegalArgumentException(key + " must not be negative, got " + n);
    return n;
  }
}
