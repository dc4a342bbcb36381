package io.sandboxd.daemon.cli;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DevcontainerIngest;
import io.sandboxd.attest.EnvManifest;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.ManifestEnvelope;
import io.sandboxd.attest.ManifestRefusedException;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * `sandboxctl manifest`: devcontainer.json into a signed environment manifest, or into the subset.
 */
@Command(
    name = "manifest",
    description = "Ingest a devcontainer.json as a signed environment manifest (WIRE.md §2.7).",
    subcommands = {ManifestCommand.Ingest.class, ManifestCommand.Derive.class})
final class ManifestCommand extends CommandGroup {
  /** Every refusal on its own line, so a user sees all of them at once. */
  static void printRefusals(String who, String file, ManifestRefusedException e) {
    PrintStream err = System.err;
    err.println(
        who + ": " + Input.name(file) + ": refused (" + e.refusals().size() + " field(s)):");
    e.refusals().forEach(r -> err.println("  " + r.field() + ": " + r.reason()));
  }

  /**
   * A subcommand that reads one devcontainer.json, FILE or stdin; a refusal names every field, and
   * all exit 2, each message starting with the command ({@code sandboxctl manifest ingest}).
   */
  abstract static class OnDocument implements Callable<Integer> {
    @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "devcontainer.json (JSONC).")
    String file;

    @Spec CommandLine.Model.CommandSpec command;

    /** What the subcommand does with the document, as {@code who}; returns the exit status. */
    abstract int apply(String who, byte[] devcontainer) throws IOException;

    @Override
    public Integer call() {
      String who = command.qualifiedName(" ");
      try {
        return apply(who, Input.read(file));
      } catch (ManifestRefusedException e) {
        printRefusals(who, file, e);
        return Sandboxctl.UNUSABLE;
      } catch (AttestException | IOException e) {
        System.err.println(who + ": " + e.getMessage());
        return Sandboxctl.UNUSABLE;
      }
    }
  }

  /** `sandboxctl manifest ingest FILE [--key KEY]`. */
  @Command(
      name = "ingest",
      description =
          "Print the signed manifest envelope of a devcontainer.json (core, address, pinned,"
              + " signature, public_key); exit 2 naming every refused field.")
  static final class Ingest extends OnDocument {
    @Option(
        names = "--key",
        paramLabel = "FILE",
        description = "Private key file to sign with (default: a one-time key, named on stderr).")
    Path key;

    @Override
    int apply(String who, byte[] devcontainer) throws IOException {
      EnvManifest m = DevcontainerIngest.ingest(devcontainer);
      SigningKey k = key == null ? SigningKey.generate() : KeyFile.read(key);
      if (key == null) {
        System.err.println(
            who + ": signed with a one-time key " + k.publicKey().hex() + "; pass --key to sign");
      }
      if (!m.pinned()) {
        System.err.println(who + ": unpinned: image " + m.image() + " has no @sha256: digest");
      }
      System.out.println(ManifestEnvelope.sign(m, k).toJsonLine());
      return 0;
    }
  }

  /** `sandboxctl manifest derive FILE`. */
  @Command(
      name = "derive",
      description =
          "Print the largest accepted document that can be made from a devcontainer.json (refused"
              + " fields removed, comments dropped); each removal and why on stderr.")
  static final class Derive extends OnDocument {
    @Override
    int apply(String who, byte[] devcontainer) throws IOException {
      DevcontainerIngest.Derivation d = DevcontainerIngest.derive(devcontainer);
      System.out.println(
          CanonicalJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(d.document()));
      d.removed().forEach(r -> System.err.println("removed " + r.field() + ": " + r.reason()));
      d.unresolved()
          .forEach(r -> System.err.println("unresolved " + r.field() + ": " + r.reason()));
      if (!d.accepted()) {
        System.err.println(who + ": the derived document is still refused; fix the above");
        return Sandboxctl.UNUSABLE;
      }
      return 0;
    }
  }
}
