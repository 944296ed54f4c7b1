package org.lancehost;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The natives inside the jar: found, extracted once, checked, loaded. */
class NativeLoaderTest {
  static String sha256(InputStream in) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    byte[] buf = new byte[1 << 20];
    for (int n = in.read(buf); n > 0; n = in.read(buf)) md.update(buf, 0, n);
    return HexFormat.of().formatHex(md.digest());
  }

  @Test
  void theLibraryIsLoadedFromTheJarsNativesWhenNoPathIsGiven() throws Exception {
    assertNull(System.getProperty("lancehost.jni.library"), "the tests load the natives the build packaged");
    assertFalse(LanceHost.version().isEmpty()); // loads the library
    Path loaded = Paths.get(NativeLoader.loadedFrom);
    assertEquals("liblance_host_jni.so", loaded.getFileName().toString());
    assertTrue(loaded.startsWith(NativeLoader.nativeDir()), loaded + " is not under " + NativeLoader.nativeDir());
    // what was loaded is byte for byte what the build put into the jar, and so is its neighbour
    Properties sums = NativeLoader.checksums(NativeLoader.platform());
    assertNotNull(sums, "the jar carries natives for " + NativeLoader.platform());
    for (String f : new String[] {"liblance_host_jni.so", "liblance_host.so.0"}) {
      try (InputStream in = Files.newInputStream(loaded.resolveSibling(f))) {
        assertEquals(sums.getProperty(f).split(" ")[0], sha256(in), f);
      }
      try (InputStream in = NativeLoader.class.getResourceAsStream(NativeLoader.RESOURCE_ROOT + NativeLoader.platform() + "/" + f)) {
        assertEquals(sums.getProperty(f).split(" ")[0], sha256(in), f + " in the jar");
      }
    }
  }

  @Test
  void aTruncatedExtractionIsReplacedAndADamagedOneRefused(@TempDir Path root) throws IOException {
    String platform = NativeLoader.platform();
    Properties sums = NativeLoader.checksums(platform);
    // another build's extraction unused for hours is removed; one used a minute ago is kept
    Path stale = Files.createDirectories(root.resolve("a".repeat(24)));
    Files.write(stale.resolve("liblance_host_jni.so"), new byte[3]);
    Files.setLastModifiedTime(stale, FileTime.fromMillis(System.currentTimeMillis() - 3 * 3600_000L));
    Path recent = Files.createDirectories(root.resolve("b".repeat(24)));
    Files.setLastModifiedTime(recent, FileTime.fromMillis(System.currentTimeMillis() - 60_000L));
    Path jni = NativeLoader.extract(platform, sums, root);
    assertFalse(Files.exists(stale), "a stale extraction is pruned");
    assertTrue(Files.isDirectory(recent), "a recent one is kept");
    long size = Files.size(jni);
    assertEquals(Long.parseLong(sums.getProperty("liblance_host_jni.so").split(" ")[1]), size);
    // a file cut short (a JVM killed while copying, in an older layout) is written again
    Files.write(jni, new byte[10]);
    assertEquals(jni, NativeLoader.extract(platform, sums, root));
    assertEquals(size, Files.size(jni));
    // a recorded checksum the jar's bytes do not have: refused, nothing left in place
    Properties wrong = new Properties();
    wrong.putAll(sums);
    String[] v = sums.getProperty("liblance_host_jni.so").split(" ");
    wrong.setProperty("liblance_host_jni.so", "0".repeat(64) + " " + v[1]);
    Path other = root.resolve("other");
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLoader.extract(platform, wrong, other));
    assertTrue(e.getMessage().contains("damaged jar"), e.getMessage());
    try (var files = Files.walk(other)) {
      assertTrue(files.noneMatch(p -> p.getFileName().toString().startsWith("liblance_host_jni.so")),
          "no half-checked library is left to load");
    }
  }
}
