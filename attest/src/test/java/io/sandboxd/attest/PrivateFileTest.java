package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** New private files appear whole, mode 0600, or not at all; an existing one is never replaced. */
class PrivateFileTest {
  @TempDir Path dir;

  private List<String> names() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void aCreatedFileHoldsItsBytesAtMode0600AndNoTemporaryIsLeft() throws IOException {
    byte[] body = "0123456789abcdef\n".getBytes(StandardCharsets.US_ASCII);
    Path f = dir.resolve("node.key");
    PrivateFile.create(f, body);
    assertArrayEquals(body, Files.readAllBytes(f));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    assertEquals(List.of("node.key"), names());
  }

  @Test
  void anExistingFileIsNeitherReplacedNorJoinedByATemporary() throws IOException {
    Path f = Files.writeString(dir.resolve("host-id"), "kept\n");
    assertThrows(
        FileAlreadyExistsException.class,
        () -> PrivateFile.create(f, "other\n".getBytes(StandardCharsets.UTF_8)));
    assertEquals("kept\n", Files.readString(f));
    assertEquals(List.of("host-id"), names());
  }

  @Test
  void aFileThatCannotBeWrittenIsNamedAndLeavesNothing() {
    Path f = dir.resolve("missing/node.key");
    IOException e =
        assertThrows(IOException.class, () -> PrivateFile.create(f, new byte[] {1, 2, 3}));
    assertTrue(e.getMessage().startsWith(f + ": cannot create: "), e.getMessage());
    assertFalse(Files.exists(f));
  }
}
