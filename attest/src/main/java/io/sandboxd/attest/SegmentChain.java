package io.sandboxd.attest;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Verifies a run's segment envelopes as one chain: every signature, dense {@code seq} from 0,
 * {@code prev} equal to the previous core's address, legal kind order, one run id, and a resume
 * that repeats its suspend's snapshot.
 */
public final class SegmentChain {
  private SegmentChain() {}

  /** The verdict on a chain: valid with its length, or the first failing seq and why. */
  public sealed interface Verdict {
    /** All segments verify. */
    record Valid(int length, String runId, String head) implements Verdict {}

    /** Segment {@code seq} (its position in the input) fails for {@code reason}. */
    record Invalid(long seq, String reason) implements Verdict {}
  }

  /** Two different segments of one run at the same seq: the chain was forked. */
  public record Fork(String runId, long seq, String first, String second) {
    /** The reason as a verdict states it. */
    public String reason() {
      return "fork: two different segments at seq "
          + seq
          + " of run "
          + runId
          + " ("
          + first
          + " and "
          + second
          + ")";
    }
  }

  /**
   * The first fork among {@code segments} (any order, any runs): two envelopes whose cores parse as
   * segments with the same run and seq but different addresses, each verifying under its own key
   * (an altered envelope fails on its own, not as a fork). The same segment twice is no fork.
   */
  public static Optional<Fork> fork(List<Envelope> segments) {
    return fork(segments, false);
  }

  /**
   * {@link #fork(List)}, where {@code verified} says every envelope was already verified under its
   * own key (an evidence bundle verifies each of its items first): then none is verified again.
   */
  static Optional<Fork> fork(List<Envelope> segments, boolean verified) {
    Map<String, String> seen = new HashMap<>();
    for (Envelope e : segments) {
      var run = e.core().get("run_id");
      var seq = e.core().get("seq");
      if (run == null
          || !run.isTextual()
          || seq == null
          || !seq.isIntegralNumber()
          || (!verified && !e.verify(Optional.empty()).isValid())) {
        continue;
      }
      String key = seq.asLong() + " " + run.textValue();
      String other = seen.putIfAbsent(key, e.address());
      if (other != null && !other.equals(e.address())) {
        return Optional.of(new Fork(run.textValue(), seq.asLong(), other, e.address()));
      }
    }
    return Optional.empty();
  }

  /**
   * Verifies {@code segments} in the order given (a duplicated, missing or reordered segment fails
   * at its position); a fork is named as one.
   */
  public static Verdict verify(List<Envelope> segments, Optional<PublicKey> expectedSigner) {
    Optional<Fork> fork = fork(segments);
    if (fork.isPresent()) {
      return new Verdict.Invalid(fork.get().seq(), fork.get().reason());
    }
    return links(segments, expectedSigner, false);
  }

  /**
   * {@link #verify}'s checks of order and links, for segments an evidence bundle has already
   * verified one by one (each under its own key) and found no fork among: each envelope was
   * canonicalized, hashed and fingerprinted three more times a run in the store's check.
   */
  static Verdict verifyVerified(List<Envelope> segments) {
    return links(segments, Optional.empty(), true);
  }

  private static Verdict links(
      List<Envelope> segments, Optional<PublicKey> expectedSigner, boolean verified) {
    if (segments.isEmpty()) {
      return new Verdict.Invalid(0, "empty chain: no segments");
    }
    RunSegment previous = null;
    String previousAddress = null;
    byte[] previousSnapshot = null;
    for (int i = 0; i < segments.size(); i++) {
      Envelope env = segments.get(i);
      if (!verified && env.verify(expectedSigner) instanceof Verification.Invalid inv) {
        return new Verdict.Invalid(i, inv.reason());
      }
      RunSegment seg;
      try {
        seg = RunSegment.fromCore(env.core());
      } catch (AttestException e) {
        return new Verdict.Invalid(i, e.getMessage());
      }
      if (seg.seq() != i) {
        return new Verdict.Invalid(
            i, "seq is " + seg.seq() + ", expected " + i + " (dense from 0)");
      }
      if (!seg.hostPublicKey().equals(env.publicKey())) {
        return new Verdict.Invalid(i, "host.public_key differs from the envelope's signer");
      }
      if (previous == null) {
        if (seg.prev() != null) {
          return new Verdict.Invalid(i, "prev must be null at seq 0");
        }
        if (seg.kind() != RunSegment.Kind.execute) {
          return new Verdict.Invalid(i, "a run starts with an execute segment, not " + seg.kind());
        }
      } else {
        if (!seg.runId().equals(previous.runId())) {
          return new Verdict.Invalid(
              i, "run_id " + seg.runId() + " differs from " + previous.runId());
        }
        if (!previousAddress.equals(seg.prev())) {
          return new Verdict.Invalid(i, "prev is " + seg.prev() + ", expected " + previousAddress);
        }
        if (!seg.kind().mayFollow(previous.kind())) {
          return new Verdict.Invalid(i, seg.kind() + " may not follow " + previous.kind());
        }
        // Byte for byte (WIRE.md §2.6): SnapshotRef equality would accept a reordered taint set.
        if (seg.kind() == RunSegment.Kind.resume
            && (seg.snapshot() == null || !Arrays.equals(snapshotBytes(env), previousSnapshot))) {
          return new Verdict.Invalid(i, "resume snapshot differs from the suspend's snapshot");
        }
      }
      if (seg.kind() == RunSegment.Kind.execute && seg.receipt() == null) {
        return new Verdict.Invalid(i, "an execute segment must name its receipt");
      }
      if (seg.kind() != RunSegment.Kind.execute && seg.snapshot() == null) {
        return new Verdict.Invalid(i, "a " + seg.kind() + " segment must carry a snapshot");
      }
      if (seg.kind() == RunSegment.Kind.execute && seg.snapshot() != null) {
        return new Verdict.Invalid(i, "an execute segment carries no snapshot");
      }
      if (seg.kind() != RunSegment.Kind.execute && seg.receipt() != null) {
        return new Verdict.Invalid(i, "a " + seg.kind() + " segment names no receipt");
      }
      if (seg.kind() == RunSegment.Kind.suspend
          && !seg.snapshot().grantsId().equals(seg.grantsId())) {
        return new Verdict.Invalid(i, "suspend snapshot.grants_id differs from its grants_id");
      }
      Optional<String> budget = budgetFault(previous, seg, i == segments.size() - 1);
      if (budget.isPresent()) {
        return new Verdict.Invalid(i, budget.get());
      }
      previous = seg;
      previousAddress = env.address();
      previousSnapshot = snapshotBytes(env);
    }
    return new Verdict.Valid(segments.size(), previous.runId(), previousAddress);
  }

  /**
   * The budget rules that need no receipt (WIRE.md §2.6): once a segment carries a budget every
   * later one does; consumption never shrinks and changes only in an execute segment; the grant
   * never grows; and a run past its grant ends there (only the segment that breached may show more
   * than the grant, by the watchdog's granularity, and nothing may follow it).
   */
  static Optional<String> budgetFault(RunSegment previous, RunSegment seg, boolean last) {
    RunSegment.Budget b = seg.budget();
    RunSegment.Budget p = previous == null ? null : previous.budget();
    if (b == null) {
      return p == null
          ? Optional.empty()
          : Optional.of("budget missing: the previous segment carried one");
    }
    if (b.exceeded() && (!last || seg.kind() != RunSegment.Kind.execute)) {
      return Optional.of(
          "budget exceeded: the run consumed "
              + b.consumedCpuMs()
              + " ms and "
              + b.consumedUj()
              + " uJ of a grant of "
              + b.grantedCpuMs()
              + " ms and "
              + b.grantedUj()
              + " uJ, and its chain goes on past the segment that breached");
    }
    if (p == null) {
      return Optional.empty();
    }
    if (b.grantedCpuMs() > p.grantedCpuMs() || b.grantedUj() > p.grantedUj()) {
      return Optional.of("budget.granted grows from the previous segment's");
    }
    if (b.consumedCpuMs() < p.consumedCpuMs() || b.consumedUj() < p.consumedUj()) {
      return Optional.of("budget.consumed is less than the previous segment's");
    }
    if (seg.kind() != RunSegment.Kind.execute
        && (b.consumedCpuMs() != p.consumedCpuMs() || b.consumedUj() != p.consumedUj())) {
      return Optional.of(
          "budget.consumed changes in a " + seg.kind() + " segment (only execute consumes)");
    }
    return Optional.empty();
  }

  private static byte[] snapshotBytes(Envelope env) {
    return CanonicalJson.canonicalize(env.core().get("snapshot"));
  }
}
