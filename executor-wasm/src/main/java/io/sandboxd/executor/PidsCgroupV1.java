package io.sandboxd.executor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The daemon's own directory in a cgroup v1 {@code pids} hierarchy, on a legacy or hybrid host
 * (whose cgroup v2 tree, if any, cannot enable the pids controller, bound to v1 there). Each exec'd
 * tree also joins a child of it, whose {@code pids.max} the kernel checks at every fork and thread
 * start, so a fork flood cannot outrun the count of the tree's processes.
 */
final class PidsCgroupV1 {
  private static volatile Optional<Optional<Path>> parent = Optional.empty();

  private PidsCgroupV1() {}

  /** The directory below which trees get theirs, probed once; empty where none can be made. */
  static Optional<Path> parent() {
    Optional<Optional<Path>> known = parent;
    if (known.isPresent()) {
      return known.get();
    }
    synchronized (PidsCgroupV1.class) {
      // Once: two probes at a time would race for the probe directory's name.
      if (parent.isEmpty()) {
        parent = Optional.of(probe());
      }
      return parent.get();
    }
  }

  private static Optional<Path> probe() {
    try {
      Optional<Path> dir =
          locate(
              Files.readAllLines(Path.of("/proc/self/mountinfo")),
              Files.readAllLines(Path.of("/proc/self/cgroup")));
      if (dir.isEmpty()) {
        return dir;
      }
      Path probe =
          dir.get().resolve(ProcessTree.CGROUP_PREFIX + "probe-" + ProcessHandle.current().pid());
      Files.createDirectory(probe);
      boolean usable;
      try {
        usable =
            Files.isWritable(probe.resolve("pids.max"))
                && Files.isWritable(probe.resolve("cgroup.procs"));
      } finally {
        Files.delete(probe);
      }
      if (usable) {
        ProcessTree.sweepStale(dir.get());
      }
      return usable ? dir : Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /**
   * The directory of this process's cgroup in the v1 hierarchy that holds the pids controller, from
   * {@code /proc/self/mountinfo}'s and {@code /proc/self/cgroup}'s lines; empty where no such
   * hierarchy is mounted or the cgroup lies outside what the mount shows (a container's view).
   */
  static Optional<Path> locate(List<String> mountinfo, List<String> cgroups) {
    String mountRoot = null;
    String mountPoint = null;
    for (String line : mountinfo) {
      int dash = line.indexOf(" - ");
      if (dash < 0) {
        continue;
      }
      String[] after = line.substring(dash + 3).split(" ");
      String[] before = line.substring(0, dash).split(" ");
      if (after.length >= 3
          && after[0].equals("cgroup")
          && List.of(after[2].split(",")).contains("pids")
          && before.length >= 5) {
        mountRoot = unescape(before[3]);
        mountPoint = unescape(before[4]);
        break;
      }
    }
    if (mountPoint == null) {
      return Optional.empty();
    }
    for (String line : cgroups) {
      String[] f = line.split(":", 3);
      if (f.length == 3 && List.of(f[1].split(",")).contains("pids")) {
        String own = f[2];
        String rest;
        if (mountRoot.equals("/")) {
          rest = own;
        } else if (own.equals(mountRoot)) {
          rest = "/";
        } else if (own.startsWith(mountRoot + "/")) {
          rest = own.substring(mountRoot.length());
        } else {
          return Optional.empty();
        }
        return Optional.of(Path.of(mountPoint, rest.substring(1)).normalize());
      }
    }
    return Optional.empty();
  }

  /** A mountinfo field with its octal escapes ({@code \040} for a space) decoded. */
  private static String unescape(String field) {
    StringBuilder out = new StringBuilder(field.length());
    for (int i = 0; i < field.length(); i++) {
      char c = field.charAt(i);
      if (c == '\\'
          && i + 3 < field.length()
          && field.substring(i + 1, i + 4).chars().allMatch(d -> d >= '0' && d <= '7')) {
        out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
        i += 3;
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /**
   * Makes the tree's directory {@code name} below {@code parent}, the kernel holding it to {@code
   * maxTasks} tasks (processes and their threads).
   */
  static Path open(Path parent, String name, long maxTasks) throws IOException {
    Path dir = parent.resolve(name);
    Files.createDirectory(dir);
    try {
      Files.writeString(dir.resolve("pids.max"), String.valueOf(maxTasks));
    } catch (IOException e) {
      ProcessTree.removeQuietly(dir);
      throw e;
    }
    return dir;
  }
}
