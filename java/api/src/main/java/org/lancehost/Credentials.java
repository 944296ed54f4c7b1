package org.lancehost;

import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Storage credentials from the host's own secret store, refreshed before they expire (for
 * credentials a catalog's namespace vends, the catalog does this itself). Register a {@link
 * Provider} for a table and the storage options it is opened with (they carry {@code
 * expires_at_millis}, epoch milliseconds): every open and write of that table in this process
 * with exactly those options asks the provider for a new set shortly before they expire
 * (lance_credentials_register).
 */
public final class Credentials {
  private Credentials() {}

  private static final Logger LOG = LoggerFactory.getLogger(Credentials.class);

  /** Gives new storage options for a table when its current ones are about to expire. */
  @FunctionalInterface
  public interface Provider {
    /**
     * The table's new storage options: all of them, the credential and its new {@code
     * expires_at_millis} included (the set replaces the current options). Runs on one of the
     * library's threads (attached to the JVM as a daemon), at most once at a time per opened
     * table; it must not block for long, as the operations that need the options wait for it.
     * Throwing {@link LanceException.PermissionDenied} or {@link LanceException.Unauthenticated}
     * fails those operations with that code; any other exception fails them with
     * LANCE_ERR_IO.
     *
     * @param tableUri the table's location, as registered
     */
    Map<String, String> refresh(String tableUri) throws Exception;
  }

  /**
   * Registers {@code provider} for the table at {@code uri} opened with exactly {@code
   * storageOptions} (which must carry {@code expires_at_millis}). A later registration of the
   * same table and options replaces this one; the provider is released when no opened table
   * needs it any more. Thread-safe.
   *
   * @throws LanceException.InvalidArgument for a null or empty uri, a null provider, or options
   *     without {@code expires_at_millis}
   */
  public static void register(String uri, Map<String, String> storageOptions, Provider provider) {
    if (provider == null) throw new LanceException.InvalidArgument("the credentials provider is null");
    Native.credentialsRegister(uri, Dataset.options(storageOptions), provider);
  }

  /**
   * Called by the JNI glue on a library thread: the provider's answer as key, value, ... or,
   * when it fails, null with the error code in {@code code[0]} (never throws).
   */
  static String[] answer(Provider provider, String tableUri, int[] code) {
    try {
      Map<String, String> options = provider.refresh(tableUri);
      if (options == null) throw new LanceException.InvalidArgument("the credentials provider returned no options");
      String[] kv = new String[options.size() * 2];
      int i = 0;
      for (Map.Entry<String, String> e : options.entrySet()) {
        if (e.getKey() == null || e.getValue() == null) {
          throw new LanceException.InvalidArgument("the credentials provider returned a null key or value");
        }
        kv[i++] = e.getKey();
        kv[i++] = e.getValue();
      }
      return kv;
    } catch (Throwable t) {
      LOG.warn("refreshing the storage credentials of {} failed", tableUri, t);
      code[0] = t instanceof LanceException ? ((LanceException) t).code() : 3; // LANCE_ERR_IO
      if (code[0] == 0) code[0] = 3;
      return null;
    }
  }
}
