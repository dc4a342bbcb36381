package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
  public static final String ENTRY_SCHEMA = "sandbox.journal-entry/1";

  // Most requests carry no arguments: hash the canonical "{}" once.
  private static final String EMPTY_REQUEST =
      Blake3.hex(CanonicalJson.canonicalize(CanonicalJson.mapper().createObjectNode()));

  /** One entry, before it is spelled as JSON. */
  private record Entry(
      long seq, String call, String request, String response, String decision, List<String> taint) {
    ObjectNode toJson() {
      ObjectNode e = CanonicalJson.mapper().createObjectNode();
      e.put("schema", ENTRY_SCHEMA);
      e.put("seq", seq);
      e.put("call", call);
      e.put("request", request);
      e.put("response", response);
      e.put("decision", decision);
      ArrayNode t = e.putArray("taint_after");
      taint.forEach(t::add);
      return e;
    }
  }

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
  private final List<Entry> entries = new ArrayList<>();
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
    Entry e =
        new Entry(
            entries.size(),
            call,
            requestAddress,
            responseAddress,
            decision,
            taint.isEmpty() ? List.of() : List.copyOf(taint));
    byte[] canonical = CanonicalJson.canonicalize(e.toJson());
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

  public synchronized List<ObjectNode> entries() {
    return entries.stream().map(Entry::toJson).toList();
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

  /** The root of recorded entries (e.g. read back from the run store). */
  public static String rootOf(List<? extends JsonNode> entries) {
    List<byte[]> leafData = new ArrayList<>(entries.size());
    for (JsonNode e : entries) {
      leafData.add(Blake3.hash(CanonicalJson.canonicalize(e)));
    }
    return Hex.encode(MerkleTree.blake3(leafData).root());
  }
}
