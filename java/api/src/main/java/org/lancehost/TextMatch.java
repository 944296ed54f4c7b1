package org.lancehost;

/** How a full-text query's terms match (LANCE_TEXT_MATCH_*): any term, all terms, or the phrase (terms in order, within a slop). */
public enum TextMatch {
  ANY(0), ALL(1), PHRASE(2);

  final int code;

  TextMatch(int code) {
    this.code = code;
  }

  /** The C API's value. */
  public int code() {
    return code;
  }
}
