package org.lancehost.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.lancehost.Catalog;
import org.lancehost.LanceException;

/**
 * lance-host's catalogs as a Spark catalog:
 * {@code spark.sql.catalog.lh=org.lancehost.spark.LanceHostCatalog} with
 * {@code spark.sql.catalog.lh.root=/data/warehouse} (a directory warehouse) or
 * {@code .type=rest} and {@code .uri=http://...} (a REST namespace service); every
 * {@code spark.sql.catalog.lh.<key>} is a catalog property as {@code lance_catalog_open} takes
 * it. Namespaces and tables are the catalog's; {@code VERSION AS OF n} and
 * {@code TIMESTAMP AS OF t} pin a snapshot. SHOW, DESCRIBE, CREATE/DROP NAMESPACE and DROP TABLE
 * work; CREATE TABLE, ALTER TABLE and RENAME are refused.
 */
public final class LanceHostCatalog implements TableCatalog, SupportsNamespaces {
  private String name;
  private Catalog catalog;
  private Map<String, String> props;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    Map<String, String> props = new HashMap<>();
    for (Map.Entry<String, String> e : options.asCaseSensitiveMap().entrySet()) props.put(e.getKey(), e.getValue());
    this.catalog = Catalog.open(props);
    this.props = props;
  }

  @Override
  public String name() {
    return name;
  }

  private static List<String> ns(String[] namespace) {
    return Arrays.asList(namespace);
  }

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    try {
      List<Identifier> out = new ArrayList<>();
      for (String t : catalog.listTables(ns(namespace))) out.add(Identifier.of(namespace, t));
      return out.toArray(new Identifier[0]);
    } catch (LanceException.NotFound e) {
      throw new NoSuchNamespaceException(namespace);
    }
  }

  private org.apache.spark.sql.connector.catalog.Table load(Identifier ident, long version, Long timestampUs)
      throws NoSuchTableException {
    Catalog.TableInfo info;
    try {
      info = catalog.describeTable(ns(ident.namespace()), ident.name());
    } catch (LanceException.NotFound e) {
      throw new NoSuchTableException(ident);
    }
    Options o = Options.forTable(info.location, info.storageOptions, version, timestampUs)
        .inCatalog(new CatalogTable(props, ident.namespace(), ident.name()));
    return SplitSource.pinned(o, ds -> new Table(o, ds, name + "." + ident));
  }

  @Override
  public org.apache.spark.sql.connector.catalog.Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, 0, null);
  }

  /**
   * {@code VERSION AS OF n}: the table's version n; {@code VERSION AS OF 'name'}: the version a
   * tag of that name pins, or else the latest of the branch of that name (a name that is both is
   * refused as ambiguous).
   */
  @Override
  public org.apache.spark.sql.connector.catalog.Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    String name = version.trim();
    long v;
    try {
      v = Long.parseLong(name);
    } catch (NumberFormatException e) {
      return loadRef(ident, name);
    }
    if (v <= 0) throw new LanceException.InvalidArgument("VERSION AS OF takes a version number of 1 or more, not " + v);
    return load(ident, v, null);
  }

  private org.apache.spark.sql.connector.catalog.Table loadRef(Identifier ident, String name) throws NoSuchTableException {
    Catalog.TableInfo info;
    try {
      info = catalog.describeTable(ns(ident.namespace()), ident.name());
    } catch (LanceException.NotFound e) {
      throw new NoSuchTableException(ident);
    }
    boolean tag = false, branch = false;
    try (org.lancehost.Dataset d = org.lancehost.Dataset.openTag(info.location, info.storageOptions, name)) {
      tag = true;
    } catch (LanceException.NotFound | LanceException.InvalidArgument e) {
      // no such tag
    }
    try (org.lancehost.Dataset d = org.lancehost.Dataset.openBranch(info.location, info.storageOptions, name, 0)) {
      branch = true;
    } catch (LanceException.NotFound | LanceException.InvalidArgument e) {
      // no such branch
    }
    if (tag && branch) {
      throw new LanceException.InvalidArgument("VERSION AS OF '" + name + "': " + ident
          + " has a tag and a branch of that name; read one with the option tag or branch");
    }
    if (!tag && !branch) {
      throw new LanceException.InvalidArgument("VERSION AS OF '" + name + "': " + ident
          + " has no tag or branch of that name (a version is a number)");
    }
    Options o = Options.forTable(info.location, info.storageOptions, 0, null, branch ? name : null, tag ? name : null)
        .inCatalog(new CatalogTable(props, ident.namespace(), ident.name()));
    return SplitSource.pinned(o, ds -> new Table(o, ds, this.name + "." + ident));
  }

  /** {@code TIMESTAMP AS OF t}: the version that was latest at t (microseconds since the epoch). */
  @Override
  public org.apache.spark.sql.connector.catalog.Table loadTable(Identifier ident, long timestampMicros)
      throws NoSuchTableException {
    return load(ident, 0, timestampMicros);
  }

  @Override
  public boolean tableExists(Identifier ident) {
    try {
      catalog.describeTable(ns(ident.namespace()), ident.name());
      return true;
    } catch (LanceException.NotFound e) {
      return false;
    }
  }

  /** TableCatalog.PROP_COLLATION and PROP_TABLE_TYPE of Spark 4 (Spark 3.5 has no such constants). */
  private static final String PROP_COLLATION = "collation", PROP_TABLE_TYPE = "table_type";

  /** Table properties Spark sets itself (kept by no Lance table; a comment or owner is not stored). */
  private static final java.util.Set<String> RESERVED = java.util.Set.of(TableCatalog.PROP_LOCATION,
      TableCatalog.PROP_IS_MANAGED_LOCATION, TableCatalog.PROP_EXTERNAL, PROP_TABLE_TYPE,
      TableCatalog.PROP_COMMENT, PROP_COLLATION, TableCatalog.PROP_PROVIDER, TableCatalog.PROP_OWNER);

  /**
   * CREATE TABLE. Spark 4 reaches this through its {@code createTable(ident, TableInfo)}, Spark 3.5
   * directly; both Spark lines have this signature.
   */
  @Override
  public org.apache.spark.sql.connector.catalog.Table createTable(Identifier ident,
      org.apache.spark.sql.connector.catalog.Column[] columns,
      org.apache.spark.sql.connector.expressions.Transform[] partitions, Map<String, String> props) {
    return create(ident, org.apache.spark.sql.connector.catalog.CatalogV2Util.v2ColumnsToStructType(columns),
        partitions, props);
  }

  /** The older form Spark 3.5 declares abstract (Spark 4 routes every CREATE TABLE to the one above). */
  @Override
  @SuppressWarnings("deprecation")
  public org.apache.spark.sql.connector.catalog.Table createTable(Identifier ident,
      org.apache.spark.sql.types.StructType schema,
      org.apache.spark.sql.connector.expressions.Transform[] partitions, Map<String, String> props) {
    return create(ident, schema, partitions, props);
  }

  private org.apache.spark.sql.connector.catalog.Table create(Identifier ident,
      org.apache.spark.sql.types.StructType schema,
      org.apache.spark.sql.connector.expressions.Transform[] partitions, Map<String, String> props) {
    if (partitions.length > 0) {
      throw new LanceException.NotSupported("a Lance table has no partitioning: CREATE TABLE without PARTITIONED BY");
    }
    if (props.get(TableCatalog.PROP_LOCATION) != null) {
      throw new LanceException.NotSupported("the lance_host catalog places its tables: CREATE TABLE without LOCATION");
    }
    String provider = props.get(TableCatalog.PROP_PROVIDER);
    if (provider != null && !provider.equalsIgnoreCase("lance_host") && !provider.equalsIgnoreCase("lance")) {
      throw new LanceException.NotSupported("the lance_host catalog creates Lance tables, not USING " + provider);
    }
    String vectors = null;
    for (Map.Entry<String, String> e : props.entrySet()) {
      String k = e.getKey();
      if (k.equals("vector_columns") || k.equals(TableCatalog.OPTION_PREFIX + "vector_columns")) {
        vectors = e.getValue();
      } else if (!RESERVED.contains(k)) {
        throw new LanceException.InvalidArgument("table property or option '" + k + "' is not one the lance_host "
            + "catalog takes (it takes vector_columns)");
      }
    }
    Schema arrow = RowsToArrow.arrowSchema(schema, Options.vectorColumns(vectors));
    catalog.createTable(ns(ident.namespace()), ident.name(), arrow, null, null);
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new LanceException.Internal("table " + ident + " was created but cannot be loaded: " + e.getMessage());
    }
  }

  @Override
  public org.apache.spark.sql.connector.catalog.Table alterTable(Identifier ident, TableChange... changes) {
    throw new UnsupportedOperationException("ALTER TABLE is not supported by the lance_host catalog");
  }

  @Override
  public boolean dropTable(Identifier ident) {
    if (!tableExists(ident)) return false;
    catalog.dropTable(ns(ident.namespace()), ident.name(), false);
    return true;
  }

  @Override
  public void renameTable(Identifier from, Identifier to) {
    throw new UnsupportedOperationException("RENAME TABLE is not supported by the lance_host catalog");
  }

  @Override
  public String[][] listNamespaces() {
    return paths(catalog.listNamespaces(List.of(), false));
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    try {
      return paths(catalog.listNamespaces(ns(namespace), false));
    } catch (LanceException.NotFound e) {
      throw new NoSuchNamespaceException(namespace);
    }
  }

  private static String[][] paths(List<List<String>> list) {
    String[][] out = new String[list.size()][];
    for (int i = 0; i < out.length; i++) out[i] = list.get(i).toArray(new String[0]);
    return out;
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    if (namespace.length == 0) return true;
    try {
      catalog.listTables(ns(namespace));
      return true;
    } catch (LanceException.NotFound e) {
      return false;
    }
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace);
    return Collections.emptyMap();
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) throws NamespaceAlreadyExistsException {
    if (namespaceExists(namespace)) throw new NamespaceAlreadyExistsException(namespace);
    Map<String, String> props = new HashMap<>(metadata);
    props.keySet().removeIf(k -> k.equals("owner") || k.equals("location") || k.equals("comment"));
    catalog.createNamespace(ns(namespace), false, props);
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw new UnsupportedOperationException("ALTER NAMESPACE is not supported by the lance_host catalog");
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace);
    catalog.dropNamespace(ns(namespace), cascade, false);
    return true;
  }
}
