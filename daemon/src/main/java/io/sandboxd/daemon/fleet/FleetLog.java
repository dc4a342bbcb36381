package io.sandboxd.daemon.fleet;

import io.sandboxd.attest.Hex;
import io.sandboxd.attest.InclusionProof;
import io.sandboxd.attest.LogTree;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.TreeHead;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The aggregator's fleet log: an append-only file of fixed 64-byte entries (record address, node
 * key), the BLAKE3 RFC 9162 tree over the addresses (WIRE.md §2.10) rebuilt from it on open, and an
 * address index so that no record is appended twice. A torn last entry (a crash mid-write, never
 * acknowledged) is cut off on open; one a failed write left (a full disk) is written over by the
 * next append, so a disk that fills and frees never shifts the entries after it.
 */
final class FleetLog implements AutoCloseable {
  static final int ENTRY = 64;
  private static final MerkleHash HASH = MerkleHash.blake3();

  private final FileChannel file;
  private final Map<Long, byte[]> nodes = new HashMap<>();
  private final Map<String, Long> index = new HashMap<>();
  private final List<String> nodeOf = new ArrayList<>();
  private final LogTree.Frontier frontier = LogTree.Frontier.empty(HASH);
  // The entries appended since the last force that succeeded. After a failed force they are
  // written again before the next one: the kernel may have dropped the pages it failed to write
  // and call them clean, so a second force alone could succeed without them.
  private final ByteArrayOutputStream unforced = new ByteArrayOutputStream();
  private long forced;
  private boolean writeAgain;

  private FleetLog(FileChannel file) {
    this.file = file;
  }

  static FleetLog open(Path path) throws IOException {
    Files.createDirectories(path.toAbsolutePath().getParent());
    return over(
        FileChannel.open(
            path, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE),
        path);
  }

  /** The log kept in {@code ch} (the file at {@code path}). */
  static FleetLog over(FileChannel ch, Path path) throws IOException {
    FleetLog log = new FleetLog(ch);
    long whole = ch.size() / ENTRY * ENTRY;
    if (whole != ch.size()) {
      ch.truncate(whole);
    }
    // What a process that stopped before its force left in the page cache is made durable now,
    // so that every entry read here counts as forced.
    ch.force(true);
    ByteBuffer buf = ByteBuffer.allocate(ENTRY);
    for (long pos = 0; pos < whole; pos += ENTRY) {
      buf.clear();
      while (buf.hasRemaining()) {
        if (ch.read(buf, pos + buf.position()) < 0) {
          throw new IOException("fleet log " + path + ": short read at byte " + pos);
        }
      }
      byte[] e = buf.array();
      log.add(Hex.encode(Arrays.copyOf(e, 32)), Hex.encode(Arrays.copyOfRange(e, 32, 64)));
    }
    log.forced = log.size();
    return log;
  }

  private long add(String address, String node) {
    long i = frontier.size();
    for (LogTree.Node n : frontier.append(HASH.leaf(Hex.decode(address, 32, "address")))) {
      nodes.put(key(n.level(), n.index()), n.hash());
    }
    index.put(address, i);
    nodeOf.add(node);
    return i;
  }

  private static long key(int level, long idx) {
    return ((long) level << 56) | idx;
  }

  OptionalLong indexOf(String address) {
    Long i = index.get(address);
    return i == null ? OptionalLong.empty() : OptionalLong.of(i);
  }

  /**
   * Appends (written, not yet forced: call {@link #sync()} before acknowledging). A failed append
   * adds nothing: the log's size and tree stay as they were.
   */
  long append(String address, String node) throws IOException {
    byte[] entry = new byte[ENTRY];
    System.arraycopy(Hex.decode(address, 32, "address"), 0, entry, 0, 32);
    System.arraycopy(Hex.decode(node, 32, "node"), 0, entry, 32, 32);
    // At the end of the last whole entry, not at the file's end: whatever part of an entry a
    // failed write left there is written over.
    writeAt(entry, size() * ENTRY);
    unforced.write(entry, 0, ENTRY);
    return add(address, node);
  }

  /** Forces every entry appended so far to disk; after a failure, call it again before more. */
  void sync() throws IOException {
    if (writeAgain) {
      writeAt(unforced.toByteArray(), forced * ENTRY);
    }
    try {
      file.force(false);
    } catch (IOException e) {
      writeAgain = true;
      throw e;
    }
    writeAgain = false;
    forced = size();
    unforced.reset();
  }

  /** Whether entries were appended that no force has reached yet. */
  boolean unsynced() {
    return forced < size();
  }

  private void writeAt(byte[] bytes, long at) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(bytes);
    while (b.hasRemaining()) {
      file.write(b, at + b.position());
    }
  }

  long size() {
    return frontier.size();
  }

  TreeHead head() {
    return frontier.head();
  }

  String node(long i) {
    return nodeOf.get((int) i);
  }

  InclusionProof prove(long leaf) {
    return LogTree.inclusionProof(HASH, (l, i) -> nodes.get(key(l, i)), leaf, frontier.size());
  }

  @Override
  public void close() throws IOException {
    file.close();
  }
}
