package org.lancehost.trino;

import io.trino.spi.StandardErrorCode;
import io.trino.spi.TrinoException;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorAccessControl;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.function.table.AbstractConnectorTableFunction;
import io.trino.spi.function.table.Argument;
import io.trino.spi.function.table.Descriptor;
import io.trino.spi.function.table.ReturnTypeSpecification;
import io.trino.spi.function.table.ScalarArgument;
import io.trino.spi.function.table.ScalarArgumentSpecification;
import io.trino.spi.function.table.TableFunctionAnalysis;
import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarcharType;
import io.airlift.slice.Slice;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code TABLE(<catalog>.system.vector_search(table_name => 'items', column_name => 'vec',
 * query_vector => ARRAY[...], k => 10 [, schema_name => 'default'] [, filter => 'lance sql']))}: the top k rows
 * of the table nearest to the query vector by the column's index metric (L2 without an index), with every
 * mapped column and {@code _distance}; with {@code filter}, the top k of the rows matching it (a
 * prefilter in Lance SQL, as every surface's {@code filter} option). The library searches each index segment and the unindexed rows of the
 * pinned version and merges them (one Trino split; the library runs the searches in parallel).
 */
final class VectorSearchFunction extends AbstractConnectorTableFunction {
  private final LanceHostMetadata metadata;

  VectorSearchFunction(LanceHostMetadata metadata) {
    super("system", "vector_search", List.of(
        ScalarArgumentSpecification.builder().name("TABLE_NAME").type(VarcharType.VARCHAR).build(),
        ScalarArgumentSpecification.builder().name("COLUMN_NAME").type(VarcharType.VARCHAR).build(),
        ScalarArgumentSpecification.builder().name("QUERY_VECTOR").type(new ArrayType(RealType.REAL)).build(),
        ScalarArgumentSpecification.builder().name("K").type(BigintType.BIGINT).defaultValue(10L).build(),
        ScalarArgumentSpecification.builder().name("SCHEMA_NAME").type(VarcharType.VARCHAR)
            .defaultValue(io.airlift.slice.Slices.utf8Slice(Tables.DEFAULT_SCHEMA)).build(),
        ScalarArgumentSpecification.builder().name("FILTER").type(VarcharType.VARCHAR).defaultValue(null).build()),
        ReturnTypeSpecification.GenericTable.GENERIC_TABLE);
    this.metadata = metadata;
  }

  static Object value(Map<String, Argument> args, String name) {
    Object v = ((ScalarArgument) args.get(name)).getValue();
    if (v == null) throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT, "search: " + name + " is NULL");
    return v;
  }

  /** The optional FILTER argument: null when absent; an empty or NUL-bearing one is refused. */
  static String filter(Map<String, Argument> args) {
    Object v = ((ScalarArgument) args.get("FILTER")).getValue();
    if (v == null) return null;
    String sql = ((Slice) v).toStringUtf8();
    if (sql.isBlank() || sql.indexOf('\0') >= 0) {
      throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT, "search: filter must be Lance SQL, got '" + sql + "'");
    }
    return sql;
  }

  @Override
  public TableFunctionAnalysis analyze(ConnectorSession session, ConnectorTransactionHandle transaction,
      Map<String, Argument> args, ConnectorAccessControl accessControl) {
    String table = ((Slice) value(args, "TABLE_NAME")).toStringUtf8();
    String column = ((Slice) value(args, "COLUMN_NAME")).toStringUtf8();
    String schema = ((Slice) value(args, "SCHEMA_NAME")).toStringUtf8();
    long k = (Long) value(args, "K");
    if (k <= 0) throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT, "vector_search: k must be positive, got " + k);
    Block q = (Block) value(args, "QUERY_VECTOR");
    float[] query = new float[q.getPositionCount()];
    for (int i = 0; i < query.length; i++) {
      if (q.isNull(i)) throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT, "vector_search: the query has a NULL");
      query[i] = RealType.REAL.getFloat(q, i);
    }
    LanceHostSearch search = LanceHostSearch.vector(column, query, k, filter(args));
    return analysis(metadata, session, schema, table, search, "_distance");
  }

  /**
   * The analysis of a search of `table`'s `search.column()`: the table pinned, its mapped
   * columns and `result` (the score column, real) returned.
   */
  static TableFunctionAnalysis analysis(LanceHostMetadata metadata, ConnectorSession session, String schema,
      String table, LanceHostSearch search, String result) {
    String fn = result.equals("_distance") ? "vector_search" : "text_search";
    ConnectorTableHandle h = metadata.getTableHandle(session, new SchemaTableName(schema, table), Optional.empty(), Optional.empty());
    if (h == null) {
      throw new TrinoException(StandardErrorCode.TABLE_NOT_FOUND, fn + ": no table '" + schema + "." + table + "'");
    }
    LanceHostTableHandle t = (LanceHostTableHandle) h;
    List<LanceHostColumnHandle> columns = new ArrayList<>();
    String searched = null;
    for (var c : metadata.getColumnHandles(session, t).values()) {
      LanceHostColumnHandle col = (LanceHostColumnHandle) c;
      columns.add(col);
      if (col.name().equalsIgnoreCase(search.column())) searched = col.name();
    }
    if (searched == null) {
      throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT, fn + ": table '" + table
          + "' has no column '" + search.column() + "'");
    }
    columns.add(new LanceHostColumnHandle(result, RealType.REAL));
    List<String> names = new ArrayList<>();
    List<Type> types = new ArrayList<>();
    for (LanceHostColumnHandle c : columns) {
      names.add(c.name().toLowerCase(java.util.Locale.ROOT));
      types.add(c.type());
    }
    LanceHostSearch resolved = search.withColumn(searched);
    return TableFunctionAnalysis.builder()
        .returnedType(Descriptor.descriptor(names, types))
        .handle(new LanceHostSearchFunctionHandle(t, resolved, columns))
        .build();
  }
}
