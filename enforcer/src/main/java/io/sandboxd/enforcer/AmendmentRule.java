package io.sandboxd.enforcer;

/**
 * Why an amendment is refused (WIRE.md §2.11): one variant per rule, each naming it with a stable
 * {@link #rule()}.
 */
public sealed interface AmendmentRule extends RuleRefusal {
  /** The record does not parse or its signature does not hold. */
  record BadRecord(String reason) implements AmendmentRule {
    @Override
    public String rule() {
      return "record";
    }

    @Override
    public String detail() {
      return reason;
    }
  }

  /** The signer is the agent: an agent may never amend its own grant. */
  record SignedByAgent(String agent) implements AmendmentRule {
    @Override
    public String rule() {
      return "distinct_principal";
    }

    @Override
    public String detail() {
      return "signed by the agent key " + agent + "; only the issuer, a distinct principal, amends";
    }
  }

  /** The signer (or the record's issuer) is not the issuer of the grant in force. */
  record NotIssuer(String signer, String issuer) implements AmendmentRule {
    @Override
    public String rule() {
      return "issuer";
    }

    @Override
    public String detail() {
      return issuer == null
          ? "the run's grant names no issuer, so nobody may amend it"
          : "signed by " + signer + ", the grant's issuer is " + issuer;
    }
  }

  /** This amendment was already applied. */
  record Replayed(String address) implements AmendmentRule {
    @Override
    public String rule() {
      return "replay";
    }

    @Override
    public String detail() {
      return "amendment " + address + " was already applied";
    }
  }

  /** The checkpoint it targets is not in the run's verified chain. */
  record CheckpointNotInChain(String checkpoint) implements AmendmentRule {
    @Override
    public String rule() {
      return "checkpoint_in_chain";
    }

    @Override
    public String detail() {
      return "checkpoint " + checkpoint + " is not in the run's verified checkpoint chain";
    }
  }

  /** {@code new_grants} is not within the grants in force ({@code against} says which). */
  record Widens(Attenuation.Wider wider, String against) implements AmendmentRule {
    @Override
    public String rule() {
      return "tighten_only";
    }

    @Override
    public String detail() {
      return "new_grants is wider than the grants in force " + against + " at " + wider;
    }
  }
}
