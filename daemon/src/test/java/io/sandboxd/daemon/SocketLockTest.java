package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SocketLockTest {
  @TempDir Path tmp;

  @Test
  void secondAcquireInThisJvmFailsNamingTheSocket() throws IOException {
    Path socket = tmp.resolve("sandboxd.sock");
    try (SocketLock first = SocketLock.acquire(socket)) {
      // The JDK reports the same JVM's overlapping lock as OverlappingFileLockException, not null.
      IOException e = assertThrows(IOException.class, () -> SocketLock.acquire(socket));
      assertTrue(e.getMessage().contains(socket.toString()), e.getMessage());
      assertTrue(e.getMessage().contains("live daemon"), e.getMessage());
      assertTrue(Files.exists(tmp.resolve("sandboxd.sock.lock")));
    }
    // Released: it can be taken again, and released again.
    SocketLock again = SocketLock.acquire(socket);
    again.close();
  }

  @Test
  void aPlantedLinkOrHardLinkIsRefusedAndNotFollowed() throws IOException {
    Path socket = tmp.resolve("sandboxd.sock");
    Path target = tmp.resolve("target");
    Files.createSymbolicLink(tmp.resolve("sandboxd.sock.lock"), target);
    IOException e = assertThrows(IOException.class, () -> SocketLock.acquire(socket));
    assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
    assertTrue(Files.notExists(target), "the link's target was created");

    Files.delete(tmp.resolve("sandboxd.sock.lock"));
    Files.writeString(target, "precious");
    Files.createLink(tmp.resolve("sandboxd.sock.lock"), target);
    IOException hard = assertThrows(IOException.class, () -> SocketLock.acquire(socket));
    assertTrue(hard.getMessage().contains("2 hard links"), hard.getMessage());
    assertEquals("precious", Files.readString(target));
  }

  @Test
  void differentSocketsDoNotContend() throws IOException {
    try (SocketLock a = SocketLock.acquire(tmp.resolve("a.sock"));
        SocketLock b = SocketLock.acquire(tmp.resolve("b.sock"))) {
      assertTrue(Files.exists(tmp.resolve("a.sock.lock")));
      assertTrue(Files.exists(tmp.resolve("b.sock.lock")));
    }
  }

  /**
   * Another process holds the lock. (util-linux {@code flock} would not do: it takes flock(2)
   * locks, which Linux keeps apart from the fcntl locks {@code FileChannel.tryLock} takes.)
   */
  @Test
  void lockHeldByAnotherProcessRefusesUntilThatProcessDies() throws Exception {
    Path socket = tmp.resolve("sandboxd.sock");
    String java = ProcessHandle.current().info().command().orElse("java");
    Process child =
        new ProcessBuilder(
                List.of(
                    java,
                    "-cp",
                    System.getProperty("java.class.path"),
                    SocketLockHolder.class.getName(),
                    socket.toString()))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    try {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("held", out.readLine());
      IOException e = assertThrows(IOException.class, () -> SocketLock.acquire(socket));
      assertTrue(e.getMessage().contains(socket.toString()), e.getMessage());
    } finally {
      // A killed holder must not leave the lock behind (a crashed daemon must not block restart).
      child.destroyForcibly();
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    SocketLock mine = SocketLock.acquire(socket);
    mine.close();
  }
}
