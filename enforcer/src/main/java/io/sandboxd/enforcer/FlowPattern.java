package io.sandboxd.enforcer;

/** A flow-grant pattern (Q15), identified and ordered by its normalized text. */
public interface FlowPattern<P extends FlowPattern<P>> extends Comparable<P> {

  /** The normalized pattern text; for a source pattern, the origin label a matching read adds. */
  String label();

  // By label, so a grant's sorted lists are in canonical order and one text is one entry.
  @Override
  default int compareTo(P o) {
    return label().compareTo(o.label());
  }
}
