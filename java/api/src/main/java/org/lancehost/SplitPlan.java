package org.lancehost;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Splits planned on a pinned snapshot, as bytes any worker (Java, C, C++, Python) executes with
 * the same library. For a vector search plan, {@link #indexName()} names the index the segment
 * splits search (null for a flat plan) and {@link #reason()} why the plan took its shape.
 */
public final class SplitPlan {
  private final String indexName;
  private final String reason;
  private final List<byte[]> splits;

  SplitPlan(Object[] raw) {
    this.indexName = (String) raw[0];
    this.reason = (String) raw[1];
    List<byte[]> s = new ArrayList<>();
    for (Object o : (Object[]) raw[2]) s.add((byte[]) o);
    this.splits = Collections.unmodifiableList(s);
  }

  public String indexName() {
    return indexName;
  }

  public String reason() {
    return reason;
  }

  public List<byte[]> splits() {
    return splits;
  }
}
