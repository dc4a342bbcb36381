package io.sandboxd.executor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Whether a process is one that this daemon's exec calls started: it lives in an exec cgroup, or
 * this process is among its ancestors. Such a process runs as the daemon's own user, so the daemon
 * asks this of every peer on its socket before it lets the node policy admit that user.
 */
public final class ExecLineage {
  /** Ancestors walked at most: deeper trees are cut by the exec's process bound anyway. */
  private static final int MAX_DEPTH = 256;

  private ExecLineage() {}

  /** True when {@code pid} is in one of the exec trees of this daemon (or a gone daemon's). */
  public static boolean startedByExec(long pid) {
    if (pid <= 1) {
      return false;
    }
    if (inExecCgroup(pid)) {
      return true;
    }
    if (!ProcessTree.anyOutsideCgroups() && Landlock.abi() >= 1) {
      // Every tree is in a cgroup it cannot leave (the parent's cgroup.procs is out of its reach):
      // the walk up its ancestors would find nothing more.
      return false;
    }
    long self = ProcessHandle.current().pid();
    long at = pid;
    for (int i = 0; i < MAX_DEPTH && at > 1; i++) {
      long parent = parentOf(at);
      if (parent == self) {
        return true;
      }
      at = parent;
    }
    return false;
  }

  private static boolean inExecCgroup(long pid) {
    try {
      for (String line :
          Files.readAllLines(Path.of("/proc/" + pid + "/cgroup"), StandardCharsets.UTF_8)) {
        // The v2 line (0::) or, on a legacy or hybrid host, the v1 pids hierarchy's.
        String[] f = line.split(":", 3);
        if (f.length == 3
            && (f[0].equals("0") || Arrays.asList(f[1].split(",")).contains("pids"))
            && f[2].contains("/" + ProcessTree.CGROUP_PREFIX)) {
          return true;
        }
      }
    } catch (IOException | RuntimeException e) {
      // gone, or not ours to read: its ancestry still says
    }
    return false;
  }

  /** The parent's pid from /proc; 0 once the process is gone. */
  private static long parentOf(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.UTF_8);
      // after "pid (comm) ": the state, then the parent's pid
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ", 3);
      return Long.parseLong(f[1]);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }
}
