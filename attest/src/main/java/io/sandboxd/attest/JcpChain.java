package io.sandboxd.attest;

import java.util.List;
import java.util.Optional;

/**
 * Verifies the two JCP hash chains of WIRE.md §2.11: a policy's children (each signed by the
 * policy's holder, naming the policy, {@code seq} dense from 0, {@code prev} the previous child's
 * address, {@code minted_ms} never decreasing) and a run's checkpoints (each signed by the agent it
 * names, one run and one agent throughout, dense and linked the same way).
 */
public final class JcpChain {
  private JcpChain() {}

  /** The verdict on a chain: valid with its length and head address, or where and why not. */
  public sealed interface Verdict {
    /** Every link verifies; {@code head} is the last link's address (null for an empty chain). */
    record Valid(int length, String head) implements Verdict {}

    /** Link {@code seq} (its position in the input) fails for {@code reason}. */
    record Invalid(long seq, String reason) implements Verdict {}
  }

  /** The children minted under {@code policy} (already verified), in order. */
  public static Verdict children(Envelope policy, List<Envelope> children) {
    JcpMintPolicy p;
    try {
      p = JcpMintPolicy.verified(policy);
    } catch (AttestException e) {
      return new Verdict.Invalid(0, "policy: " + e.getMessage());
    }
    PublicKey holder = PublicKey.ofHex(p.holder(), "holder");
    String prevAddress = null;
    long prevMinted = 0;
    for (int i = 0; i < children.size(); i++) {
      Envelope env = children.get(i);
      if (env.verify(Optional.of(holder)) instanceof Verification.Invalid inv) {
        return new Verdict.Invalid(i, inv.reason());
      }
      JcpChild c;
      try {
        c = JcpChild.fromCore(env.core());
      } catch (AttestException e) {
        return new Verdict.Invalid(i, e.getMessage());
      }
      if (!c.policy().equals(policy.address())) {
        return new Verdict.Invalid(i, "policy is " + c.policy() + ", expected " + policy.address());
      }
      if (c.seq() != i) {
        return new Verdict.Invalid(i, "seq is " + c.seq() + ", expected " + i + " (dense from 0)");
      }
      if (i > 0 && !prevAddress.equals(c.prev())) {
        return new Verdict.Invalid(i, "prev is " + c.prev() + ", expected " + prevAddress);
      }
      if (c.mintedMs() < prevMinted) {
        return new Verdict.Invalid(i, "minted_ms goes backwards");
      }
      prevAddress = env.address();
      prevMinted = c.mintedMs();
    }
    return new Verdict.Valid(children.size(), prevAddress);
  }

  /** A run's checkpoints, in order. */
  public static Verdict checkpoints(List<Envelope> checkpoints) {
    String prevAddress = null;
    JcpCheckpoint first = null;
    for (int i = 0; i < checkpoints.size(); i++) {
      Envelope env = checkpoints.get(i);
      JcpCheckpoint c;
      try {
        c = JcpCheckpoint.fromCore(env.core());
      } catch (AttestException e) {
        return new Verdict.Invalid(i, e.getMessage());
      }
      if (env.verify(Optional.of(PublicKey.ofHex(c.agent(), "agent")))
          instanceof Verification.Invalid inv) {
        return new Verdict.Invalid(i, inv.reason());
      }
      if (first == null) {
        first = c;
      } else if (!c.runId().equals(first.runId()) || !c.agent().equals(first.agent())) {
        return new Verdict.Invalid(i, "run_id and agent must be those of checkpoint 0");
      }
      if (c.seq() != i) {
        return new Verdict.Invalid(i, "seq is " + c.seq() + ", expected " + i + " (dense from 0)");
      }
      if (i > 0 && !prevAddress.equals(c.prev())) {
        return new Verdict.Invalid(i, "prev is " + c.prev() + ", expected " + prevAddress);
      }
      prevAddress = env.address();
    }
    return new Verdict.Valid(checkpoints.size(), prevAddress);
  }
}
