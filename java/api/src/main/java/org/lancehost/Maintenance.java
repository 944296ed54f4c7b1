package org.lancehost;

/**
 * Results and options of a table's maintenance ({@link Dataset#compact}, {@link Dataset#cleanup},
 * tags). Records the JNI glue builds; immutable, thread-safe.
 */
public final class Maintenance {
  private Maintenance() {}

  /**
   * What a compaction did ({@code LanceCompactResult}).
   *
   * @param version the version committed; the handle's own when there was nothing to compact
   * @param fragmentsRemoved fragments rewritten
   * @param fragmentsAdded fragments written
   * @param filesRemoved data files no longer referenced by the new version
   * @param filesAdded data files written
   */
  public record CompactResult(long version, long fragmentsRemoved, long fragmentsAdded, long filesRemoved,
      long filesAdded) {}

  /**
   * What a cleanup removed.
   *
   * @param versionsRemoved versions no longer listed
   * @param bytesRemoved bytes of the files only they used
   */
  public record CleanupResult(long versionsRemoved, long bytesRemoved) {}

  /**
   * A tag: a name for a version, which keeps it from cleanup and opens it by name.
   *
   * @param name the tag's name
   * @param version the version it names
   */
  public record Tag(String name, long version) {}

  /**
   * Options of a compaction ({@code LanceCompactParams}); 0 means Lance's default. Immutable:
   * each setter returns a new object.
   *
   * @param targetRowsPerFragment rows a compacted fragment aims at (Lance: 1,048,576)
   * @param maxRowsPerGroup rows per row group of the new files (Lance: 1,024)
   * @param deletionThreshold share of deleted rows above which a fragment is rewritten, in (0, 1]
   *     (Lance: 0.1)
   * @param keepDeletions keep deleted rows in deletion vectors instead of dropping them
   */
  public record CompactOptions(long targetRowsPerFragment, long maxRowsPerGroup, float deletionThreshold,
      boolean keepDeletions) {
    /** Lance's defaults. */
    public static CompactOptions defaults() {
      return new CompactOptions(0, 0, 0f, false);
    }

    /** Rows a compacted fragment aims at (0: Lance's default). */
    public CompactOptions targetRowsPerFragment(long n) {
      return new CompactOptions(n, maxRowsPerGroup, deletionThreshold, keepDeletions);
    }

    /** Rows per row group of the new files (0: Lance's default). */
    public CompactOptions maxRowsPerGroup(long n) {
      return new CompactOptions(targetRowsPerFragment, n, deletionThreshold, keepDeletions);
    }

    /** Share of deleted rows above which a fragment is rewritten, in (0, 1] (0: Lance's default). */
    public CompactOptions deletionThreshold(float t) {
      return new CompactOptions(targetRowsPerFragment, maxRowsPerGroup, t, keepDeletions);
    }

    /** Keep deleted rows in deletion vectors instead of dropping them on rewrite. */
    public CompactOptions keepDeletions(boolean k) {
      return new CompactOptions(targetRowsPerFragment, maxRowsPerGroup, deletionThreshold, k);
    }
  }
}
