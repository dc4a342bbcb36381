package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleTree;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;

/**
 * The replay journal (WIRE.md §2.5): every nondeterministic input a guest received, in order, with
 * response blobs keyed by address, and its RFC 9162 merkle root over BLAKE3. Each entry's leaf is
 * hashed once, when it is recorded; entries are kept compact and turned into JSON only on demand.
 */
public final class Journal {
  public static final String ENTRY_SCHEMA = JournalEntry.SCHEMA;

  // Most requests carry no arguments: hash the canonical "{}" once.
  private static final String EMPTY_REQUEST =
      Blake3.hex(CanonicalJson.canonicalize(CanonicalJson.mapper().createObjectNode()));

  /** Entries one run may record by default: a host-call flood must not exhaust the heap. */
  public static final int MAX_ENTRIES = 250_000;

  /**
   * Bytes one run's journal may hold by default: its entries' canonical JSON plus its distinct
   * response blobs, which is what the run store keeps for it.
   */
  public static final long MAX_BYTES = 64L << 20;

  /** How much one run may journal; past either bound the run ends as Failed. */
  public record Limits(int maxEntries, long maxBytes) {
    public static final Limits DEFAULT = new Limits(MAX_ENTRIES, MAX_BYTES);

    public Limits {
      if (maxEntries < 1 || maxBytes < 1) {
        throw new IllegalArgumentException("journal limits must be positive");
      }
    }
  }

  /** Thrown when a run's journal is full; the run ends as Failed, the daemon keeps serving. */
  public static final class FullException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    FullException(String message) {
      super(message);
    }
  }

  private final Limits limits;
  private final List<JournalEntry> entries = new ArrayList<>();
  private long bytes;
  private final List<byte[]> leafData = new ArrayList<>();
  private final Map<String, byte[]> blobs = new LinkedHashMap<>();

  public Journal() {
    this(Limits.DEFAULT);
  }

  public Journal(Limits limits) {
    this.limits = limits;
  }

  /** Appends one entry; {@code request} is the request arguments, {@code response} raw bytes. */
  public synchronized void record(
      String call, JsonNode request, byte[] response, String decision, SortedSet<String> taint) {
    if (entries.size() >= limits.maxEntries()) {
      throw new FullException(
          "replay journal full: "
              + limits.maxEntries()
              + " entries (a host-call flood); run stopped");
    }
    String responseAddress = Blake3.hex(response);
    boolean newBlob = !blobs.containsKey(responseAddress);
    String requestAddress =
        request.isObject() && request.isEmpty()
            ? EMPTY_REQUEST
            : Blake3.hex(CanonicalJson.canonicalize(request));
    JournalEntry e =
        new JournalEntry(
            entries.size(),
            call,
            requestAddress,
            responseAddress,
            decision,
            taint.isEmpty() ? List.of() : List.copyOf(taint));
    byte[] canonical = e.canonicalBytes();
    long added = canonical.length + (newBlob ? response.length : 0L);
    if (bytes + added > limits.maxBytes()) {
      throw new FullException(
          "replay journal full: more than "
              + limits.maxBytes()
              + " bytes of entries and responses; run stopped");
    }
    bytes += added;
    if (newBlob) {
      blobs.put(responseAddress, response.clone());
    }
    entries.add(e);
    leafData.add(Blake3.hash(canonical));
  }

  /** Bytes held: the entries' canonical JSON plus the distinct response blobs. */
  public synchronized long bytes() {
    return bytes;
  }

  public synchronized List<JournalEntry> entries() {
    return List.copyOf(entries);
  }

  public synchronized Map<String, byte[]> blobs() {
    return Map.copyOf(blobs);
  }

  public synchronized int size() {
    return entries.size();
  }

  /**
   * {@code leaf_i = BLAKE3(0x00 ‖ BLAKE3(JCS(entry_i)))}; the empty journal's root is BLAKE3("").
   */
  public synchronized String root() {
    return Hex.encode(MerkleTree.blake3(leafData).root());
  }

  /** The root of a journal with no entries (every run that makes no journaled call). */
  public static final String EMPTY_ROOT = rootOf(List.of());

  /** The root of recorded entries (e.g. read back from the run store). */
  public static String rootOf(List<JournalEntry> entries) {
    List<byte[]> leafData = new ArrayList<>(entries.size());
    for (JournalEntry e : entries) {
      leafData.add(e.leafData());
    }
    return Hex.encode(MerkleTree.blake3(leafData).root());
  }
}
