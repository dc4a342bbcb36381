package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import java.util.List;
import java.util.Map;

/**
 * A recorded journal fed back to a re-execution: each journaled call takes the next entry, which
 * must name the same call and request, and gets the recorded answer instead of the live world.
 */
public final class ReplaySource {
  private final List<JournalEntry> entries;
  private final Map<String, byte[]> blobs;
  private int next;
  private Divergence divergence;

  /** The first point where a replay stopped following the record. */
  public record Divergence(long seq, String expected, String actual) {
    public String describe() {
      return "journal entry " + seq + ": recorded " + expected + ", replay asked " + actual;
    }
  }

  public ReplaySource(List<JournalEntry> entries, Map<String, byte[]> blobs) {
    this.entries = List.copyOf(entries);
    this.blobs = Map.copyOf(blobs);
  }

  /** The recorded answer for this call, or a divergence (then the run stops). */
  synchronized HostAnswer next(String call, JsonNode request) {
    String reqHash = Blake3.hex(CanonicalJson.canonicalize(request));
    String actual = call + " " + reqHash;
    if (next >= entries.size()) {
      divergence = new Divergence(next, "end of journal", actual);
      throw new ReplayDivergenceException(divergence);
    }
    JournalEntry e = entries.get(next);
    String expected = e.call() + " " + e.request();
    if (!expected.equals(actual)) {
      divergence = new Divergence(next, expected, actual);
      throw new ReplayDivergenceException(divergence);
    }
    byte[] blob = blobs.get(e.response());
    if (blob == null) {
      divergence = new Divergence(next, "response blob " + e.response(), "missing");
      throw new ReplayDivergenceException(divergence);
    }
    next++;
    return HostAnswer.fromBytes(e.decision(), blob);
  }

  /** The taint the record carries after the entry {@link #next} last answered from. */
  synchronized List<String> lastTaintAfter() {
    return next == 0 ? List.of() : entries.get(next - 1).taintAfter();
  }

  /** Whether the next recorded entry is this call and request with this decision. */
  synchronized boolean nextIs(String call, JsonNode request, String decision) {
    if (next >= entries.size()) {
      return false;
    }
    JournalEntry e = entries.get(next);
    return e.call().equals(call)
        && e.decision().equals(decision)
        && e.request().equals(Blake3.hex(CanonicalJson.canonicalize(request)));
  }

  public synchronized Divergence divergence() {
    return divergence;
  }

  /** Entries the replay did not consume (a shorter re-execution also diverges). */
  public synchronized int remaining() {
    return entries.size() - next;
  }

  /** Thrown out of a host function to stop a replay that left the record. */
  static final class ReplayDivergenceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ReplayDivergenceException(Divergence d) {
      super("replay diverged at " + d.describe());
    }
  }
}
