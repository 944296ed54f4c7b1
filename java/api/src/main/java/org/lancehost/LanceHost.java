package org.lancehost;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The library as a whole: its version, build profile and process-wide counters. */
public final class LanceHost {
  private LanceHost() {}

  /** The library's version, e.g. "0.14.0". */
  public static String version() {
    return Native.version();
  }

  /** "release" or "debug": how the loaded library was built. */
  public static String buildProfile() {
    return Native.buildProfile();
  }

  /**
   * The optional features of the loaded library: the object stores beyond S3 ({@code store-gcs},
   * {@code store-azure}, {@code store-oss}, {@code store-cos}, {@code store-tos}, {@code
   * store-hf}), {@code commit-dynamodb}, the CJK tokenizers ({@code tokenizer-jieba}, {@code
   * tokenizer-lindera}) and {@code mimalloc}; empty for a build with none of them.
   */
  public static List<String> buildFeatures() {
    String text = Native.buildFeatures();
    return text.isEmpty() ? List.of() : List.of(text.split(","));
  }

  /**
   * The library's process-wide counters (operations, open handles, native memory held by
   * streams, ...), by name, as lance_metric reports them. Flat counters across a long job show
   * that nothing leaks.
   */
  /**
   * Batches imported from the library into Arrow Java whose C memory is still held: 0 when every
   * {@code VectorSchemaRoot} handed out has been closed.
   */
  public static long liveBatches() {
    return CData.liveBatches();
  }

  /** The library's process-wide counters ("ops.open", "ops.scan", ...; `lance_metric`), by name; they only grow. Thread-safe. */
  public static Map<String, Long> metrics() {
    String[] kv = Native.metrics();
    Map<String, Long> out = new LinkedHashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) {
      if (kv[i] != null) out.put(kv[i], Long.parseUnsignedLong(kv[i + 1]));
    }
    return out;
  }
}
