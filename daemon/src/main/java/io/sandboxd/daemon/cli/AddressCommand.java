package io.sandboxd.daemon.cli;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import java.io.IOException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `sandboxctl address`: the 64-hex BLAKE3-256 of a document's canonical bytes (or raw bytes). */
@Command(name = "address", description = "Print the BLAKE3-256 address of a JSON document.")
final class AddressCommand implements Callable<Integer> {
  @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "Input (default: stdin).")
  String file;

  @Option(names = "--raw", description = "Hash the bytes as given, not their canonical form.")
  boolean raw;

  @Override
  public Integer call() {
    try {
      byte[] in = Input.read(file);
      System.out.println(Blake3.hex(raw ? in : CanonicalJson.canonicalize(in)));
      return 0;
    } catch (AttestException | IOException e) {
      return Sandboxctl.unusable("address", Input.name(file) + ": " + e.getMessage());
    }
  }
}
