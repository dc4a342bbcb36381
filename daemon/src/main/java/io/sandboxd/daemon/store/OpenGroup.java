package io.sandboxd.daemon.store;

import java.util.BitSet;

/**
 * The node log's open group in memory: for each of its leaves, its first 4 bytes and whether it was
 * logged once (a stored run's records, a pool eviction), by position in the group. This replaces an
 * index of those leaves keyed by their first bytes, a hash, which took a page write at random in
 * every commit. It holds at most one group ({@code 2^GROUP_BITS} leaves: 66 KiB at 16,384), and is
 * read back from {@code node_log} when the log is loaded, or when a rollback takes the log back
 * into a group it no longer holds.
 */
final class OpenGroup {
  private final int bits;
  private final int[] prefixes;
  private final BitSet once;
  // The group the arrays describe, -1 for none: their slots from 0 up to the log's size are its.
  private long group = -1;

  OpenGroup(int bits) {
    this.bits = bits;
    this.prefixes = new int[1 << bits];
    this.once = new BitSet(1 << bits);
  }

  /** Records leaf {@code idx}, whose address starts with {@code raw}; a new group starts empty. */
  void put(long idx, byte[] raw, boolean loggedOnce) {
    long g = idx >> bits;
    if (g != group) {
      group = g;
      once.clear();
    }
    int slot = (int) (idx & ((1 << bits) - 1));
    prefixes[slot] = prefix(raw);
    once.set(slot, loggedOnce);
  }

  /** Whether the arrays describe the group that holds the log's next leaf at {@code size}. */
  boolean holds(long size) {
    return group == size >> bits || (size & ((1 << bits) - 1)) == 0;
  }

  /** Forgets every leaf: the next {@link #put} starts its group afresh. */
  void clear() {
    group = -1;
    once.clear();
  }

  /**
   * The position of the next leaf logged once, at or after {@code from} and before {@code size},
   * whose address starts as {@code raw} does, or -1. Both bounds lie in the open group.
   */
  long next(byte[] raw, long from, long size) {
    int p = prefix(raw);
    int mask = (1 << bits) - 1;
    for (long idx = from; idx < size; idx++) {
      int slot = (int) (idx & mask);
      if (prefixes[slot] == p && once.get(slot)) {
        return idx;
      }
    }
    return -1;
  }

  private static int prefix(byte[] raw) {
    return (raw[0] & 0xff) << 24 | (raw[1] & 0xff) << 16 | (raw[2] & 0xff) << 8 | (raw[3] & 0xff);
  }
}
