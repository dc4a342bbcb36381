package io.sandboxd.daemon.run;

import io.sandboxd.attest.Attestation;

/**
 * What one client asked to run, decoded once from its request and not yet checked: the module's
 * bytes, its grants (given, or resolved from a minted child, which {@code jcp} then names; null for
 * none), the entry, the environment ({@code NAME}, {@code b3:<address>} or empty), the WASI command
 * input, whether it runs detached (durable, nobody waiting), and the module's address when the
 * decoder already knows it (the module store verified held bytes against it, so a run by address
 * does not hash its module again; null: admission hashes the bytes). {@link Admission#admit(Caller,
 * Submission)} does every check.
 */
public record Submission(
    byte[] module,
    String grantsJson,
    String entry,
    String env,
    CommandInput input,
    Attestation.Jcp jcp,
    boolean detached,
    String moduleAddress) {
  /** A submission that waits for its run, with no environment, input or minted grant. */
  public static Submission of(byte[] module, String grantsJson, String entry) {
    return new Submission(module, grantsJson, entry, "", CommandInput.NONE, null, false, null);
  }
}
