package io.sandboxd.daemon.jcp;

/**
 * A JCP request refused by a rule of WIRE.md §2.11 (a mint, a policy or an amendment); the message
 * starts with {@code rule <name>:} so clients and tests can tell the rules apart. Nothing changed.
 */
public class JcpRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String rule;

  public JcpRefusedException(String rule, String detail) {
    super("rule " + rule + ": " + detail);
    this.rule = rule;
  }

  public String rule() {
    return rule;
  }

  /**
   * A refusal by a count or rate bound ({@code max_children}, {@code rate}, {@code max_policies}).
   */
  public static final class Exhausted extends JcpRefusedException {
    private static final long serialVersionUID = 1L;

    public Exhausted(String rule, String detail) {
      super(rule, detail);
    }
  }

  /** A request naming a policy or minted grant this node does not hold. */
  public static final class NotFound extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NotFound(String message) {
      super(message);
    }
  }
}
