package org.lancehost.spark;

import org.lancehost.Dataset;

/**
 * Spark has no close hook for a Table: the dataset a table pinned is closed when the table is
 * garbage collected (its native memory is small: the snapshot's manifest).
 */
final class Cleaner {
  private Cleaner() {}

  private static final java.lang.ref.Cleaner CLEANER = java.lang.ref.Cleaner.create();

  static void register(Object owner, Dataset dataset) {
    CLEANER.register(owner, dataset::close);
  }
}
