package io.sandboxd.enforcer;

/**
 * The answer to one Enforcer query: allowed, denied by the grant, or refused because of what the
 * run has already read (TAINTED is not DENIED, WIRE.md §3.3).
 */
public sealed interface Decision permits Decision.Allow, Decision.Denied, Decision.Tainted {

  /** The one Allow value. */
  Allow ALLOW = new Allow();

  /** "Allow", "Denied" or "Tainted": the spelling in query output and journals. */
  String name();

  /** Why the query was refused; empty for Allow. */
  String reason();

  /** True for Allow only. */
  default boolean allowed() {
    return this instanceof Allow;
  }

  /** A denial with its reason. */
  static Denied denied(String reason) {
    return new Denied(reason);
  }

  /** A taint refusal with its reason. */
  static Tainted tainted(String reason) {
    return new Tainted(reason);
  }

  /** The query is allowed. */
  record Allow() implements Decision {
    @Override
    public String name() {
      return "Allow";
    }

    @Override
    public String reason() {
      return "";
    }
  }

  /** The grant does not allow the query. */
  record Denied(String reason) implements Decision {
    @Override
    public String name() {
      return "Denied";
    }
  }

  /** The grant allows the query, but the run carries origins not opened to this sink. */
  record Tainted(String reason) implements Decision {
    @Override
    public String name() {
      return "Tainted";
    }
  }
}
