package org.lancehost;

import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The library's log records (lance-host's and Lance's: object-store retries, slow requests,
 * index loading, cache activity) as SLF4J records of the logger {@code org.lancehost.native.<Rust
 * module path, dots for ::>}, e.g. {@code org.lancehost.native.lance.dataset.scanner}.
 *
 * <p>When the library loads, the level of the logger {@code org.lancehost.native} in the host's
 * SLF4J configuration decides which records the library sends (none when it is off or SLF4J has
 * no provider); the system property {@code lancehost.log.level} ({@code off}, {@code error},
 * {@code warn}, {@code info}, {@code debug}, {@code trace}) overrides it. Records come from the
 * calling thread or from the library's own threads (attached to the JVM as daemon threads named
 * {@code lance-host-worker}); a record that cannot be delivered is dropped, never an error.
 */
public final class LibraryLog {
  private LibraryLog() {}

  static final String ROOT = "org.lancehost.native";
  private static final String[] LEVELS = {"off", "error", "warn", "info", "debug", "trace"};

  /** Called by the JNI glue for each record. */
  static void record(int level, String target, String message) {
    Logger log = LoggerFactory.getLogger(target.isEmpty() ? ROOT : ROOT + "." + target.replace("::", "."));
    switch (level) {
      case 1 -> log.error(message);
      case 2 -> log.warn(message);
      case 3 -> log.info(message);
      case 4 -> log.debug(message);
      default -> log.trace(message);
    }
  }

  /** The level the library sends at: the property, else what SLF4J enables for org.lancehost.native. */
  static int configuredLevel() {
    String p = System.getProperty("lancehost.log.level");
    if (p != null && !p.isEmpty()) {
      for (int i = 0; i < LEVELS.length; i++) if (LEVELS[i].equals(p.toLowerCase(Locale.ROOT))) return i;
      throw new IllegalArgumentException("lancehost.log.level=" + p + ": use one of off, error, warn, info, debug, trace");
    }
    Logger root = LoggerFactory.getLogger(ROOT);
    if (root.isTraceEnabled()) return 5;
    if (root.isDebugEnabled()) return 4;
    if (root.isInfoEnabled()) return 3;
    if (root.isWarnEnabled()) return 2;
    if (root.isErrorEnabled()) return 1;
    return 0;
  }

  /**
   * Sends the library's records at {@code level} ("off" ... "trace") or more severe to SLF4J from
   * now on, whatever the configuration said when it loaded. Thread-safe.
   *
   * @throws IllegalArgumentException for another level name
   * @throws LanceException.FailedPrecondition if another component of the process owns Rust's
   *     log facade (then no records can be routed)
   */
  public static void setLevel(String level) {
    for (int i = 0; i < LEVELS.length; i++) {
      if (LEVELS[i].equals(level.toLowerCase(Locale.ROOT))) {
        Native.logSetLevel(i);
        return;
      }
    }
    throw new IllegalArgumentException(level + ": use one of off, error, warn, info, debug, trace");
  }

  /** At load: the configured level; a failure to install is logged, never fatal. */
  static void install() {
    try {
      int level = configuredLevel();
      if (level > 0) Native.logSetLevel(level);
    } catch (RuntimeException | LinkageError e) {
      LoggerFactory.getLogger(ROOT).warn("lance-host: the library's log records are not routed to SLF4J: {}", e.toString());
    }
  }
}
