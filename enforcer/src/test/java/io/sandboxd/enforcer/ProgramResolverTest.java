package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the resolver sees through, step by step. */
class ProgramResolverTest {
  @TempDir Path root;
  private ProgramResolver resolver;

  private void file(String path, String content) throws IOException {
    Path p = root.resolve(path.substring(1));
    Files.createDirectories(p.getParent());
    Files.writeString(p, content);
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  private static String b3(String content) {
    return Blake3.hex(content.getBytes(StandardCharsets.UTF_8));
  }

  @BeforeEach
  void setUp() throws IOException {
    file("/bin/env", "ENV");
    file("/bin/sh", "SH");
    file("/bin/nice", "NICE");
    file("/bin/target", "TARGET");
    file("/bin/loop.sh", "#!/bin/loop.sh\n");
    resolver = new ProgramResolver(root, List.of("/bin"));
  }

  private List<String> names(ExecRequest r) {
    return r.steps().stream().map(ExecStep::name).toList();
  }

  @Test
  void seesThroughNestedWrappers() {
    ExecRequest r = resolver.resolve(List.of("env", "A=1", "sh", "-c", "nice -n 3 target x"));
    assertEquals(List.of("env", "sh", "nice", "target"), names(r));
    assertEquals(b3("TARGET"), r.target().b3Hex().orElseThrow());
    assertTrue(r.unresolved().isEmpty());
  }

  @Test
  void anAbsoluteSymlinkTargetStaysInsideTheRoot() throws IOException {
    Files.createSymbolicLink(root.resolve("bin/t2"), Path.of("/bin/target"));
    ExecRequest r = resolver.resolve(List.of("t2"));
    assertEquals(List.of("t2"), names(r));
    assertEquals(b3("TARGET"), r.target().b3Hex().orElseThrow());
  }

  @Test
  void aSymlinkOutOfTheRootIsNotFollowed() throws IOException {
    Files.createSymbolicLink(
        root.resolve("bin/out"), Path.of("../../../../../../nonexistent-sandboxd-target"));
    ExecRequest r = resolver.resolve(List.of("/bin/out"));
    assertTrue(r.unresolved().isPresent());
  }

  @Test
  void aSelfInterpretingScriptStopsAtTheDepthLimit() {
    ExecRequest r = resolver.resolve(List.of("/bin/loop.sh"));
    assertTrue(r.unresolved().orElseThrow().contains("deeper"), r.unresolved().toString());
  }

  @Test
  void searchPathNeedsTheExecutableBit() throws IOException {
    Path p = root.resolve("bin/plain");
    Files.writeString(p, "PLAIN");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-r--r--"));
    assertTrue(resolver.resolve(List.of("plain")).unresolved().isPresent());
  }

  @Test
  void aRelativePathIsFoundInTheWorkDirectoryAndNamedByItsPath() throws IOException {
    file("/work/bin/target", "COPY");
    ProgramResolver inWork =
        new ProgramResolver(root, List.of("/bin"), java.util.Optional.of(root.resolve("work")));
    ExecRequest rel = inWork.resolve(List.of("bin/target"));
    assertEquals(List.of("bin/target"), names(rel), "a path name no name entry can match");
    assertEquals(b3("COPY"), rel.target().b3Hex().orElseThrow());
    ExecRequest abs = inWork.resolve(List.of("/work/bin/target"));
    assertEquals(List.of("/work/bin/target"), names(abs));
    ExecRequest bare = inWork.resolve(List.of("target"));
    assertEquals(b3("TARGET"), bare.target().b3Hex().orElseThrow(), "bare: the search path");
    assertTrue(resolver.resolve(List.of("bin/target")).unresolved().isPresent(), "no work dir");
    assertTrue(inWork.resolve(List.of("../bin/target")).unresolved().isPresent(), "escape");
    ProgramResolver.Resolution r = inWork.resolveWithBinaries(List.of("env", "bin/target"));
    assertEquals(List.of("env", "bin/target"), names(r.request()));
    ProgramResolver.Binary target = r.binaries().get(1);
    assertEquals(root.resolve("work/bin/target"), target.file());
    assertEquals(b3("COPY"), target.b3Hex());
    assertEquals(4, target.size());
  }

  @Test
  void aChainOfLargeFilesStopsAtItsBudgetHoweverItIsBuilt() throws IOException {
    // Sparse files, free to make: a script naming itself, and a ring of three naming each other.
    long size = ProgramResolver.MAX_BINARY_BYTES - 1;
    sparse("/work/self", "#!./self\n", size);
    sparse("/work/a", "#!./b\n", size);
    sparse("/work/b", "#!./c\n", size);
    sparse("/work/c", "#!./a\n", size);
    ProgramResolver inWork =
        new ProgramResolver(root, List.of("/bin"), java.util.Optional.of(root.resolve("work")));
    for (String start : List.of("./self", "./a")) {
      ProgramResolver.Resolution r = inWork.resolveWithBinaries(List.of(start));
      String why = r.request().unresolved().orElseThrow();
      assertTrue(why.contains("pass " + ProgramResolver.MAX_CHAIN_BYTES + " bytes"), why);
      long read = r.binaries().stream().mapToLong(ProgramResolver.Binary::size).sum();
      assertTrue(read <= ProgramResolver.MAX_CHAIN_BYTES, start + ": read " + read);
      assertEquals(2, r.binaries().size(), start);
    }
    // One file past the per-file bound is refused on its own.
    sparse("/work/huge", "#!/bin/sh\n", ProgramResolver.MAX_BINARY_BYTES + 1);
    String why = inWork.resolve(List.of("./huge")).unresolved().orElseThrow();
    assertTrue(why.contains("larger than " + ProgramResolver.MAX_BINARY_BYTES), why);
  }

  private void sparse(String path, String head, long size) throws IOException {
    file(path, head);
    try (java.io.RandomAccessFile f =
        new java.io.RandomAccessFile(root.resolve(path.substring(1)).toFile(), "rw")) {
      f.setLength(size);
    }
  }

  @Test
  void aProgramSwappedForAFifoWhileItIsReadNeverHoldsTheResolver() throws Exception {
    // Another run's program may swap the file it execs between the resolver's check and its open:
    // a FIFO opened to read would block until a writer came, and none ever does. Two inodes, a
    // regular file and a FIFO, are renamed over the program in turn for as long as it is resolved.
    Path program = root.resolve("bin/target");
    Path regular = root.resolve("regular");
    Path fifo = root.resolve("fifo");
    Files.writeString(regular, "TARGET");
    Files.setPosixFilePermissions(regular, PosixFilePermissions.fromString("rwxr-xr-x"));
    Process mk = new ProcessBuilder("mkfifo", "-m", "755", fifo.toString()).start();
    assertEquals(0, mk.waitFor());
    java.util.concurrent.atomic.AtomicBoolean done =
        new java.util.concurrent.atomic.AtomicBoolean();
    Thread swapper =
        new Thread(
            () -> {
              for (long i = 0; !done.get(); i++) {
                Path next = root.resolve("next");
                try {
                  Files.deleteIfExists(next);
                  Files.createLink(next, i % 2 == 0 ? fifo : regular);
                  Files.move(next, program, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              }
            });
    swapper.setDaemon(true);
    swapper.start();
    int[] seen = new int[2];
    try {
      org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
          java.time.Duration.ofSeconds(30),
          () -> {
            for (int i = 0; i < 5_000; i++) {
              ExecRequest r = resolver.resolve(List.of("target"));
              seen[r.unresolved().isPresent() ? 1 : 0]++;
            }
          },
          "the resolver blocked opening a FIFO");
    } finally {
      done.set(true);
      // The swapper must stop before the temporary directory is deleted: a link it made during the
      // deletion left the directory not empty (CI, stop 69).
      swapper.join(10_000);
      // A reader still blocked in open is let go by any writer. Opening a FIFO to read and write
      // never blocks on Linux, so this lets one go without a thread of its own.
      new java.io.RandomAccessFile(fifo.toFile(), "rw").close();
    }
    assertFalse(swapper.isAlive(), "the swapper did not stop");
    // Both sides of the race were met: the file resolved and the FIFO refused.
    assertTrue(seen[0] > 0 && seen[1] > 0, "resolved " + seen[0] + ", refused " + seen[1]);
  }
}
