package io.sandboxd.executor;

import java.util.Optional;

/**
 * The processes and memory one exec's tree holds, counted while it runs on a pace of its own: the
 * bound where the kernel holds none (no cgroup controller for the exec cgroups), and the word to
 * the operator where it does. A count is a sample, so a tree may pass a bound for up to one pace
 * before it is stopped; each of its processes is held to the memory bound by RLIMIT_DATA all along.
 * Where a pids controller holds the tree, a fork or thread the kernel refused it is a pass too.
 */
final class TreeWatch {
  /** The least time between two counts of a running tree. */
  static final long CHECK_EVERY_NANOS = 10_000_000L;

  /** A count takes at most one in this many of the tree's moments: a large tree is slow to walk. */
  private static final int CHECK_SHARE = 5;

  private final ProcessTree tree;
  private final TreeBounds bounds;
  private long nextCheck = System.nanoTime() + CHECK_EVERY_NANOS;

  TreeWatch(ProcessTree tree, TreeBounds bounds) {
    this.tree = tree;
    this.bounds = bounds;
  }

  /** When the tree should next be counted ({@link System#nanoTime}). */
  long nextCheck() {
    return nextCheck;
  }

  /**
   * The bound the kernel held the tree to, in words for the operator, once it has refused the tree
   * a fork or thread past it; empty before (or where no pids controller holds the tree).
   */
  Optional<String> refused() {
    if (tree.tasksRefused()) {
      return Optional.of(
          "more than "
              + bounds.maxProcesses()
              + " processes (exec.max_processes): the kernel refused it a fork or thread past"
              + " them");
    }
    return Optional.empty();
  }

  /** The bound the tree is past now, in words for the operator; empty while it holds. */
  Optional<String> passed() {
    long t0 = System.nanoTime();
    ProcessTree.Census now = tree.census(bounds.maxProcesses());
    long t1 = System.nanoTime();
    nextCheck = t1 + Math.max(CHECK_EVERY_NANOS, (t1 - t0) * (CHECK_SHARE - 1));
    if (now.holdsDaemon()) {
      return Optional.of("the daemon's own process, moved into its cgroup");
    }
    if (now.processes() > bounds.maxProcesses()) {
      return Optional.of("more than " + bounds.maxProcesses() + " processes (exec.max_processes)");
    }
    Optional<String> refused = refused();
    if (refused.isPresent()) {
      return refused;
    }
    if (now.memoryBytes() > bounds.maxMemoryBytes()) {
      return Optional.of(
          now.memoryBytes()
              + " bytes of memory, more than "
              + bounds.maxMemoryBytes()
              + " (exec.max_memory_bytes)");
    }
    return Optional.empty();
  }
}
