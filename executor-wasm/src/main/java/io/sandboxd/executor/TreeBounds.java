package io.sandboxd.executor;

/**
 * What one exec's process tree may hold on the node at once: its processes, and the memory they
 * hold of their own (anonymous and shared, as the kernel counts it resident). Past either bound the
 * tree is killed and the call answers {@code QUOTA}.
 */
public record TreeBounds(int maxProcesses, long maxMemoryBytes) {
  /** The node's default: 64 processes, 512 MiB (as much as one unit's linear memory). */
  public static final TreeBounds DEFAULT = new TreeBounds(64, 512L << 20);

  public TreeBounds {
    if (maxProcesses < 1) {
      throw new IllegalArgumentException("maxProcesses " + maxProcesses + " is below 1");
    }
    if (maxMemoryBytes < 1 << 20) {
      throw new IllegalArgumentException("maxMemoryBytes " + maxMemoryBytes + " is below 1 MiB");
    }
  }
}
