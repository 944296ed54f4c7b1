package org.lancehost;

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

  /** Built by the JNI glue (jni_split.c, plan_out). */
  SplitPlan(String indexName, String reason, byte[][] splits) {
    this.indexName = indexName;
    this.reason = reason;
    this.splits = Collections.unmodifiableList(java.util.Arrays.asList(splits));
  }

  /** The index the plan searches (null for scans and flat plans). */
  public String indexName() {
    return indexName;
  }

  /** Why the plan is what it is (e.g. why no index is used), for logs; may be empty. */
  public String reason() {
    return reason;
  }

  /** The splits as bytes, unmodifiable: ship each to a worker, which runs it with the matching call. */
  public List<byte[]> splits() {
    return splits;
  }
}
