package org.lancehost.trino;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.trino.spi.StandardErrorCode;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ConnectorAccessControl;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.function.table.AbstractConnectorTableFunction;
import io.trino.spi.function.table.Argument;
import io.trino.spi.function.table.ReturnTypeSpecification;
import io.trino.spi.function.table.ScalarArgumentSpecification;
import io.trino.spi.function.table.TableFunctionAnalysis;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.VarcharType;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.lancehost.TextMatch;

/**
 * {@code TABLE(<catalog>.system.text_search(table_name => 'docs', column_name => 'doc',
 * query_text => 'river stone', k => 10 [, schema_name => 'default'] [, filter => 'lance sql']
 * [, match => 'any' | 'all' | 'phrase'] [, slop => 0]))}: the k rows of the table's latest version
 * that best match the words (BM25 over the column's INVERTED index), with every mapped column and
 * {@code _score}. {@code match} says which rows match: any word (the default), all of them, or the
 * words as a phrase, in order, with at most {@code slop} other words between neighbours (the index
 * must keep positions: {@code with_position}). With {@code filter}, the best k of the rows matching
 * it (a prefilter in Lance SQL). The library scores every index segment
 * and the unindexed rows with the version's corpus statistics and merges them into the global top
 * k (one Trino split; the searches run in parallel inside the library).
 */
final class TextSearchFunction extends AbstractConnectorTableFunction {
  private final LanceHostMetadata metadata;

  TextSearchFunction(LanceHostMetadata metadata) {
    super("system", "text_search", List.of(
        ScalarArgumentSpecification.builder().name("TABLE_NAME").type(VarcharType.VARCHAR).build(),
        ScalarArgumentSpecification.builder().name("COLUMN_NAME").type(VarcharType.VARCHAR).build(),
        ScalarArgumentSpecification.builder().name("QUERY_TEXT").type(VarcharType.VARCHAR).build(),
        ScalarArgumentSpecification.builder().name("K").type(BigintType.BIGINT).defaultValue(10L).build(),
        ScalarArgumentSpecification.builder().name("SCHEMA_NAME").type(VarcharType.VARCHAR)
            .defaultValue(Slices.utf8Slice(Tables.DEFAULT_SCHEMA)).build(),
        ScalarArgumentSpecification.builder().name("FILTER").type(VarcharType.VARCHAR).defaultValue(null).build(),
        ScalarArgumentSpecification.builder().name("MATCH").type(VarcharType.VARCHAR)
            .defaultValue(Slices.utf8Slice("any")).build(),
        ScalarArgumentSpecification.builder().name("SLOP").type(BigintType.BIGINT).defaultValue(0L).build()),
        ReturnTypeSpecification.GenericTable.GENERIC_TABLE);
    this.metadata = metadata;
  }

  @Override
  public TableFunctionAnalysis analyze(ConnectorSession session, ConnectorTransactionHandle transaction,
      Map<String, Argument> args, ConnectorAccessControl accessControl) {
    String table = ((Slice) VectorSearchFunction.value(args, "TABLE_NAME")).toStringUtf8();
    String column = ((Slice) VectorSearchFunction.value(args, "COLUMN_NAME")).toStringUtf8();
    String text = ((Slice) VectorSearchFunction.value(args, "QUERY_TEXT")).toStringUtf8();
    String schema = ((Slice) VectorSearchFunction.value(args, "SCHEMA_NAME")).toStringUtf8();
    long k = (Long) VectorSearchFunction.value(args, "K");
    if (k <= 0) throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT, "text_search: k must be positive, got " + k);
    String how = ((Slice) VectorSearchFunction.value(args, "MATCH")).toStringUtf8();
    TextMatch match = switch (how.toLowerCase(Locale.ROOT)) {
      case "any" -> TextMatch.ANY;
      case "all" -> TextMatch.ALL;
      case "phrase" -> TextMatch.PHRASE;
      default -> throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT,
          "text_search: match must be 'any', 'all' or 'phrase', got '" + how + "'");
    };
    long slop = (Long) VectorSearchFunction.value(args, "SLOP");
    if (slop < 0 || slop > Integer.MAX_VALUE) {
      throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT,
          "text_search: slop must be between 0 and " + Integer.MAX_VALUE + ", got " + slop);
    }
    if (slop != 0 && match != TextMatch.PHRASE) {
      throw new TrinoException(StandardErrorCode.INVALID_FUNCTION_ARGUMENT,
          "text_search: slop applies to match => 'phrase' only, got match => '" + how + "'");
    }
    return VectorSearchFunction.analysis(metadata, session, schema, table, new LanceHostSearch(column, null, text, k,
        VectorSearchFunction.filter(args), match, (int) slop), "_score");
  }
}
