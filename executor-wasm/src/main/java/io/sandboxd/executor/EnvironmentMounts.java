package io.sandboxd.executor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Makes an environment's mounts into host directories for one run (WIRE.md Q18): a bind is a host
 * directory at or beneath one the operator allows binding (and never one that overlaps the state
 * directory), a volume is {@code volumes/<source>} under the state directory and persists across
 * runs, a tmpfs is a fresh directory under {@code tmpfs/} removed when the run ends.
 */
public final class EnvironmentMounts {
  /** Docker's rule for volume names, bounded. */
  private static final Pattern VOLUME_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}");

  private final Path volumes;
  private final Path scratch;
  private final List<Path> bindAllow;

  /**
   * Mounts under {@code stateDir} ({@code volumes/}, {@code tmpfs/}); {@code bindAllow} are the
   * host directories binds may name (absolute, existing, and neither inside nor above the state
   * directory, or a bind would reach the node's keys and store). A tmpfs left by a daemon that
   * crashed is removed here.
   */
  public EnvironmentMounts(Path stateDir, List<Path> bindAllow) throws IOException {
    Path state = stateDir.toRealPath();
    this.volumes = state.resolve("volumes");
    this.scratch = state.resolve("tmpfs");
    List<Path> allow = new ArrayList<>();
    for (int i = 0; i < bindAllow.size(); i++) {
      Path p = bindAllow.get(i);
      String at = "bind_allow[" + i + "] " + p;
      if (!p.isAbsolute()) {
        throw new MountException(at + ": must be an absolute directory");
      }
      Path real;
      try {
        real = p.toRealPath();
      } catch (IOException e) {
        throw new MountException(at + ": does not exist", e);
      }
      if (!Files.isDirectory(real)) {
        throw new MountException(at + ": not a directory");
      }
      if (real.startsWith(state) || state.startsWith(real)) {
        throw new MountException(at + ": overlaps the state directory " + state);
      }
      allow.add(real);
    }
    this.bindAllow = List.copyOf(allow);
    removeTree(scratch);
  }

  /**
   * Checks that every mount of {@code env} can be made here, without making any: a bind outside
   * {@code bind_allow} or a bad volume name is refused, naming the mount.
   */
  public void check(UnitEnvironment env) {
    for (UnitEnvironment.Mount m : env.mounts()) {
      switch (m.kind()) {
        case bind -> bindSource(env, m);
        case volume -> volumeDir(env, m);
        case tmpfs -> {}
      }
    }
  }

  /** The directories of one live run, made now; close it when the run ends. */
  public Prepared prepare(UnitEnvironment env, String runId) {
    Prepared out = new Prepared();
    try {
      for (int i = 0; i < env.mounts().size(); i++) {
        UnitEnvironment.Mount m = env.mounts().get(i);
        Path dir =
            switch (m.kind()) {
              case bind -> bindSource(env, m);
              case volume -> Files.createDirectories(volumeDir(env, m));
              case tmpfs -> {
                Path fresh = scratch.resolve(runId + "-" + i);
                removeTree(fresh);
                out.scratch.add(fresh);
                yield Files.createDirectories(fresh);
              }
            };
        out.dirs.add(new MountedDir(m.target(), dir));
      }
    } catch (IOException | RuntimeException e) {
      out.close();
      if (e instanceof MountException me) {
        throw me;
      }
      throw new MountException(
          "environment " + env.name() + ": cannot make its mounts: " + e.getMessage(), e);
    }
    return out;
  }

  /**
   * The directories of a replay, named but never made (a replay reads nothing from them: every
   * storage input comes from the journal).
   */
  public List<MountedDir> named(UnitEnvironment env, String runId) {
    List<MountedDir> out = new ArrayList<>();
    for (int i = 0; i < env.mounts().size(); i++) {
      UnitEnvironment.Mount m = env.mounts().get(i);
      Path dir =
          switch (m.kind()) {
            case bind -> Path.of(m.source()).toAbsolutePath().normalize();
            case volume -> volumes.resolve(m.source());
            case tmpfs -> scratch.resolve(runId + "-" + i);
          };
      out.add(new MountedDir(m.target(), dir));
    }
    return out;
  }

  private Path bindSource(UnitEnvironment env, UnitEnvironment.Mount m) {
    String at = "environment " + env.name() + ": mount " + m.target() + ": bind source ";
    Path p = Path.of(m.source());
    if (!p.isAbsolute()) {
      throw new MountException(at + m.source() + " is not an absolute path");
    }
    Path real;
    try {
      real = p.toRealPath();
    } catch (IOException e) {
      throw new MountException(at + m.source() + " does not exist", e);
    }
    if (!Files.isDirectory(real, LinkOption.NOFOLLOW_LINKS)) {
      throw new MountException(at + m.source() + " is not a directory");
    }
    for (Path allowed : bindAllow) {
      if (real.startsWith(allowed)) {
        return real;
      }
    }
    throw new MountException(
        at
            + m.source()
            + (real.toString().equals(m.source()) ? "" : " (" + real + ")")
            + " is not at or beneath a directory in the configuration's bind_allow "
            + bindAllow);
  }

  private Path volumeDir(UnitEnvironment env, UnitEnvironment.Mount m) {
    if (!VOLUME_NAME.matcher(m.source()).matches()) {
      throw new MountException(
          "environment "
              + env.name()
              + ": mount "
              + m.target()
              + ": volume name \""
              + m.source()
              + "\" must be [A-Za-z0-9][A-Za-z0-9_.-]* (at most 128 characters)");
    }
    return volumes.resolve(m.source());
  }

  /** Deletes {@code dir} and everything beneath it, never following a link. */
  public static void removeTree(Path dir) throws IOException {
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** One run's directories; closing removes its tmpfs directories. */
  public static final class Prepared implements AutoCloseable {
    private final List<MountedDir> dirs = new ArrayList<>();
    private final List<Path> scratch = new ArrayList<>();

    public List<MountedDir> dirs() {
      return List.copyOf(dirs);
    }

    @Override
    public void close() {
      for (Path p : scratch) {
        try {
          removeTree(p);
        } catch (IOException e) {
          // Left for the next start, which clears tmpfs/ entirely.
        }
      }
    }
  }
}
