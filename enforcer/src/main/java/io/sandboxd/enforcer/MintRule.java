package io.sandboxd.enforcer;

/**
 * Why a standing grant refuses to mint (WIRE.md §2.11): one variant per rule, each naming it with a
 * stable {@link #rule()} that clients, logs and the standing.json vectors use.
 */
public sealed interface MintRule extends RuleRefusal {
  /** The event matches no trigger of the policy. */
  record NoMatchingTrigger(String eventType) implements MintRule {
    @Override
    public String rule() {
      return "trigger";
    }

    @Override
    public String detail() {
      return "event of type \"" + eventType + "\" matches no trigger of the policy";
    }
  }

  /** {@code seq < max_children} fails: the policy has minted all its children. */
  record MaxChildren(long maxChildren) implements MintRule {
    @Override
    public String rule() {
      return "max_children";
    }

    @Override
    public String detail() {
      return "the policy has minted its " + maxChildren + " children";
    }
  }

  /** {@code max} mints already fall in the sliding window ending now. */
  record RateWindow(long max, long windowMs) implements MintRule {
    @Override
    public String rule() {
      return "rate";
    }

    @Override
    public String detail() {
      return max + " mints already in the last " + windowMs + " ms";
    }
  }

  /** The requested child is not within the ceiling. */
  record ChildWiderThanCeiling(Attenuation.Wider wider) implements MintRule {
    @Override
    public String rule() {
      return "child_within_ceiling";
    }

    @Override
    public String detail() {
      return "the child is wider than the ceiling at " + wider;
    }
  }

  /** The policy's ceiling is not within the parent grant. */
  record CeilingWiderThanParent(Attenuation.Wider wider) implements MintRule {
    @Override
    public String rule() {
      return "ceiling_within_parent";
    }

    @Override
    public String detail() {
      return "the ceiling is wider than the parent at " + wider;
    }
  }

  /** The policy's {@code not_after_ms} has passed. */
  record Expired(long notAfterMs, long nowMs) implements MintRule {
    @Override
    public String rule() {
      return "not_after_ms";
    }

    @Override
    public String detail() {
      return "the policy expired at " + notAfterMs + " (now " + nowMs + ")";
    }
  }

  /** The parent grant is no longer held (released) or is not the one the policy names. */
  record ParentNotHeld(String parentGrantsId) implements MintRule {
    @Override
    public String rule() {
      return "parent_held";
    }

    @Override
    public String detail() {
      return "the parent grant " + parentGrantsId + " is not held";
    }
  }
}
