package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.enforcer.ProgramResolver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What runs is what was hashed: the image copies a file only if it still holds those bytes. */
class ExecImageTest {
  @TempDir Path dir;

  private ProgramResolver.Resolution resolve(Path program) {
    ProgramResolver r = new ProgramResolver(Path.of("/"), List.of(), Optional.of(dir));
    return r.resolveWithBinaries(List.of("./" + program.getFileName()));
  }

  private Path program(byte[] bytes) throws IOException {
    Path p = dir.resolve("prog");
    Files.write(p, bytes);
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
    return p;
  }

  @Test
  void theCopyHoldsTheBytesHashed() throws Exception {
    byte[] bytes = new byte[200_000];
    new java.util.Random(7).nextBytes(bytes);
    ProgramResolver.Resolution r = resolve(program(bytes));
    try (ExecImage image = ExecImage.of(r)) {
      assertArrayEquals(bytes, Files.readAllBytes(image.program()));
    }
  }

  @Test
  void aFileChangedOrReplacedAfterItWasHashedIsNotCopied() throws Exception {
    for (int change = 0; change < 3; change++) {
      byte[] bytes = new byte[200_000];
      Path p = program(bytes);
      ProgramResolver.Resolution r = resolve(p);
      // The same size with one byte flipped, a byte longer, a byte shorter.
      byte[] swapped =
          change == 0
              ? flipped(bytes, 150_000)
              : java.util.Arrays.copyOf(bytes, bytes.length + (change == 1 ? 1 : -1));
      Files.write(p, swapped);
      IOException e = assertThrows(IOException.class, () -> ExecImage.of(r).close());
      assertTrue(e.getMessage().contains("changed after it was hashed"), e.getMessage());
    }
    // The same bytes behind a symbolic link: not the regular file the resolver read.
    byte[] bytes = new byte[1000];
    Path p = program(bytes);
    ProgramResolver.Resolution r = resolve(p);
    Path same = Files.write(dir.resolve("same"), bytes);
    Files.delete(p);
    Files.createSymbolicLink(p, same);
    IOException e = assertThrows(IOException.class, () -> ExecImage.of(r).close());
    assertTrue(e.getMessage().contains("changed after it was hashed"), e.getMessage());
  }

  private static byte[] flipped(byte[] bytes, int at) {
    byte[] b = bytes.clone();
    b[at] ^= 1;
    return b;
  }
}
