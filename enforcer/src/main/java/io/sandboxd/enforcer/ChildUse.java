package io.sandboxd.enforcer;

import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import java.util.Optional;

/**
 * The pure decision on one use of a minted child (a run about to start under it, issue 23): refused
 * when the child or its parent grant was released, its policy expired, the child outlived the
 * policy's {@code child_use.ttl_ms}, or it started {@code child_use.max_uses} runs already. The
 * node keeps the use count and the releases; this decides on them.
 */
public final class ChildUse {
  private ChildUse() {}

  /** What the node knows of the child besides its records. */
  public record State(long uses, boolean childReleased, boolean parentHeld) {}

  /** A refusal: the rule (a field name where one decides) and why. */
  public record Refused(String rule, String detail) {}

  /** The refusal of one more use at {@code nowMs}, or empty when the child may start a run. */
  public static Optional<Refused> check(
      JcpMintPolicy policy, JcpChild child, State state, long nowMs) {
    if (state.childReleased()) {
      return refused("released", "the child was released (sandboxctl jcp release)");
    }
    if (!state.parentHeld()) {
      return refused(
          "parent_held", "its parent grant " + policy.parentGrantsId() + " was released");
    }
    if (nowMs > policy.notAfterMs()) {
      return refused(
          "not_after_ms",
          "its policy expired at "
              + policy.notAfterMs()
              + " (now "
              + nowMs
              + "), and its children");
    }
    JcpMintPolicy.ChildUse bound = policy.childUse();
    if (bound == null) {
      return Optional.empty();
    }
    long until = child.mintedMs() + Math.min(bound.ttlMs(), Long.MAX_VALUE - child.mintedMs());
    if (nowMs > until) {
      return refused(
          "child_use.ttl_ms",
          "it expired at "
              + until
              + " (minted_ms "
              + child.mintedMs()
              + " + ttl_ms "
              + bound.ttlMs()
              + ", now "
              + nowMs
              + ")");
    }
    if (state.uses() >= bound.maxUses()) {
      return refused("child_use.max_uses", "it started its " + bound.maxUses() + " runs already");
    }
    return Optional.empty();
  }

  private static Optional<Refused> refused(String rule, String detail) {
    return Optional.of(new Refused(rule, detail));
  }
}
