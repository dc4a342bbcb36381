package io.sandboxd.executor;

import io.sandboxd.attest.Blake3;
import io.sandboxd.enforcer.ProgramResolver;
import io.sandboxd.enforcer.RegularFile;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A private, daemon-owned directory holding the exact bytes the resolver hashed for one exec (each
 * copy hashed again as it is written, and refused if the file changed since): each binary at {@code
 * b3/<hash>/<name>} (read-only), and {@code bin/}, the child's only PATH, linking every program the
 * chain runs by bare name to its copy. The program is executed from its copy by absolute path, so
 * no file can be swapped between the hash and the exec.
 */
final class ExecImage implements AutoCloseable {
  private final Path dir;
  private final Path top;

  private ExecImage(Path dir, Path top) {
    this.dir = dir;
    this.top = top;
  }

  /** The copies would take the disk holding them into the node's reserve: none was made. */
  static final class NoRoom extends IOException {
    private static final long serialVersionUID = 1L;

    NoRoom(String message) {
      super(message);
    }
  }

  /**
   * Writes the copies, their bytes first claimed under {@code reserve} on the disk they go to (up
   * to 512 MiB a chain, for each live exec); the resolution must have read the program the caller
   * named.
   */
  static ExecImage of(ProgramResolver.Resolution resolution, DiskReserve reserve)
      throws IOException {
    return of(resolution, reserve, Path.of(System.getProperty("java.io.tmpdir")));
  }

  /** As {@link #of(ProgramResolver.Resolution, DiskReserve)}, the image made in {@code parent}. */
  static ExecImage of(ProgramResolver.Resolution resolution, DiskReserve reserve, Path parent)
      throws IOException {
    ProgramResolver.Binary topBinary =
        resolution.top().orElseThrow(() -> new IOException("the program was not read"));
    // Claimed before anything is made, on the disk the image goes to: a refusal leaves nothing.
    long bytes = copiedBytes(resolution);
    if (!reserve.claims("exec", parent, bytes)) {
      throw new NoRoom("no room for " + bytes + " bytes of programs to exec");
    }
    Path dir = null;
    try {
      dir =
          Files.createTempDirectory(
              parent,
              "sandboxd-exec-",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Path bin = Files.createDirectory(dir.resolve("bin"));
      Files.createDirectory(dir.resolve("work"));
      Path top = null;
      for (ProgramResolver.Binary b : resolution.binaries()) {
        if (!executed(b)) {
          continue;
        }
        Path copy = copy(dir, b);
        if (b == topBinary) {
          top = copy;
        }
        if (b.depth() > 0 && b.word().indexOf('/') < 0) {
          Path link = bin.resolve(b.word());
          Files.deleteIfExists(link);
          Files.createSymbolicLink(link, copy);
        }
      }
      return new ExecImage(dir, top);
    } catch (IOException | RuntimeException e) {
      if (dir != null) {
        delete(dir);
      }
      throw e;
    } finally {
      // Written or deleted: either way the disk now shows it.
      reserve.landed(bytes);
    }
  }

  /** The bytes {@link #of} writes: each binary the chain executes, once for each copy's name. */
  private static long copiedBytes(ProgramResolver.Resolution resolution) {
    return resolution.binaries().stream()
        .filter(ExecImage::executed)
        .collect(Collectors.toMap(ExecImage::copyName, ProgramResolver.Binary::size, (a, b) -> a))
        .values()
        .stream()
        .mapToLong(Long::longValue)
        .sum();
  }

  /**
   * Where a binary's copy lies in the image: {@code b3/<hash>/<name>}, keeping the invoked file
   * name so that programs that act on argv[0] (busybox applets) still can.
   */
  private static String copyName(ProgramResolver.Binary b) {
    String base = b.word().substring(b.word().lastIndexOf('/') + 1);
    return "b3/" + b.b3Hex() + "/" + (base.isEmpty() ? "program" : base);
  }

  /** Whether a binary is executed, so copied: a shell's script operand is read by the shell. */
  private static boolean executed(ProgramResolver.Binary b) {
    return !(b.script() && b.depth() > 0);
  }

  private static Path copy(Path dir, ProgramResolver.Binary b) throws IOException {
    Path copy = dir.resolve(copyName(b));
    if (!Files.exists(copy)) {
      Files.createDirectories(copy.getParent());
      // Streamed and hashed again as it is copied: the copy runs only if it is what was decided on.
      // Opened as the resolver opens it: a FIFO or link put there since is refused, not waited on.
      Blake3.Hasher hasher = new Blake3.Hasher();
      long copied;
      try (InputStream in = openUnchanged(b);
          OutputStream out = Files.newOutputStream(copy, StandardOpenOption.CREATE_NEW)) {
        copied = hasher.update(in, out, b.size());
      }
      if (copied != b.size() || !hasher.hex().equals(b.b3Hex())) {
        throw new IOException(b.file() + " changed after it was hashed");
      }
      Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("r-x------"));
    }
    return copy;
  }

  private static InputStream openUnchanged(ProgramResolver.Binary b) throws IOException {
    try {
      return RegularFile.open(b.file());
    } catch (IOException e) {
      throw new IOException(b.file() + " changed after it was hashed", e);
    }
  }

  /** The absolute path of the copy of the program the caller named. */
  Path program() {
    return top;
  }

  /** The child's PATH: the copies of the programs the chain runs by name, and nothing else. */
  Path bin() {
    return dir.resolve("bin");
  }

  /** An empty working directory, for a run without storage. */
  Path emptyWorkDir() {
    return dir.resolve("work");
  }

  @Override
  public void close() {
    delete(dir);
  }

  private static void delete(Path dir) {
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              });
    } catch (IOException | UncheckedIOException e) {
      // a leftover private temp directory holds only copies of allowed binaries
    }
  }
}
