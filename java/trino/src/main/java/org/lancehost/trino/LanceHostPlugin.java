package org.lancehost.trino;

import io.trino.spi.Plugin;
import io.trino.spi.connector.ConnectorFactory;
import java.util.List;

/** The Trino plugin: one connector, named {@code lance_host} in catalog properties files. */
public final class LanceHostPlugin implements Plugin {
  /** Creates the plugin (Trino finds it through {@code META-INF/services}). */
  public LanceHostPlugin() {}

  @Override
  public Iterable<ConnectorFactory> getConnectorFactories() {
    return List.of(new LanceHostConnectorFactory());
  }
}
