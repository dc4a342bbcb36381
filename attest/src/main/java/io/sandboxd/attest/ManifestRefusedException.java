package io.sandboxd.attest;

import java.util.List;

/**
 * A devcontainer.json that yields no environment manifest, with every field at fault (not just the
 * first) and why: refused fields, unknown fields, malformed values, or a document that cannot be
 * read at all.
 */
public final class ManifestRefusedException extends AttestException {
  private static final long serialVersionUID = 1L;

  /** One field at fault: its path in the document ({@code mounts[1].readonly}) and the reason. */
  public record Refusal(String field, String reason) {
    @Override
    public String toString() {
      return field + ": " + reason;
    }
  }

  private final transient List<Refusal> refusals;

  public ManifestRefusedException(List<Refusal> refusals) {
    super(message(refusals));
    this.refusals = List.copyOf(refusals);
  }

  /** A document that cannot be read as JSONC at all (one refusal, field {@code document}). */
  static ManifestRefusedException unreadable(AttestException cause) {
    ManifestRefusedException e =
        new ManifestRefusedException(List.of(new Refusal("document", cause.getMessage())));
    e.initCause(cause);
    return e;
  }

  /** Every field at fault, in document order. */
  public List<Refusal> refusals() {
    return refusals;
  }

  private static String message(List<Refusal> refusals) {
    StringBuilder sb = new StringBuilder("devcontainer refused (");
    sb.append(refusals.size()).append(refusals.size() == 1 ? " field" : " fields").append("): ");
    for (int i = 0; i < refusals.size(); i++) {
      sb.append(i == 0 ? "" : "; ").append(refusals.get(i));
    }
    return sb.toString();
  }
}
