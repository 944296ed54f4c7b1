package org.lancehost.spark;

import java.io.Serializable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.lancehost.Catalog;

/**
 * A table of a {@link LanceHostCatalog}, as a task carries it: the catalog's properties (its
 * configuration, as every node of an engine has it) and the table's name — never the storage
 * options the catalog vended. An executor describes the table through a catalog of its own
 * ({@link #storageOptions()}), so vended credentials are fresh when it opens the shipped snapshot
 * and are refreshed by the library there as they expire (issue 60).
 */
final class CatalogTable implements Serializable {
  private static final long serialVersionUID = 1L;

  final HashMap<String, String> properties;
  final String[] namespace;
  final String table;

  CatalogTable(Map<String, String> properties, String[] namespace, String table) {
    this.properties = new HashMap<>(properties);
    this.namespace = namespace.clone();
    this.table = table;
  }

  /** Catalogs this JVM opened, by their properties (catalog handles are thread-safe). */
  private static final Map<Map<String, String>, Catalog> CATALOGS = new HashMap<>();

  /** The storage options the table's catalog describes now, through this JVM's catalog. */
  HashMap<String, String> storageOptions() {
    Catalog c;
    synchronized (CATALOGS) {
      c = CATALOGS.computeIfAbsent(properties, Catalog::open);
    }
    return new HashMap<>(c.describeTable(List.of(namespace), table).storageOptions);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof CatalogTable)) return false;
    CatalogTable t = (CatalogTable) o;
    return properties.equals(t.properties) && Arrays.equals(namespace, t.namespace) && table.equals(t.table);
  }

  @Override
  public int hashCode() {
    return Objects.hash(properties, Arrays.hashCode(namespace), table);
  }
}
