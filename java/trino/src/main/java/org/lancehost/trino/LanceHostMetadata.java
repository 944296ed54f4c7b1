package org.lancehost.trino;

import io.trino.spi.StandardErrorCode;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.AggregateFunction;
import io.trino.spi.connector.AggregationApplicationResult;
import io.trino.spi.connector.Assignment;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.expression.Call;
import io.trino.spi.expression.Constant;
import io.trino.spi.expression.ConnectorExpression;
import io.trino.spi.expression.StandardFunctions;
import io.trino.spi.expression.Variable;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TinyintType;
import org.lancehost.AggregateSpec;
import io.trino.spi.connector.ColumnMetadata;
import io.airlift.slice.Slice;
import io.trino.spi.connector.ConnectorInsertTableHandle;
import io.trino.spi.connector.ConnectorMetadata;
import io.trino.spi.connector.ConnectorOutputMetadata;
import io.trino.spi.connector.RetryMode;
import io.trino.spi.connector.RowChangeParadigm;
import io.trino.spi.statistics.ComputedStatistics;
import java.util.Collection;
import org.lancehost.Write;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.connector.ConnectorTableVersion;
import io.trino.spi.connector.Constraint;
import io.trino.spi.connector.ConstraintApplicationResult;
import io.trino.spi.connector.LimitApplicationResult;
import io.trino.spi.connector.PointerType;
import io.trino.spi.connector.ProjectionApplicationResult;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.SchemaTablePrefix;
import io.trino.spi.connector.SortItem;
import io.trino.spi.connector.TableFunctionApplicationResult;
import io.trino.spi.connector.TopNApplicationResult;
import io.trino.spi.function.table.ConnectorTableFunctionHandle;
import io.trino.spi.connector.TableColumnsMetadata;
import io.trino.spi.statistics.Estimate;
import io.trino.spi.statistics.TableStatistics;
import io.trino.spi.type.DateType;
import io.trino.spi.type.DateTimeEncoding;
import io.trino.spi.type.LongTimestamp;
import io.trino.spi.type.LongTimestampWithTimeZone;
import io.trino.spi.type.TimestampType;
import io.trino.spi.type.TimestampWithTimeZoneType;
import io.trino.spi.type.Type;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.arrow.vector.types.pojo.Field;
import org.lancehost.Dataset;
import org.lancehost.LanceException;

/** Schemas, tables and columns of the catalog; pins each query's version; takes pushdowns; INSERT. */
final class LanceHostMetadata implements ConnectorMetadata {
  private final Tables tables;

  LanceHostMetadata(Tables tables) {
    this.tables = tables;
  }

  @Override
  public List<String> listSchemaNames(ConnectorSession session) {
    return tables.schemas();
  }

  @Override
  public void createSchema(ConnectorSession session, String schemaName, Map<String, Object> properties,
      io.trino.spi.security.TrinoPrincipal owner) {
    if (!properties.isEmpty()) {
      throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "lance_host schemas take no properties, not " + properties.keySet());
    }
    tables.createSchema(schemaName);
  }

  @Override
  public void dropSchema(ConnectorSession session, String schemaName, boolean cascade) {
    tables.dropSchema(schemaName, cascade);
  }

  @Override
  public void createTable(ConnectorSession session, ConnectorTableMetadata tableMetadata, io.trino.spi.connector.SaveMode saveMode) {
    if (saveMode == io.trino.spi.connector.SaveMode.REPLACE) {
      throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "CREATE OR REPLACE TABLE is not supported by lance_host");
    }
    SchemaTableName name = tableMetadata.getTable();
    try {
      tables.createTable(createNamespace(name), name.getTableName(), createSchema(tableMetadata),
          saveMode == io.trino.spi.connector.SaveMode.IGNORE);
    } catch (LanceException.InvalidArgument e) {
      throw new TrinoException(StandardErrorCode.INVALID_TABLE_PROPERTY, e.getMessage(), e);
    }
  }

  /** The namespace a new table goes to (its schema must exist). */
  private List<String> createNamespace(SchemaTableName name) {
    return tables.namespace(name.getSchemaName()).orElseThrow(() -> new TrinoException(
        StandardErrorCode.SCHEMA_NOT_FOUND, "schema '" + name.getSchemaName() + "' does not exist"));
  }

  /** The table property naming a new table's vector columns and their lengths. */
  static final String VECTOR_COLUMNS = "vector_columns";

  /**
   * The vector columns property, {@code name:length[,name:length...]}, as a map (lower-case names,
   * as Trino spells columns); INVALID_TABLE_PROPERTY naming what is wrong.
   */
  static Map<String, Integer> vectorColumns(String text) {
    Map<String, Integer> out = new java.util.LinkedHashMap<>();
    if (text == null) return out;
    for (String part : text.split(",", -1)) {
      String[] kv = part.trim().split(":", -1);
      Integer length = null;
      if (kv.length == 2 && !kv[0].isBlank()) {
        try {
          length = Integer.parseInt(kv[1].trim());
        } catch (NumberFormatException notANumber) {
          length = null;
        }
      }
      if (length == null || length <= 0) {
        throw new TrinoException(StandardErrorCode.INVALID_TABLE_PROPERTY, "vector_columns takes 'name:length[,name:length...]' "
            + "with a positive length, not '" + text + "'");
      }
      if (out.put(kv[0].trim().toLowerCase(java.util.Locale.ROOT), length) != null) {
        throw new TrinoException(StandardErrorCode.INVALID_TABLE_PROPERTY, "vector_columns names '" + kv[0].trim() + "' twice");
      }
    }
    return out;
  }

  /** The Arrow schema of a new table, or NOT_SUPPORTED naming what cannot be created. */
  private static org.apache.arrow.vector.types.pojo.Schema createSchema(ConnectorTableMetadata tableMetadata) {
    Map<String, Integer> vectors = vectorColumns((String) tableMetadata.getProperties().get(VECTOR_COLUMNS));
    for (String name : vectors.keySet()) {
      boolean found = false;
      for (ColumnMetadata c : tableMetadata.getColumns()) {
        found |= !c.isHidden() && c.getName().equalsIgnoreCase(name);
      }
      if (!found) {
        throw new TrinoException(StandardErrorCode.INVALID_TABLE_PROPERTY, "vector_columns names '" + name
            + "', which is not a column of the table");
      }
    }
    if (tableMetadata.getComment().isPresent()) {
      throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "lance_host tables take no comment");
    }
    List<Field> fields = new ArrayList<>();
    for (ColumnMetadata c : tableMetadata.getColumns()) {
      if (c.isHidden()) continue;
      if (c.getComment().isPresent()) {
        throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "lance_host columns take no comment (column '" + c.getName() + "')");
      }
      Integer length = vectors.get(c.getName().toLowerCase(java.util.Locale.ROOT));
      fields.add(length == null ? TypeMapping.arrowField(c.getName(), c.getType())
          : TypeMapping.vectorField(c.getName(), c.getType(), length));
    }
    return new org.apache.arrow.vector.types.pojo.Schema(fields);
  }

  /** CREATE TABLE AS tables created by a query that has not finished them (dropped if it fails). */
  private final java.util.concurrent.ConcurrentHashMap<String, LanceHostInsertHandle> creating =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * CREATE TABLE AS: the table is created now, empty (version 1), and the query's rows are staged
   * into it like an INSERT's and committed by {@link #finishCreateTable} (version 2). A query that
   * fails before that has its table dropped ({@link #cleanupQuery}): no half-made table remains.
   * Under fault-tolerant execution the finish gets only the shares of the task attempts Trino kept.
   */
  @Override
  public io.trino.spi.connector.ConnectorOutputTableHandle beginCreateTable(ConnectorSession session,
      ConnectorTableMetadata tableMetadata, Optional<io.trino.spi.connector.ConnectorTableLayout> layout,
      RetryMode retryMode, boolean replace) {
    if (replace) throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "CREATE OR REPLACE TABLE is not supported by lance_host");
    SchemaTableName name = tableMetadata.getTable();
    List<String> ns = createNamespace(name);
    org.apache.arrow.vector.types.pojo.Schema schema = createSchema(tableMetadata);
    tables.createTable(ns, name.getTableName(), schema, false);
    try {
      String table = tables.tableName(ns, name.getTableName()).orElseThrow();
      LanceHostTableHandle t = new LanceHostTableHandle(name.getSchemaName(), ns, table, 0, null, -1, null, null, null, null);
      try (Dataset ds = tables.open(t, 0)) {
        t = new LanceHostTableHandle(name.getSchemaName(), ns, table, ds.version(), null, -1, null, null, null, null);
        List<LanceHostColumnHandle> columns = new ArrayList<>();
        for (Field f : schema.getFields()) columns.add(new LanceHostColumnHandle(f.getName(), TypeMapping.trinoType(f).orElseThrow()));
        LanceHostInsertHandle handle = new LanceHostInsertHandle(t, tables.describe(t).location, ds.snapshot(), columns);
        creating.put(session.getQueryId(), handle);
        return handle;
      }
    } catch (RuntimeException e) {
      tables.dropTable(ns, name.getTableName());
      throw e;
    }
  }

  @Override
  public Optional<ConnectorOutputMetadata> finishCreateTable(ConnectorSession session,
      io.trino.spi.connector.ConnectorOutputTableHandle handle, Collection<Slice> fragments,
      Collection<ComputedStatistics> statistics) {
    LanceHostInsertHandle insert = (LanceHostInsertHandle) handle;
    List<byte[]> staged = new ArrayList<>();
    for (Slice s : fragments) staged.add(s.getBytes());
    if (!staged.isEmpty()) {
      Write.commit(insert.location(), staged, Write.Options.mode(Write.APPEND)
          .statementId("trino:" + session.getQueryId())
          .storageOptions(tables.describe(insert.table()).storageOptions));
    }
    creating.remove(session.getQueryId()); // finished: the table stays
    return Optional.empty();
  }

  /** Deletes the files of shares a failed commit did not take; a failure of that is added to `cause`. */
  private static void abortQuietly(List<byte[]> staged, Map<String, String> storage, RuntimeException cause) {
    try {
      Write.abort(staged, storage);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  /** A CREATE TABLE AS that did not finish drops the table it created. */
  @Override
  public void cleanupQuery(ConnectorSession session) {
    LanceHostInsertHandle unfinished = creating.remove(session.getQueryId());
    if (unfinished != null) tables.dropTable(unfinished.table().namespace(), unfinished.table().table());
  }

  @Override
  public void dropTable(ConnectorSession session, ConnectorTableHandle tableHandle) {
    LanceHostTableHandle t = (LanceHostTableHandle) tableHandle;
    tables.dropTable(t.namespace(), t.table());
  }

  @Override
  public ConnectorTableHandle getTableHandle(ConnectorSession session, SchemaTableName name,
      Optional<ConnectorTableVersion> startVersion, Optional<ConnectorTableVersion> endVersion) {
    if (startVersion.isPresent()) {
      throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "lance_host reads one version of a table; "
          + "changes between versions are not supported");
    }
    Optional<List<String>> ns = tables.namespace(name.getSchemaName());
    if (ns.isEmpty()) return null;
    Optional<String> table = tables.tableName(ns.get(), name.getTableName());
    if (table.isEmpty()) return null;
    LanceHostTableHandle base = new LanceHostTableHandle(name.getSchemaName(), ns.get(), table.get(), 0, null, -1, null, null, null, null);
    long version;
    try (Dataset ds = endVersion.isPresent() ? openVersion(session, base, endVersion.get()) : tables.open(base, 0)) {
      version = ds.version();
    }
    return new LanceHostTableHandle(name.getSchemaName(), ns.get(), table.get(), version, null, -1, null, null, null, null);
  }

  /** The table at the version `FOR VERSION AS OF` or `FOR TIMESTAMP AS OF` names. */
  private Dataset openVersion(ConnectorSession session, LanceHostTableHandle t, ConnectorTableVersion v) {
    Type type = v.getVersionType();
    Object value = v.getVersion();
    if (v.getPointerType() == PointerType.TARGET_ID) {
      if (!(value instanceof Long id)) {
        throw new TrinoException(StandardErrorCode.INVALID_ARGUMENTS,
            "a lance_host table version is a whole number (FOR VERSION AS OF 3), not " + type);
      }
      if (id <= 0) {
        throw new TrinoException(StandardErrorCode.INVALID_ARGUMENTS, "table versions start at 1, got " + id);
      }
      try {
        return tables.open(t, id);
      } catch (LanceException.NotFound e) {
        throw new TrinoException(StandardErrorCode.INVALID_ARGUMENTS, e.getMessage(), e);
      }
    }
    Instant at = instant(session, type, value);
    try {
      return tables.openAt(t.namespace(), t.table(), at);
    } catch (LanceException.NotFound e) {
      throw new TrinoException(StandardErrorCode.INVALID_ARGUMENTS, e.getMessage(), e);
    }
  }

  private static Instant instant(ConnectorSession session, Type type, Object value) {
    if (type instanceof TimestampWithTimeZoneType tz) {
      if (tz.isShort()) return Instant.ofEpochMilli(DateTimeEncoding.unpackMillisUtc((Long) value));
      LongTimestampWithTimeZone l = (LongTimestampWithTimeZone) value;
      return Instant.ofEpochMilli(l.getEpochMillis()).plusNanos(l.getPicosOfMilli() / 1000);
    }
    if (type instanceof TimestampType ts) {
      // a timestamp without a zone is read in the session's time zone, as Trino reads it
      long micros = ts.isShort() ? (Long) value : ((LongTimestamp) value).getEpochMicros();
      LocalDateTime local = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
          (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
      return local.atZone(session.getTimeZoneKey().getZoneId()).toInstant();
    }
    if (type instanceof DateType) {
      return LocalDate.ofEpochDay((Long) value).atStartOfDay(session.getTimeZoneKey().getZoneId()).toInstant();
    }
    throw new TrinoException(StandardErrorCode.INVALID_ARGUMENTS,
        "FOR TIMESTAMP AS OF takes a timestamp or a date, not " + type);
  }

  @Override
  public ConnectorTableMetadata getTableMetadata(ConnectorSession session, ConnectorTableHandle handle) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    List<ColumnMetadata> columns = new ArrayList<>();
    for (LanceHostColumnHandle c : columns(t).values()) {
      columns.add(new ColumnMetadata(c.name().toLowerCase(Locale.ROOT), c.type()));
    }
    return new ConnectorTableMetadata(new SchemaTableName(t.schema(), t.table().toLowerCase(Locale.ROOT)), columns);
  }

  /** The mapped columns of the pinned version, by the name Trino uses (lower case). */
  private Map<String, LanceHostColumnHandle> columns(LanceHostTableHandle t) {
    Map<String, LanceHostColumnHandle> out = new LinkedHashMap<>();
    try (Dataset ds = tables.open(t, t.version())) {
      for (Field f : ds.schema().getFields()) {
        Optional<Type> type = TypeMapping.trinoType(f);
        if (type.isEmpty()) continue;
        String key = f.getName().toLowerCase(Locale.ROOT);
        LanceHostColumnHandle prev = out.put(key, new LanceHostColumnHandle(f.getName(), type.get()));
        if (prev != null) {
          throw new TrinoException(StandardErrorCode.AMBIGUOUS_NAME, "columns '" + prev.name() + "' and '" + f.getName()
              + "' of table '" + t.table() + "' both answer to '" + key + "' (Trino spells names in lower case)");
        }
      }
    }
    return out;
  }

  @Override
  public List<SchemaTableName> listTables(ConnectorSession session, Optional<String> schema) {
    List<SchemaTableName> out = new ArrayList<>();
    for (String s : schema.map(List::of).orElseGet(tables::schemas)) {
      Optional<List<String>> ns = tables.namespace(s);
      if (ns.isEmpty()) continue;
      for (String table : tables.tables(ns.get())) {
        out.add(new SchemaTableName(s, table.toLowerCase(Locale.ROOT)));
      }
    }
    return out;
  }

  @Override
  public Map<String, ColumnHandle> getColumnHandles(ConnectorSession session, ConnectorTableHandle handle) {
    return new LinkedHashMap<>(columns((LanceHostTableHandle) handle));
  }

  @Override
  public ColumnMetadata getColumnMetadata(ConnectorSession session, ConnectorTableHandle table, ColumnHandle column) {
    LanceHostColumnHandle c = (LanceHostColumnHandle) column;
    return new ColumnMetadata(c.name().toLowerCase(Locale.ROOT), c.type());
  }

  @Override
  public Iterator<TableColumnsMetadata> streamTableColumns(ConnectorSession session, SchemaTablePrefix prefix) {
    List<TableColumnsMetadata> out = new ArrayList<>();
    List<SchemaTableName> names = prefix.getTable().isPresent()
        ? List.of(new SchemaTableName(prefix.getSchema().orElse(Tables.DEFAULT_SCHEMA), prefix.getTable().get()))
        : listTables(session, prefix.getSchema());
    for (SchemaTableName name : names) {
      LanceHostTableHandle t = (LanceHostTableHandle) getTableHandle(session, name, Optional.empty(), Optional.empty());
      if (t == null) continue;
      out.add(TableColumnsMetadata.forTable(name, getTableMetadata(session, t).getColumns()));
    }
    return out.iterator();
  }

  @Override
  public TableStatistics getTableStatistics(ConnectorSession session, ConnectorTableHandle handle) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    try (Dataset ds = tables.open(t, t.version())) {
      // the rows of the pinned version (from its manifest); a filter's selectivity is Trino's to estimate
      return TableStatistics.builder().setRowCount(Estimate.of(ds.countRows())).build();
    }
  }

  @Override
  public Optional<ConstraintApplicationResult<ConnectorTableHandle>> applyFilter(ConnectorSession session,
      ConnectorTableHandle handle, Constraint constraint) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    if (!t.plainRows()) return Optional.empty(); // aggregates or search results, not the table's rows
    FilterTranslator.Result r = FilterTranslator.translate(constraint.getSummary());
    if (r.sql() == null) return Optional.empty();
    String combined = t.filter() == null ? r.sql() : t.filter() + " AND " + r.sql();
    if (t.filter() != null && (t.filter().equals(r.sql()) || t.filter().contains(r.sql()))) {
      return Optional.empty(); // already pushed
    }
    if (t.limit() >= 0) {
      return Optional.empty(); // a limit was pushed first: filtering under it would change the rows
    }
    return Optional.of(new ConstraintApplicationResult<>(t.withFilter(combined), r.remaining(),
        constraint.getExpression(), false));
  }

  @Override
  public Optional<TopNApplicationResult<ConnectorTableHandle>> applyTopN(ConnectorSession session,
      ConnectorTableHandle handle, long topNCount, List<SortItem> sortItems, Map<String, ColumnHandle> assignments) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    if (t.orderBy() != null || t.limit() >= 0 || !t.plainRows()) return Optional.empty();
    List<String> keys = new ArrayList<>();
    for (SortItem item : sortItems) {
      LanceHostColumnHandle c = (LanceHostColumnHandle) assignments.get(item.getName());
      // only types Lance orders as Trino does: not floating point (NaN), not arrays
      if (c == null || !FilterTranslator.ordersAsTrino(c.type())) return Optional.empty();
      keys.add(FilterTranslator.quote(c.name()) + (item.getSortOrder().isAscending() ? " ASC" : " DESC")
          + (item.getSortOrder().isNullsFirst() ? " NULLS FIRST" : " NULLS LAST"));
    }
    // every split returns its own top n in Trino's order; Trino merges them
    return Optional.of(new TopNApplicationResult<>(t.withTopN(String.join(", ", keys), topNCount), false, false));
  }

  @Override
  public Optional<ProjectionApplicationResult<ConnectorTableHandle>> applyProjection(ConnectorSession session,
      ConnectorTableHandle handle, List<ConnectorExpression> projections, Map<String, ColumnHandle> assignments) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    if (!t.plainRows()) return Optional.empty();
    // integer columns widened to bigint (how Trino sums them) are read as bigint by the scan,
    // so that an aggregate over them can be pushed; other projections stay Trino's
    boolean widened = false;
    List<ConnectorExpression> out = new ArrayList<>();
    Map<String, Assignment> used = new LinkedHashMap<>();
    for (ConnectorExpression e : projections) {
      if (e instanceof Variable v && assignments.get(v.getName()) instanceof LanceHostColumnHandle c) {
        out.add(v);
        used.putIfAbsent(v.getName(), new Assignment(v.getName(), c, c.type()));
        continue;
      }
      LanceHostColumnHandle wide = e instanceof Call ? argument(e, assignments) : null;
      if (wide == null) return Optional.empty();
      String name = wide.name() + "$bigint";
      out.add(new Variable(name, BigintType.BIGINT));
      used.putIfAbsent(name, new Assignment(name, wide, BigintType.BIGINT));
      widened = true;
    }
    if (!widened) return Optional.empty();
    return Optional.of(new ProjectionApplicationResult<>(t, out, new ArrayList<>(used.values()), false));
  }

  @Override
  public Optional<AggregationApplicationResult<ConnectorTableHandle>> applyAggregation(ConnectorSession session,
      ConnectorTableHandle handle, List<AggregateFunction> aggregates, Map<String, ColumnHandle> assignments,
      List<List<ColumnHandle>> groupingSets) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    if (!t.plainRows() || t.limit() >= 0 || t.orderBy() != null || groupingSets.size() != 1) {
      return Optional.empty();
    }
    List<String> groupBy = new ArrayList<>();
    for (ColumnHandle c : groupingSets.get(0)) {
      LanceHostColumnHandle col = (LanceHostColumnHandle) c;
      // group keys Lance compares as Trino does (not floating point: NaN and -0.0)
      if (!FilterTranslator.ordersAsTrino(col.type())) return Optional.empty();
      groupBy.add(col.name());
    }
    List<Integer> functions = new ArrayList<>();
    List<String> columns = new ArrayList<>();
    List<String> aliases = new ArrayList<>();
    List<ConnectorExpression> projections = new ArrayList<>();
    List<Assignment> outputs = new ArrayList<>();
    for (int i = 0; i < aggregates.size(); i++) {
      AggregateFunction f = aggregates.get(i);
      if (f.isDistinct() || f.getFilter().isPresent() || !f.getSortItems().isEmpty()) return Optional.empty();
      Integer code = null;
      String column = null;
      if (f.getFunctionName().equals("count") && f.getArguments().isEmpty()) {
        code = AggregateSpec.COUNT_STAR;
      } else if (f.getArguments().size() == 1 && argument(f.getArguments().get(0), assignments) instanceof
          LanceHostColumnHandle col) {
        column = col.name();
        Type in = col.type();
        boolean integer = in instanceof BigintType || in instanceof IntegerType || in instanceof SmallintType
            || in instanceof TinyintType;
        switch (f.getFunctionName()) {
          case "count" -> code = AggregateSpec.COUNT;
          // integers sum to bigint and decimals to decimal(38, s), refused when they pass it, as in Trino
          case "sum" -> code = (integer || in instanceof DecimalType) ? AggregateSpec.SUM : null;
          case "min" -> code = FilterTranslator.ordersAsTrino(in) ? AggregateSpec.MIN : null;
          case "max" -> code = FilterTranslator.ordersAsTrino(in) ? AggregateSpec.MAX : null;
          default -> code = null;
        }
      }
      if (code == null) return Optional.empty();
      String alias = "_lance_agg_" + i;
      functions.add(code);
      columns.add(column);
      aliases.add(alias);
      LanceHostColumnHandle out = new LanceHostColumnHandle(alias, f.getOutputType());
      projections.add(new Variable(alias, f.getOutputType()));
      outputs.add(new Assignment(alias, out, f.getOutputType()));
    }
    Map<ColumnHandle, ColumnHandle> grouping = new LinkedHashMap<>();
    for (ColumnHandle c : groupingSets.get(0)) grouping.put(c, c);
    LanceHostAggregation a = new LanceHostAggregation(groupBy, functions, columns, aliases);
    return Optional.of(new AggregationApplicationResult<>(t.withAggregation(a), projections, outputs, grouping, false));
  }

  /**
   * The column an aggregate's argument is: a column, or an integer column widened to bigint
   * (Trino sums integers as bigint: the library's sum of the column is the same number).
   */
  private static LanceHostColumnHandle argument(ConnectorExpression e, Map<String, ColumnHandle> assignments) {
    if (e instanceof Variable v) {
      return assignments.get(v.getName()) instanceof LanceHostColumnHandle c ? c : null;
    }
    if (e instanceof Call call && call.getFunctionName().equals(StandardFunctions.CAST_FUNCTION_NAME)
        && call.getArguments().size() == 1 && call.getType() instanceof BigintType
        && call.getArguments().get(0) instanceof Variable v
        && assignments.get(v.getName()) instanceof LanceHostColumnHandle c
        && (c.type() instanceof IntegerType || c.type() instanceof SmallintType || c.type() instanceof TinyintType)) {
      return new LanceHostColumnHandle(c.name(), BigintType.BIGINT);
    }
    return null;
  }

  /**
   * The row identity of Trino's DELETE and UPDATE plans. Only the ones whose predicate is pushed
   * whole run (applyDelete / applyUpdate: the library deletes or updates by the predicate);
   * row-level merges through this column are not taken yet, so Trino refuses the others when it
   * asks to begin a merge.
   */
  @Override
  public ColumnHandle getMergeRowIdColumnHandle(ConnectorSession session, ConnectorTableHandle tableHandle) {
    return new LanceHostColumnHandle("_rowaddr", BigintType.BIGINT);
  }

  @Override
  public RowChangeParadigm getRowChangeParadigm(ConnectorSession session, ConnectorTableHandle tableHandle) {
    return RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW;
  }

  @Override
  public Optional<ConnectorTableHandle> applyDelete(ConnectorSession session, ConnectorTableHandle handle) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    // only a DELETE whose whole WHERE was pushed (Trino asks only then) and nothing else
    if (t.limit() >= 0 || t.orderBy() != null || !t.plainRows()) return Optional.empty();
    return Optional.of(t);
  }

  @Override
  public OptionalLong executeDelete(ConnectorSession session, ConnectorTableHandle handle) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    try (Dataset ds = tables.open(t, t.version())) {
      // one new version planned at the query's version, once per query (the statement id);
      // concurrent appends are rebased over
      Write.Result r = ds.delete(t.filter() == null ? "true" : t.filter(), "trino:" + session.getQueryId());
      return OptionalLong.of(r.rowsDeleted);
    }
  }

  @Override
  public Optional<ConnectorTableHandle> applyUpdate(ConnectorSession session, ConnectorTableHandle handle,
      Map<ColumnHandle, Constant> assignments) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    if (t.limit() >= 0 || t.orderBy() != null || !t.plainRows() || t.update() != null) return Optional.empty();
    Map<String, String> set = new LinkedHashMap<>();
    for (Map.Entry<ColumnHandle, Constant> e : assignments.entrySet()) {
      LanceHostColumnHandle c = (LanceHostColumnHandle) e.getKey();
      Object value = e.getValue().getValue();
      String sql = value == null ? "NULL" : FilterTranslator.literal(c.type(), value);
      if (sql == null || !FilterTranslator.ordersAsTrino(c.type())) return Optional.empty();
      set.put(c.name(), sql);
    }
    return Optional.of(t.withUpdate(set));
  }

  @Override
  public OptionalLong executeUpdate(ConnectorSession session, ConnectorTableHandle handle) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    try (Dataset ds = tables.open(t, t.version())) {
      Write.Result r = ds.update(t.update(), t.filter(), "trino:" + session.getQueryId());
      return OptionalLong.of(r.rowsUpdated);
    }
  }

  @Override
  public Optional<TableFunctionApplicationResult<ConnectorTableHandle>> applyTableFunction(ConnectorSession session,
      ConnectorTableFunctionHandle handle) {
    if (!(handle instanceof LanceHostSearchFunctionHandle s)) return Optional.empty();
    return Optional.of(new TableFunctionApplicationResult<>(s.table().withSearch(s.search()),
        new ArrayList<>(s.columns())));
  }

  /**
   * A MERGE, or an UPDATE or DELETE whose predicate or values did not push: Trino reads the rows
   * with their {@code _rowaddr} at the pinned version and hands each task the rows to delete and
   * to insert (DELETE_ROW_AND_INSERT_ROW). Any retry policy: the finish commits only the shares
   * of the task attempts Trino kept.
   */
  @Override
  public io.trino.spi.connector.ConnectorMergeTableHandle beginMerge(ConnectorSession session,
      ConnectorTableHandle handle, Map<Integer, Collection<ColumnHandle>> updateCaseColumns, RetryMode retryMode) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    try (Dataset ds = tables.open(t, t.version())) {
      List<String> unmapped = new ArrayList<>();
      List<LanceHostColumnHandle> columns = new ArrayList<>();
      for (Field f : ds.schema().getFields()) {
        Optional<Type> type = TypeMapping.trinoType(f);
        if (type.isEmpty()) unmapped.add(f.getName());
        else columns.add(new LanceHostColumnHandle(f.getName(), type.get()));
      }
      if (!unmapped.isEmpty()) {
        throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "cannot change rows of '" + t.table()
            + "' row by row: Trino cannot write its columns " + unmapped + " (types lance_host does not map)");
      }
      return new LanceHostMergeHandle(t, tables.describe(t).location, ds.snapshot(), columns);
    }
  }

  /** Every task's row deletes and appends as ONE version; the query id makes a repeated finish commit nothing more. */
  @Override
  public void finishMerge(ConnectorSession session, io.trino.spi.connector.ConnectorMergeTableHandle handle,
      List<ConnectorTableHandle> sourceTableHandles, Collection<Slice> fragments, Collection<ComputedStatistics> statistics) {
    LanceHostMergeHandle merge = (LanceHostMergeHandle) handle;
    List<byte[]> staged = new ArrayList<>();
    for (Slice s : fragments) staged.add(s.getBytes());
    if (staged.isEmpty()) return; // no row changed: no new version
    Map<String, String> storage = tables.describe(merge.table()).storageOptions;
    try {
      Write.commit(merge.location(), staged, Write.Options.mode(Write.APPEND)
          .statementId("trino:" + session.getQueryId()).storageOptions(storage));
    } catch (RuntimeException e) {
      // nothing committed: the shares' files are no one's (an abort keeps what a landed commit uses)
      abortQuietly(staged, storage, e);
      if (e instanceof LanceException.Conflict) {
        throw new TrinoException(StandardErrorCode.TRANSACTION_CONFLICT, e.getMessage(), e);
      }
      throw e;
    }
  }

  /**
   * INSERT: planned at the handle's version, staged by the writer tasks, committed as one version
   * by {@link #finishInsert}. Any retry policy: a retried task stages its share again, and Trino
   * hands the finish only the shares of the attempts it kept.
   */
  @Override
  public ConnectorInsertTableHandle beginInsert(ConnectorSession session, ConnectorTableHandle handle,
      List<ColumnHandle> columns, RetryMode retryMode) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    List<LanceHostColumnHandle> cols = new ArrayList<>();
    for (ColumnHandle c : columns) cols.add((LanceHostColumnHandle) c);
    try (Dataset ds = tables.open(t, t.version())) {
      List<String> unmapped = new ArrayList<>();
      for (Field f : ds.schema().getFields()) {
        if (TypeMapping.trinoType(f).isEmpty()) unmapped.add(f.getName());
      }
      if (!unmapped.isEmpty()) {
        throw new TrinoException(StandardErrorCode.NOT_SUPPORTED, "cannot INSERT into '" + t.table()
            + "': Trino cannot write its columns " + unmapped + " (types lance_host does not map)");
      }
      return new LanceHostInsertHandle(t, tables.describe(t).location, ds.snapshot(), cols);
    }
  }

  @Override
  public Optional<ConnectorOutputMetadata> finishInsert(ConnectorSession session, ConnectorInsertTableHandle handle,
      List<ConnectorTableHandle> sourceTables, Collection<Slice> fragments, Collection<ComputedStatistics> statistics) {
    LanceHostInsertHandle insert = (LanceHostInsertHandle) handle;
    List<byte[]> staged = new ArrayList<>();
    for (Slice s : fragments) staged.add(s.getBytes());
    if (staged.isEmpty()) return Optional.empty(); // no rows: no new version
    // every share of the query in one version; the query id makes a repeated finish commit nothing more
    Write.commit(insert.location(), staged, Write.Options.mode(Write.APPEND)
        .statementId("trino:" + session.getQueryId())
        .storageOptions(tables.describe(insert.table()).storageOptions));
    return Optional.empty();
  }

  @Override
  public Optional<LimitApplicationResult<ConnectorTableHandle>> applyLimit(ConnectorSession session,
      ConnectorTableHandle handle, long limit) {
    LanceHostTableHandle t = (LanceHostTableHandle) handle;
    if (t.limit() >= 0 && t.limit() <= limit) return Optional.empty();
    if (t.orderBy() != null) return Optional.empty(); // a top-n already caps each split
    if (!t.plainRows()) return Optional.empty(); // one row per group or result, all of them needed
    // each split returns at most `limit` rows (after the pushed filter); Trino limits the total
    return Optional.of(new LimitApplicationResult<>(t.withLimit(limit), false, false));
  }
}
