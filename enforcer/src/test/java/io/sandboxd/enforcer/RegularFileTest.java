package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Only a regular file is opened, and nothing else is waited on. */
class RegularFileTest {
  @TempDir Path dir;

  @Test
  void aRegularFileIsReadAndEveryOtherKindIsRefusedWithoutWaiting() throws Exception {
    byte[] bytes = new byte[100_000];
    new java.util.Random(11).nextBytes(bytes);
    Path file = Files.write(dir.resolve("file"), bytes);
    try (InputStream in = RegularFile.open(file)) {
      assertArrayEquals(bytes, in.readAllBytes());
    }
    Path fifo = dir.resolve("fifo");
    assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
    Path link = Files.createSymbolicLink(dir.resolve("link"), file);
    Path sub = Files.createDirectory(dir.resolve("sub"));
    for (Path p : new Path[] {fifo, link, sub, Path.of("/dev/null")}) {
      IOException e =
          assertTimeoutPreemptively(
              Duration.ofSeconds(10),
              () -> assertThrows(IOException.class, () -> RegularFile.open(p).close()),
              p + " was waited on");
      assertTrue(e.getMessage().startsWith(p + ": "), e.getMessage());
    }
    IOException missing =
        assertThrows(IOException.class, () -> RegularFile.open(dir.resolve("missing")));
    assertTrue(
        missing.getMessage().startsWith(dir.resolve("missing") + ": "), missing.getMessage());
  }
}
