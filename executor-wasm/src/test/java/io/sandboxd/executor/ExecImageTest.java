package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.enforcer.ProgramResolver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
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
    try (ExecImage image = ExecImage.of(r, DiskReserve.NONE)) {
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
      IOException e =
          assertThrows(IOException.class, () -> ExecImage.of(r, DiskReserve.NONE).close());
      assertTrue(e.getMessage().contains("changed after it was hashed"), e.getMessage());
    }
    // The same bytes behind a symbolic link: not the regular file the resolver read.
    byte[] bytes = new byte[1000];
    Path p = program(bytes);
    ProgramResolver.Resolution r = resolve(p);
    Path same = Files.write(dir.resolve("same"), bytes);
    Files.delete(p);
    Files.createSymbolicLink(p, same);
    IOException e =
        assertThrows(IOException.class, () -> ExecImage.of(r, DiskReserve.NONE).close());
    assertTrue(e.getMessage().contains("changed after it was hashed"), e.getMessage());
  }

  @Test
  void copiesThatWouldTakeTheDisksReserveAreRefusedAndClaimNothingAfter() throws Exception {
    byte[] bytes = new byte[300_000];
    ProgramResolver.Resolution r = resolve(program(bytes));
    List<String> told = new ArrayList<>();
    long[] usable = {1_000_000};
    DiskReserve.Room room = DiskReserveTest.room(1L << 40, at -> usable[0]);
    // 800,000 bytes kept: a 300,000-byte copy with a million free would leave too little.
    DiskReserve reserve =
        new DiskReserve(800_000, room, (call, what) -> told.add(call + ": " + what));
    Path images = Files.createDirectory(dir.resolve("images"));
    assertThrows(ExecImage.NoRoom.class, () -> ExecImage.of(r, reserve, images).close());
    try (Stream<Path> left = Files.list(images)) {
      assertEquals(0, left.count(), "a refused image leaves no directory behind");
    }
    assertEquals(1, told.size(), told.toString());
    assertTrue(told.get(0).startsWith("exec: refused a unit's write of 300000 bytes"), told.get(0));
    // With room, the copy is made, and once made it is no longer counted as in flight: the disk
    // shows it. The next image, on a disk that shows the first, is judged by the disk alone.
    usable[0] = 2_000_000;
    try (ExecImage image = ExecImage.of(r, reserve, images)) {
      assertArrayEquals(bytes, Files.readAllBytes(image.program()));
      assertEquals(2_000_000 - 800_000, reserve.headroom(dir));
    }
  }

  private static byte[] flipped(byte[] bytes, int at) {
    byte[] b = bytes.clone();
    b[at] ^= 1;
    return b;
  }
}
