package io.sandboxd.daemon.fleet;

import io.sandboxd.attest.Hex;
import io.sandboxd.attest.InclusionProof;
import io.sandboxd.attest.LogTree;
import io.sandboxd.attest.MerkleHash;
import io.sandboxd.attest.TreeHead;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;

/**
 * The aggregator's fleet log: an append-only file of fixed 64-byte entries (record address, node
 * key), the BLAKE3 RFC 9162 tree over the addresses (WIRE.md §2.10) rebuilt from it on open, and an
 * address index so that no record is appended twice. A torn last entry (a crash mid-write, never
 * acknowledged) is cut off on open; one a failed write left (a full disk) is written over by the
 * next append, so a disk that fills and frees never shifts the entries after it.
 *
 * <p>What it holds in memory grows with the log, so it is kept small: the hashes of subtrees of
 * 2^{@link #LOW} leaves and more (8 bytes a leaf), and the {@link AddressIndex} (24-48 bytes a
 * leaf). Smaller subtrees, addresses and node keys are read back from the file (through the page
 * cache) when a proof or a lookup needs them: at most 2^LOW - 1 entries a proof.
 */
final class FleetLog implements AutoCloseable {
  static final int ENTRY = 64;

  /** Subtrees of 2^LOW leaves and more are kept; smaller ones are hashed from the file. */
  static final int LOW = 3;

  private static final MerkleHash HASH = MerkleHash.blake3();
  private static final int READ_ENTRIES = 1024;

  private final FileChannel file;
  private final AddressIndex index = new AddressIndex();
  // kept.get(k): the subtree hashes of level LOW + k, in index order.
  private final List<HashColumn> kept = new ArrayList<>();
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
    for (long pos = 0; pos < whole; ) {
      int n = (int) Math.min(READ_ENTRIES, (whole - pos) / ENTRY);
      byte[] block = log.read(pos, n * ENTRY, path);
      for (int k = 0; k < n; k++) {
        log.add(Arrays.copyOfRange(block, k * ENTRY, k * ENTRY + 32));
      }
      pos += (long) n * ENTRY;
    }
    log.forced = log.size();
    return log;
  }

  private long add(byte[] address) {
    long i = frontier.size();
    for (LogTree.Node n : frontier.append(HASH.leaf(address))) {
      if (n.level() >= LOW) {
        while (kept.size() <= n.level() - LOW) {
          kept.add(new HashColumn());
        }
        kept.get(n.level() - LOW).add(n.index(), n.hash());
      }
    }
    index.add(address, i);
    return i;
  }

  /** The leaf that holds {@code address}, or empty. */
  OptionalLong indexOf(String address) throws IOException {
    byte[] a = Hex.decode(address, 32, "address");
    try {
      return index.find(a, leaf -> readUnchecked(leaf * ENTRY, 32));
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /**
   * Appends (written, not yet forced: call {@link #sync()} before acknowledging). A failed append
   * adds nothing: the log's size and tree stay as they were.
   */
  long append(String address, String node) throws IOException {
    byte[] a = Hex.decode(address, 32, "address");
    byte[] entry = new byte[ENTRY];
    System.arraycopy(a, 0, entry, 0, 32);
    System.arraycopy(Hex.decode(node, 32, "node"), 0, entry, 32, 32);
    // At the end of the last whole entry, not at the file's end: whatever part of an entry a
    // failed write left there is written over.
    writeAt(entry, size() * ENTRY);
    unforced.write(entry, 0, ENTRY);
    return add(a);
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

  private byte[] read(long at, int length, Object where) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(length);
    while (b.hasRemaining()) {
      if (file.read(b, at + b.position()) < 0) {
        throw new IOException("fleet log " + where + ": short read at byte " + (at + b.position()));
      }
    }
    return b.array();
  }

  private byte[] readUnchecked(long at, int length) {
    try {
      return read(at, length, "");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  long size() {
    return frontier.size();
  }

  TreeHead head() {
    return frontier.head();
  }

  /** The key of the node whose record leaf {@code i} is. */
  String node(long i) throws IOException {
    return Hex.encode(read(i * ENTRY + 32, 32, ""));
  }

  InclusionProof prove(long leaf) throws IOException {
    try {
      return LogTree.inclusionProof(HASH, this::subtree, leaf, frontier.size());
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** MTH of the 2^level leaves from index·2^level: kept, or hashed from the file. */
  private byte[] subtree(int level, long index) {
    if (level >= LOW) {
      return kept.get(level - LOW).get(index);
    }
    int n = 1 << level;
    byte[] entries = readUnchecked((index << level) * ENTRY, n * ENTRY);
    byte[][] h = new byte[n][];
    for (int k = 0; k < n; k++) {
      h[k] = HASH.leaf(Arrays.copyOfRange(entries, k * ENTRY, k * ENTRY + 32));
    }
    for (int width = n; width > 1; width /= 2) {
      for (int k = 0; k < width / 2; k++) {
        h[k] = HASH.node(h[2 * k], h[2 * k + 1]);
      }
    }
    return h[0];
  }

  @Override
  public void close() throws IOException {
    file.close();
  }

  /** One level's subtree hashes, 32 bytes each, in chunks (no one array of a whole level). */
  private static final class HashColumn {
    private static final int CHUNK = 1 << 15;
    private final List<byte[]> chunks = new ArrayList<>();
    private long size;

    void add(long index, byte[] hash) {
      if (index != size) {
        throw new IllegalStateException("subtree " + index + " kept after " + size);
      }
      int c = (int) (size / CHUNK);
      int at = (int) (size % CHUNK) * 32;
      if (c == chunks.size()) {
        chunks.add(new byte[8 * 32]);
      }
      byte[] last = chunks.get(c);
      if (at + 32 > last.length) {
        // The last chunk grows as the level does: the top levels stay a few bytes.
        last = Arrays.copyOf(last, Math.min(last.length * 2, CHUNK * 32));
        chunks.set(c, last);
      }
      System.arraycopy(hash, 0, last, at, 32);
      size++;
    }

    byte[] get(long index) {
      int at = (int) (index % CHUNK) * 32;
      return Arrays.copyOfRange(chunks.get((int) (index / CHUNK)), at, at + 32);
    }
  }
}
