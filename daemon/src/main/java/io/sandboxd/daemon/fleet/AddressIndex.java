package io.sandboxd.daemon.fleet;

import java.security.SecureRandom;
import java.util.Arrays;
import java.util.OptionalLong;

/**
 * The fleet log's index from a record's address to its leaf, in two flat arrays (an open-addressing
 * table of 16 bytes a slot, at most two thirds full) instead of a map of strings: some 24-48 bytes
 * a leaf. A slot keeps the address's first 8 bytes; a match is confirmed against the whole address,
 * which the log reads back from its file. Slots are placed by a key drawn at start, so a node
 * cannot choose addresses that pile into one run of slots.
 */
final class AddressIndex {
  /** Reads the address of a leaf back (from the log's file). */
  @FunctionalInterface
  interface Addresses {
    byte[] addressOf(long leaf);
  }

  private static final int FIRST_CAPACITY = 1 << 10;

  private final long key = new SecureRandom().nextLong();
  private long[] prefixes = new long[FIRST_CAPACITY];
  // leaf + 1; 0 is an empty slot.
  private long[] leaves = new long[FIRST_CAPACITY];
  private long count;

  /** The leaf that holds {@code address}, or empty. */
  OptionalLong find(byte[] address, Addresses addresses) {
    long prefix = prefix(address);
    int mask = leaves.length - 1;
    for (int s = slot(prefix, mask); leaves[s] != 0; s = (s + 1) & mask) {
      if (prefixes[s] == prefix && Arrays.equals(addresses.addressOf(leaves[s] - 1), address)) {
        return OptionalLong.of(leaves[s] - 1);
      }
    }
    return OptionalLong.empty();
  }

  /** Records that {@code leaf} holds {@code address} (not already in the index). */
  void add(byte[] address, long leaf) {
    if ((count + 1) * 3 > (long) leaves.length * 2) {
      grow();
    }
    put(prefix(address), leaf + 1);
    count++;
  }

  long size() {
    return count;
  }

  private void put(long prefix, long leafPlusOne) {
    int mask = leaves.length - 1;
    int s = slot(prefix, mask);
    while (leaves[s] != 0) {
      s = (s + 1) & mask;
    }
    prefixes[s] = prefix;
    leaves[s] = leafPlusOne;
  }

  private void grow() {
    if (leaves.length >= 1 << 30) {
      throw new IllegalStateException("fleet log index: more than 2^30 * 2/3 leaves");
    }
    long[] oldPrefixes = prefixes;
    long[] oldLeaves = leaves;
    prefixes = new long[oldLeaves.length * 2];
    leaves = new long[oldLeaves.length * 2];
    for (int s = 0; s < oldLeaves.length; s++) {
      if (oldLeaves[s] != 0) {
        put(oldPrefixes[s], oldLeaves[s]);
      }
    }
  }

  private int slot(long prefix, int mask) {
    // splitmix64's finalizer over the keyed prefix.
    long z = prefix ^ key;
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return (int) (z ^ (z >>> 31)) & mask;
  }

  private static long prefix(byte[] address) {
    long p = 0;
    for (int i = 0; i < 8; i++) {
      p = (p << 8) | (address[i] & 0xff);
    }
    return p;
  }
}
