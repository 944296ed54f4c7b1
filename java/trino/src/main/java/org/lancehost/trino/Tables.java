package org.lancehost.trino;

import io.trino.spi.TrinoException;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.TableNotFoundException;
import io.trino.spi.StandardErrorCode;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.lancehost.Catalog;
import org.lancehost.Dataset;
import org.lancehost.LanceException;

/**
 * The lance-host catalog behind a Trino catalog. Schemas: {@code default} is the catalog's root
 * namespace, every other schema a namespace directly under it. Trino spells names in lower case;
 * a table or namespace is found by its name ignoring case (two names that differ only in case
 * are refused as ambiguous rather than guessed).
 */
final class Tables implements AutoCloseable {
  static final String DEFAULT_SCHEMA = "default";

  private final Catalog catalog;

  Tables(Map<String, String> properties) {
    this.catalog = Catalog.open(properties);
  }

  List<String> schemas() {
    List<String> out = new ArrayList<>();
    out.add(DEFAULT_SCHEMA);
    for (List<String> ns : catalog.listNamespaces(List.of(), false)) {
      String name = ns.get(ns.size() - 1);
      if (!name.equalsIgnoreCase(DEFAULT_SCHEMA)) out.add(name.toLowerCase(Locale.ROOT));
    }
    return out;
  }

  /** The namespace of a Trino schema, or empty when there is none. */
  Optional<List<String>> namespace(String schema) {
    if (schema.equalsIgnoreCase(DEFAULT_SCHEMA)) return Optional.of(List.of());
    String found = null;
    for (List<String> ns : catalog.listNamespaces(List.of(), false)) {
      String name = ns.get(ns.size() - 1);
      if (name.equalsIgnoreCase(schema)) {
        if (found != null && !found.equals(name)) {
          throw new TrinoException(StandardErrorCode.AMBIGUOUS_NAME, "namespaces '" + found + "' and '" + name
              + "' both answer to schema '" + schema + "' (Trino spells names in lower case)");
        }
        found = name;
      }
    }
    return found == null ? Optional.empty() : Optional.of(List.of(found));
  }

  List<String> tables(List<String> namespace) {
    return catalog.listTables(namespace);
  }

  /** The table's name as the catalog spells it, or empty. */
  Optional<String> tableName(List<String> namespace, String table) {
    String found = null;
    for (String name : catalog.listTables(namespace)) {
      if (name.equalsIgnoreCase(table)) {
        if (found != null && !found.equals(name)) {
          throw new TrinoException(StandardErrorCode.AMBIGUOUS_NAME, "tables '" + found + "' and '" + name
              + "' both answer to '" + table + "' (Trino spells names in lower case)");
        }
        found = name;
      }
    }
    return Optional.ofNullable(found);
  }

  /** The table at `version` (0 = its latest). */
  Dataset open(LanceHostTableHandle t, long version) {
    try {
      return catalog.openTable(t.namespace(), t.table(), version);
    } catch (LanceException.NotFound e) {
      throw new TableNotFoundException(new SchemaTableName(t.schema(), t.table()), e.getMessage());
    }
  }

  /** The latest version committed at or before `at`. */
  Dataset openAt(List<String> namespace, String table, Instant at) {
    Catalog.TableInfo info = catalog.describeTable(namespace, table);
    return Dataset.openAt(info.location, info.storageOptions, at);
  }

  /** Where the table lives and the options to reach it (this process's own describe). */
  Catalog.TableInfo describe(LanceHostTableHandle t) {
    return catalog.describeTable(t.namespace(), t.table());
  }

  /** How long a worker reuses a table's described storage options across its splits. */
  private static final long DESCRIBE_REUSE_NANOS = 5_000_000_000L;

  private record Described(Map<String, String> options, long at) {}

  private final java.util.concurrent.ConcurrentHashMap<List<String>, Described> described =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * The storage options a worker opens the table's snapshot with (its own describe), reused for
   * a few seconds so that a query's many splits on one worker ask the catalog once, not once per
   * split (the library refreshes vended options through the catalog by itself).
   */
  Map<String, String> storageOptions(LanceHostTableHandle t) {
    List<String> key = new java.util.ArrayList<>(t.namespace());
    key.add(t.table());
    long now = System.nanoTime();
    Described d = described.get(key);
    if (d == null || now - d.at() > DESCRIBE_REUSE_NANOS) {
      d = new Described(catalog.describeTable(t.namespace(), t.table()).storageOptions, now);
      described.put(key, d);
    }
    return d.options();
  }

  /** CREATE SCHEMA: a namespace under the root. */
  void createSchema(String schema) {
    if (schema.equalsIgnoreCase(DEFAULT_SCHEMA)) {
      throw new TrinoException(StandardErrorCode.SCHEMA_ALREADY_EXISTS, "schema '" + DEFAULT_SCHEMA + "' is the catalog's root");
    }
    if (namespace(schema).isPresent()) {
      throw new TrinoException(StandardErrorCode.SCHEMA_ALREADY_EXISTS, "schema '" + schema + "' already exists");
    }
    catalog.createNamespace(List.of(schema), false, Map.of());
  }

  /** DROP SCHEMA [CASCADE]: the namespace and, with cascade, its tables. */
  void dropSchema(String schema, boolean cascade) {
    if (schema.equalsIgnoreCase(DEFAULT_SCHEMA)) {
      throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "schema '" + DEFAULT_SCHEMA + "' is the catalog's root: it cannot be dropped");
    }
    List<String> ns = namespace(schema).orElseThrow(
        () -> new TrinoException(StandardErrorCode.SCHEMA_NOT_FOUND, "schema '" + schema + "' does not exist"));
    if (!cascade && !catalog.listTables(ns).isEmpty()) {
      throw new TrinoException(StandardErrorCode.SCHEMA_NOT_EMPTY, "schema '" + schema + "' is not empty; DROP SCHEMA ... CASCADE drops its tables");
    }
    catalog.dropNamespace(ns, cascade, false);
  }

  /** CREATE TABLE: an empty table of the schema (version 1); false when it exists and `ignoreExisting`. */
  boolean createTable(List<String> namespace, String table, org.apache.arrow.vector.types.pojo.Schema schema,
      boolean ignoreExisting) {
    if (tableName(namespace, table).isPresent()) {
      if (ignoreExisting) return false;
      throw new TrinoException(StandardErrorCode.TABLE_ALREADY_EXISTS, "table '" + table + "' already exists");
    }
    catalog.createTable(namespace, table, schema, null, Map.of());
    return true;
  }

  /** DROP TABLE. */
  void dropTable(List<String> namespace, String table) {
    catalog.dropTable(namespace, table, false);
  }

  @Override
  public void close() {
    catalog.close();
  }
}
