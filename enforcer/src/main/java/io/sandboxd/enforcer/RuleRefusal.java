package io.sandboxd.enforcer;

/** A refusal by one named JCP rule: a stable rule name that logs and vectors use, and a detail. */
public interface RuleRefusal {
  /** The rule's stable name. */
  String rule();

  /** What was found, for people. */
  String detail();

  /** {@code rule: detail}. */
  default String message() {
    return rule() + ": " + detail();
  }
}
