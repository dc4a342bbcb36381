package io.sandboxd.daemon.cli;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** `sandboxctl keygen`: a new Ed25519 key file (0600); prints the public key. */
@Command(
    name = "keygen",
    description = "Write a new Ed25519 private key (0600), print its public key.")
final class KeygenCommand implements Callable<Integer> {
  @Option(
      names = "--out",
      required = true,
      paramLabel = "FILE",
      description = "Key file to create.")
  Path out;

  @Override
  public Integer call() {
    try {
      SigningKey key = SigningKey.generate();
      KeyFile.write(out, key);
      System.out.println(key.publicKey().hex());
      return 0;
    } catch (AttestException | IOException e) {
      return Sandboxctl.unusable("keygen", e.getMessage());
    }
  }
}
