package io.sandboxd.enforcer;

import io.sandboxd.attest.Hex;
import java.util.Optional;

/**
 * One program that would really execute for an exec request: its name (the file name it is invoked
 * by) and, when the resolver could read it, the BLAKE3 of its binary or script.
 */
public record ExecStep(String name, Optional<String> b3Hex) {

  public ExecStep {
    b3Hex.ifPresent(
        h -> {
          if (!Hex.isHex(h, 32)) {
            throw new IllegalArgumentException("binary hash must be 64 lowercase hex: " + h);
          }
        });
  }

  /** A step known by name only (no binary was hashed). */
  public static ExecStep named(String name) {
    return new ExecStep(name, Optional.empty());
  }

  /** A step with the hash of its binary. */
  public static ExecStep hashed(String name, String b3Hex) {
    return new ExecStep(name, Optional.of(b3Hex));
  }
}
