package io.sandboxd.daemon;

import io.sandboxd.attest.PublicKey;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * The one trust rule of every offline check (sandboxctl's verify, log and fleet verify) and of
 * bundle import: a record counts only when its signer is one of the node keys the caller named (on
 * the command line, or in {@code durable.trusted_nodes}), and a record that claims an origin (a
 * fleet id, a log's name) is refused unless that origin is bound to its signer; an origin bound to
 * another key is refused naming both keys. A key or name taken from the record itself proves only
 * that someone signed it.
 */
public final class SignerTrust {
  /** A trusted node key, and the origin (fleet id or log name) it is trusted for, if named. */
  public record Binding(PublicKey key, Optional<String> origin) {
    @Override
    public String toString() {
      return origin.map(o -> o + "=").orElse("") + key.hex();
    }
  }

  private final List<Binding> bindings;

  private SignerTrust(List<Binding> bindings) {
    this.bindings = List.copyOf(bindings);
  }

  /** Trust in exactly {@code bindings}. */
  public static SignerTrust of(Collection<Binding> bindings) {
    return new SignerTrust(new ArrayList<>(bindings));
  }

  /** Trust in {@code hexKeys}, each for no named origin (durable.trusted_nodes). */
  public static SignerTrust ofKeys(Collection<String> hexKeys) {
    List<Binding> b = new ArrayList<>();
    for (String k : hexKeys) {
      b.add(new Binding(PublicKey.ofHex(k, "trusted node key"), Optional.empty()));
    }
    return new SignerTrust(b);
  }

  /**
   * {@code HEX} or {@code ORIGIN=HEX} (a key trusted for the fleet id or log name ORIGIN), as
   * {@code --signer} takes it; a malformed key throws naming {@code field}.
   */
  public static Binding parse(String spec, String field) {
    int eq = spec.lastIndexOf('=');
    if (eq < 0) {
      return new Binding(PublicKey.ofHex(spec, field), Optional.empty());
    }
    String origin = spec.substring(0, eq);
    if (origin.isEmpty()) {
      throw new io.sandboxd.attest.AttestException(field + ": empty origin before '='");
    }
    return new Binding(PublicKey.ofHex(spec.substring(eq + 1), field), Optional.of(origin));
  }

  public boolean isEmpty() {
    return bindings.isEmpty();
  }

  public List<Binding> bindings() {
    return bindings;
  }

  /** Whether {@code hexKey} is one of the trusted keys. */
  public boolean trusts(String hexKey) {
    return bindings.stream().anyMatch(b -> b.key().hex().equals(hexKey));
  }

  /**
   * Why a record signed by {@code signer} that claims {@code origin} is refused, or empty when the
   * signer is trusted and the origin is its own; {@code what} names the record. With {@code
   * bindingRequired} a signer trusted for no named origin is refused too (the check cannot tell
   * whose the origin is).
   */
  public Optional<String> refusal(
      String signer, String origin, String what, boolean bindingRequired) {
    if (!trusts(signer)) {
      return Optional.of(what + ": signed by node key " + signer + ", which is not trusted");
    }
    for (Binding b : bindings) {
      if (b.origin().filter(origin::equals).isPresent() && !b.key().hex().equals(signer)) {
        return Optional.of(
            what
                + ": claims origin "
                + origin
                + ", which belongs to node key "
                + b.key().hex()
                + ", but is signed by node key "
                + signer);
      }
    }
    List<String> own =
        bindings.stream()
            .filter(b -> b.key().hex().equals(signer))
            .flatMap(b -> b.origin().stream())
            .toList();
    if (!own.isEmpty() && !own.contains(origin)) {
      return Optional.of(
          what
              + ": claims origin "
              + origin
              + ", but its signer, node key "
              + signer
              + ", is trusted for "
              + String.join(", ", own));
    }
    if (own.isEmpty() && bindingRequired) {
      return Optional.of(
          what
              + ": claims origin "
              + origin
              + " and node key "
              + signer
              + " is trusted for no origin: name the binding as --signer ORIGIN=KEY (the node's"
              + " log origin, as `sandboxctl log checkpoint` prints it)");
    }
    return Optional.empty();
  }
}
