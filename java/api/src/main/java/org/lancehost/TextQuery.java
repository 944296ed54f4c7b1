package org.lancehost;

import java.util.List;

/**
 * A full-text query for {@link Dataset#searchText}: the column (with an INVERTED index for
 * segment splits), the text, how terms match (any, all, phrase with slop), k per split, a
 * prefilter and the columns to return ({@code _score} and {@code _rowid} come with them).
 */
public final class TextQuery {
  /** LANCE_TEXT_MATCH_* values. */
  public static final int ANY = 0, ALL = 1, PHRASE = 2;

  final String column;
  final String text;
  final int match;
  final int slop;
  final long k;
  final String prefilter;
  final String[] columns;

  private TextQuery(String column, String text, int match, int slop, long k, String prefilter, String[] columns) {
    this.column = column;
    this.text = text;
    this.match = match;
    this.slop = slop;
    this.k = k;
    this.prefilter = prefilter;
    this.columns = columns;
  }

  /** A full-text query for the best `k` rows of an INVERTED-indexed `column` (ANY term matches). */
  public static TextQuery of(String column, String text, long k) {
    return new TextQuery(column, text, ANY, 0, k, null, null);
  }

  /** How the terms match: ANY, ALL or PHRASE ({@link #match(TextMatch)} as an enum). */
  public TextQuery match(int kind) {
    return new TextQuery(column, text, kind, slop, k, prefilter, columns);
  }

  /** How the terms match. */
  public TextQuery match(TextMatch kind) {
    return match(kind.code);
  }

  /** For PHRASE: how many other terms may come between the phrase's terms. */
  public TextQuery slop(int n) {
    return new TextQuery(column, text, match, n, k, prefilter, columns);
  }

  /** Searches only the rows matching a Lance SQL filter. */
  public TextQuery prefilter(String sql) {
    return new TextQuery(column, text, match, slop, k, sql, columns);
  }

  /** {@link #prefilter}, under the name every surface uses (Python, Ray, Spark, DuckDB). */
  public TextQuery filter(String sql) {
    return prefilter(sql);
  }

  /** The columns returned with `_score` and `_rowid` (null: every column). */
  public TextQuery columns(List<String> cols) {
    return new TextQuery(column, text, match, slop, k, prefilter, cols == null ? null : cols.toArray(new String[0]));
  }
}
