package org.lancehost;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Properties;

/**
 * Finds and loads liblance_host_jni (and the liblance_host it needs), in this order:
 * <ol>
 *   <li>the path in the system property {@code lancehost.jni.library} or the environment variable
 *       {@code LANCE_HOST_JNI_LIBRARY}: for hosts that ship their own build;
 *   <li>the natives inside the jar ({@code org/lancehost/native/<os>-<arch>/}), extracted once into
 *       a directory of the user's ({@code lancehost.native.dir}, default
 *       {@code <java.io.tmpdir>/lance-host-<user>/<sha256 prefix>}) and checked against the
 *       checksums the build recorded; several JVMs share one extraction;
 *   <li>{@code lance_host_jni} from {@code java.library.path}.
 * </ol>
 * Runs once per class loader, from {@link Native}'s static initializer; a failure is an
 * {@link UnsatisfiedLinkError} that says which of the three was tried and why it failed.
 */
final class NativeLoader {
  private NativeLoader() {}

  static final String RESOURCE_ROOT = "/org/lancehost/native/";
  private static final String[] FILES = {"liblance_host.so.0", "liblance_host_jni.so"};

  /** Where the library was loaded from (for logs and tests). */
  static volatile String loadedFrom = "";

  static void load() {
    String path = System.getProperty("lancehost.jni.library");
    if (path == null || path.isEmpty()) path = System.getenv("LANCE_HOST_JNI_LIBRARY");
    if (path != null && !path.isEmpty()) {
      Path p = Paths.get(path).toAbsolutePath();
      if (!Files.isRegularFile(p)) {
        throw new UnsatisfiedLinkError("lance-host JNI library not found at " + p
            + " (set by lancehost.jni.library or LANCE_HOST_JNI_LIBRARY)");
      }
      System.load(p.toString());
      loadedFrom = p.toString();
      return;
    }
    String platform = platform();
    Properties sums = checksums(platform);
    if (sums != null) {
      Path jni = extract(platform, sums, nativeDir());
      // The library first, by its path: the glue's dependency then resolves to this very file
      // (by soname), not to another liblance_host.so.0 an LD_LIBRARY_PATH may name.
      System.load(jni.resolveSibling("liblance_host.so.0").toString());
      System.load(jni.toString());
      loadedFrom = jni.toString();
      return;
    }
    try {
      System.loadLibrary("lance_host_jni");
      loadedFrom = "java.library.path";
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError err = new UnsatisfiedLinkError("lance-host: this jar carries no natives for " + platform
          + " and lance_host_jni is not on java.library.path; set -Dlancehost.jni.library=<path to "
          + "liblance_host_jni.so> (" + e.getMessage() + ")");
      err.initCause(e);
      throw err;
    }
  }

  /** {@code linux-x86_64}, {@code linux-aarch64}, ... as the build names its resource folders. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) os = "linux";
    else if (os.startsWith("mac") || os.startsWith("darwin")) os = "macos";
    else if (os.startsWith("windows")) os = "windows";
    if (arch.equals("amd64") || arch.equals("x86_64")) arch = "x86_64";
    else if (arch.equals("aarch64") || arch.equals("arm64")) arch = "aarch64";
    return os + "-" + arch;
  }

  /** The checksums the build recorded for a platform's natives, or null when the jar has none. */
  static Properties checksums(String platform) {
    try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE_ROOT + platform + "/natives.properties")) {
      if (in == null) return null;
      Properties p = new Properties();
      p.load(in);
      for (String f : FILES) {
        String v = p.getProperty(f);
        if (v == null || !v.matches("[0-9a-f]{64} [0-9]+")) {
          throw new UnsatisfiedLinkError("lance-host: natives.properties in the jar has no valid entry for " + f);
        }
      }
      return p;
    } catch (IOException e) {
      throw linkError("cannot read the natives' checksums from the jar", e);
    }
  }

  /** Extracts a platform's natives under root (once: kept files of the recorded size are reused). */
  static Path extract(String platform, Properties sums, Path root) {
    StringBuilder key = new StringBuilder();
    for (String f : FILES) key.append(sums.getProperty(f), 0, 12);
    Path dir = root.resolve(key.toString());
    try {
      Files.createDirectories(dir);
      for (String f : FILES) {
        String[] v = sums.getProperty(f).split(" ");
        Path target = dir.resolve(f);
        if (Files.isRegularFile(target) && Files.size(target) == Long.parseLong(v[1])) continue;
        // Written under a unique name and moved into place: JVMs extracting at once never load a
        // half-written file, and the one that loses the race keeps the winner's identical copy.
        Path tmp = Files.createTempFile(dir, f + ".", ".part");
        try {
          try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE_ROOT + platform + "/" + f)) {
            if (in == null) throw new UnsatisfiedLinkError("lance-host: " + f + " is missing from the jar");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
          }
          String got = sha256(tmp);
          if (!got.equals(v[0])) {
            throw new UnsatisfiedLinkError("lance-host: " + f + " extracted from the jar has sha256 " + got
                + ", the build recorded " + v[0] + " (a damaged jar?)");
          }
          try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          } catch (AtomicMoveNotSupportedException | FileAlreadyExistsException e) {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
          }
        } finally {
          Files.deleteIfExists(tmp);
        }
      }
      // Marks this extraction as in use; those of other builds unused for a while are removed
      // (each is the size of the library: a developer's rebuilds would fill the disk).
      Files.setLastModifiedTime(dir, FileTime.fromMillis(System.currentTimeMillis()));
      prune(root, dir);
    } catch (IOException e) {
      throw linkError("cannot extract the natives from the jar into " + dir
          + " (choose another directory with -Dlancehost.native.dir)", e);
    }
    return dir.resolve("liblance_host_jni.so");
  }

  private static final long STALE_MILLIS = 60L * 60 * 1000;

  /**
   * Removes other builds' extractions under root not used for an hour. Best effort: a library a
   * running JVM loaded stays mapped after its file is gone.
   */
  private static void prune(Path root, Path keep) {
    long cutoff = System.currentTimeMillis() - STALE_MILLIS;
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, "[0-9a-f]*")) {
      for (Path d : dirs) {
        if (d.equals(keep) || !d.getFileName().toString().matches("[0-9a-f]{24}") || !Files.isDirectory(d)) continue;
        if (Files.getLastModifiedTime(d).toMillis() > cutoff) continue;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(d)) {
          for (Path f : files) Files.deleteIfExists(f);
        }
        Files.deleteIfExists(d);
      }
    } catch (IOException | RuntimeException e) {
      // another JVM pruning at the same time, or a file in use elsewhere: left for next time
    }
  }

  /** The extraction root: lancehost.native.dir, else a directory of this user's under java.io.tmpdir. */
  static Path nativeDir() {
    String d = System.getProperty("lancehost.native.dir");
    if (d != null && !d.isEmpty()) return Paths.get(d).toAbsolutePath();
    String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
    Path root = Paths.get(System.getProperty("java.io.tmpdir"), "lance-host-" + user);
    if (!Files.isDirectory(root)) {
      try {
        // Only this user may write where libraries are loaded from.
        Files.createDirectories(root, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      } catch (UnsupportedOperationException | IOException e) {
        // created by another JVM meanwhile, or a file system without POSIX permissions: checked below
      }
    }
    try {
      // A shared temporary directory: refuse one another user made or may write into.
      String owner = Files.getOwner(root).getName();
      boolean open = Files.getPosixFilePermissions(root).stream()
          .anyMatch(x -> x.name().startsWith("GROUP_WRITE") || x.name().startsWith("OTHERS_WRITE"));
      if (!owner.equals(System.getProperty("user.name")) || open) {
        throw new UnsatisfiedLinkError("lance-host: " + root + " belongs to " + owner + (open ? " and others may write it" : "")
            + "; set -Dlancehost.native.dir to a directory of your own");
      }
    } catch (UnsupportedOperationException | IOException e) {
      // no POSIX owner or permissions here: nothing to check
    }
    return root;
  }

  private static String sha256(Path p) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    byte[] buf = new byte[1 << 20];
    try (InputStream in = Files.newInputStream(p)) {
      for (int n = in.read(buf); n > 0; n = in.read(buf)) md.update(buf, 0, n);
    }
    return HexFormat.of().formatHex(md.digest());
  }

  private static UnsatisfiedLinkError linkError(String msg, Throwable cause) {
    UnsatisfiedLinkError e = new UnsatisfiedLinkError("lance-host: " + msg + ": " + cause);
    e.initCause(cause);
    return e;
  }
}
