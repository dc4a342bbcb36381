package io.sandboxd.daemon.cli;

import io.sandboxd.attest.PublicKey;
import java.util.Collection;
import java.util.Optional;

/**
 * The one trust rule of sandboxctl's offline checks of node-log and fleet documents: the caller
 * names the one key it trusts with {@code --signer}, or the check refuses (exit 2) before reading
 * anything as valid; whatever the verdict, the key that was trusted is printed. A key taken from
 * the input itself proves only that someone signed it.
 */
final class SignerPolicy {
  private SignerPolicy() {}

  /**
   * The one key named in {@code given} (hex), or empty after saying on stderr why the check
   * refuses; {@code command} and {@code what} name the check and the document for that message.
   */
  static Optional<PublicKey> required(Collection<PublicKey> given, String command, String what) {
    if (given.size() != 1) {
      System.err.println(
          "sandboxctl "
              + command
              + ": "
              + what
              + (given.isEmpty() ? " is not checked against a key taken from itself" : "")
              + ": name the one node key you trust with --signer HEX");
      return Optional.empty();
    }
    return Optional.of(given.iterator().next());
  }

  /**
   * The keys named in {@code given} (several for a chain resumed on other hosts), or empty after
   * saying on stderr why the check refuses and which keys {@code input} names (only as a hint).
   */
  static Optional<java.util.Set<PublicKey>> requiredAny(
      java.util.Set<PublicKey> given, String command, String what, Collection<String> inputKeys) {
    if (given.isEmpty()) {
      System.err.println(
          "sandboxctl "
              + command
              + ": "
              + what
              + " is not checked against a key taken from itself: name the node key(s) you trust"
              + " with --signer HEX"
              + (inputKeys.isEmpty()
                  ? ""
                  : " (it is signed by " + String.join(", ", inputKeys) + ")"));
      return Optional.empty();
    }
    return Optional.of(given);
  }

  /** Prints the key a check trusted, as every offline check does on stdout. */
  static void printTrusted(PublicKey key) {
    System.out.println("signer " + key.hex() + " (--signer)");
  }
}
