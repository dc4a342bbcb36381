package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JcpMintPolicy;
import java.util.List;
import java.util.Optional;

/**
 * A verified mint policy with its ceiling and parent read as grants, and the pure mint decision of
 * WIRE.md §2.11. Breadth is decided by {@link Attenuation}, the one attenuation order.
 *
 * @param parent the parent grant the policy names (its grants_id is checked on construction)
 */
public record StandingGrant(JcpMintPolicy policy, Grants ceiling, Grants parent) {

  public StandingGrant {
    if (!parent.grantsId().equals(policy.parentGrantsId())) {
      throw new GrantsException(
          "$.parent_grants_id",
          "the parent grant hashes to " + parent.grantsId() + ", not " + policy.parentGrantsId());
    }
  }

  /** Reads the policy's ceiling strictly; errors name {@code $.ceiling...}. */
  public static StandingGrant of(JcpMintPolicy policy, Grants parent) {
    Grants ceiling;
    try {
      ceiling = Grants.parse(policy.ceiling());
    } catch (GrantsException e) {
      throw new GrantsException(
          "$.ceiling" + e.path().substring(1), e.getMessage().substring(e.path().length() + 2));
    }
    return new StandingGrant(policy, ceiling, parent);
  }

  /**
   * The policy's mint history as the decision needs it.
   *
   * @param minted children minted so far (the next child's seq)
   * @param recentMintsMs the mint times of the latest children, oldest first (at least all those
   *     inside the rate window)
   */
  public record MintState(long minted, List<Long> recentMintsMs) {
    public MintState {
      recentMintsMs = List.copyOf(recentMintsMs);
    }

    public static MintState fresh() {
      return new MintState(0, List.of());
    }
  }

  /** The outcome of {@link #decide}. */
  public sealed interface Verdict {}

  /** Mint child {@code seq} with {@code grants}. */
  public record Mint(long seq, Grants grants) implements Verdict {}

  /** Refused under {@code rule}; nothing changes. */
  public record Refused(MintRule rule) implements Verdict {}

  /** Whether a policy may be registered at all: its ceiling must be within its parent. */
  public Optional<MintRule> policyRule() {
    return Attenuation.check(ceiling, parent) instanceof Attenuation.Wider w
        ? Optional.of(new MintRule.CeilingWiderThanParent(w))
        : Optional.empty();
  }

  /**
   * Mint iff every rule holds: the policy has not expired, the parent is held, the ceiling is
   * within the parent, the event fires a trigger, {@code seq < max_children}, fewer than {@code
   * max} mints in the window {@code (now - window_ms, now]}, and the child is within the ceiling.
   * The first rule that fails is the refusal.
   */
  public Verdict decide(
      JsonNode event, Grants child, MintState state, boolean parentHeld, long nowMs) {
    if (nowMs > policy.notAfterMs()) {
      return new Refused(new MintRule.Expired(policy.notAfterMs(), nowMs));
    }
    if (!parentHeld) {
      return new Refused(new MintRule.ParentNotHeld(policy.parentGrantsId()));
    }
    Optional<MintRule> p = policyRule();
    if (p.isPresent()) {
      return new Refused(p.get());
    }
    if (policy.triggers().stream().noneMatch(t -> t.matches(event))) {
      JsonNode type = event.get("type");
      return new Refused(
          new MintRule.NoMatchingTrigger(type != null && type.isTextual() ? type.textValue() : ""));
    }
    if (state.minted() >= policy.maxChildren()) {
      return new Refused(new MintRule.MaxChildren(policy.maxChildren()));
    }
    long windowStart = nowMs - policy.rateWindowMs();
    long inWindow = state.recentMintsMs().stream().filter(t -> t > windowStart).count();
    if (inWindow >= policy.rateMax()) {
      return new Refused(new MintRule.RateWindow(policy.rateMax(), policy.rateWindowMs()));
    }
    if (Attenuation.check(child, ceiling) instanceof Attenuation.Wider w) {
      return new Refused(new MintRule.ChildWiderThanCeiling(w));
    }
    return new Mint(state.minted(), child);
  }
}
