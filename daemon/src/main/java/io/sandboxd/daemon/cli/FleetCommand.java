package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.SignerTrust;
import io.sandboxd.daemon.fleet.FleetDocs;
import io.sandboxd.daemon.rpc.AggregateFleetRequest;
import io.sandboxd.daemon.rpc.ProveFleetRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `sandboxctl fleet`: signed sandbox.fleet/1 aggregates over the node's runs, and their proofs. */
@Command(
    name = "fleet",
    description = "Fleet aggregates (sandbox.fleet/1) and their inclusion and consistency proofs.",
    subcommands = {
      FleetCommand.Aggregate.class,
      FleetCommand.Prove.class,
      FleetCommand.Consistency.class,
      FleetCommand.Verify.class
    })
final class FleetCommand extends CommandGroup {
  static String readText(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      throw new AttestException(file + ": " + e.getMessage(), e);
    }
  }

  @Command(
      name = "aggregate",
      description =
          "Print the node's signed aggregate over the runs created in [--since, --until] (ms),"
              + " contiguous in the order they were stored; durable runs' receipts in its durable"
              + " part, counted in its totals.")
  static final class Aggregate extends DaemonAnswer {
    @Option(names = "--since", paramLabel = "MS", description = "From runs created at or after.")
    long since;

    @Option(
        names = "--until",
        paramLabel = "MS",
        description = "Through runs created at or before.")
    long until;

    @Override
    Optional<String> unusable() {
      return unusableIfNegative("--since/--until must not be negative", since, until);
    }

    @Override
    String answer(DaemonClient c) {
      return c.stub()
              .aggregateFleet(
                  AggregateFleetRequest.newBuilder().setSinceMs(since).setUntilMs(until).build())
              .getEnvelopeJson()
          + "\n";
    }
  }

  /**
   * A command that prints the daemon's fleet proof for a request made from aggregate files; an
   * aggregate that cannot be read is unusable input, named before the daemon is asked.
   */
  abstract static class Proof implements Callable<Integer> {
    @Mixin DaemonSocket daemon;

    /** The request, with the aggregates it names read. */
    abstract ProveFleetRequest request();

    @Override
    public Integer call() throws Exception {
      ProveFleetRequest req;
      try {
        req = request();
      } catch (AttestException e) {
        return Sandboxctl.unusable(daemon.command(), e.getMessage());
      }
      return daemon.print(daemon.command(), c -> c.stub().proveFleet(req).getProofJson() + "\n");
    }
  }

  @Command(name = "prove", description = "Print a run's inclusion proof in an aggregate.")
  static final class Prove extends Proof {
    @Parameters(paramLabel = "RUN", description = "The run id.")
    String run;

    @Option(names = "--aggregate", required = true, paramLabel = "FILE", description = "Aggregate.")
    Path aggregate;

    @Override
    ProveFleetRequest request() {
      return ProveFleetRequest.newBuilder()
          .setRunId(run)
          .setAggregateJson(readText(aggregate))
          .build();
    }
  }

  @Command(
      name = "consistency",
      description = "Print the consistency proof from an older aggregate to a newer one.")
  static final class Consistency extends Proof {
    @Parameters(index = "0", paramLabel = "OLD", description = "The older aggregate.")
    Path old;

    @Parameters(index = "1", paramLabel = "NEW", description = "The newer aggregate.")
    Path now;

    @Override
    ProveFleetRequest request() {
      // The older one read first, so that an unreadable pair names it.
      String o = readText(old);
      return ProveFleetRequest.newBuilder()
          .setAggregateJson(readText(now))
          .setOldAggregateJson(o)
          .build();
    }
  }

  /** Offline: exit 0 valid, 1 invalid (why on stderr), 2 unusable input, as {@code verify}. */
  @Command(
      name = "verify",
      description =
          "Verify a fleet proof offline against the aggregate (and, for a consistency proof, the"
              + " older one). Exit 0 valid, 1 invalid, 2 unusable.")
  static final class Verify implements Callable<Integer> {
    @Parameters(paramLabel = "PROOF", description = "The proof document (- for stdin).")
    String proof;

    @Option(names = "--aggregate", required = true, paramLabel = "FILE", description = "Aggregate.")
    Path aggregate;

    @Option(names = "--old", paramLabel = "FILE", description = "The older aggregate.")
    Path old;

    @Option(
        names = "--signer",
        paramLabel = "HEX",
        description =
            "FLEET_ID=HEX: the node key you trust and the fleet id (its log origin) it is trusted"
                + " for (required: a key or fleet id taken from the input proves nothing).")
    String signer;

    @Override
    public Integer call() throws Exception {
      FleetDocs.Verdict v;
      PublicKey trusted;
      try {
        SignerTrust.Binding binding = signer == null ? null : SignerTrust.parse(signer, "--signer");
        Optional<PublicKey> named =
            SignerPolicy.required(
                binding == null ? List.of() : List.of(binding.key()),
                "fleet verify",
                "an aggregate");
        if (named.isEmpty()) {
          return Sandboxctl.UNUSABLE;
        }
        trusted = named.get();
        JsonNode doc = CanonicalJson.parse(Input.read(proof));
        Envelope agg = Envelope.fromJson(CanonicalJson.parse(readText(aggregate)));
        Optional<Envelope> before =
            old == null
                ? Optional.empty()
                : Optional.of(Envelope.fromJson(CanonicalJson.parse(readText(old))));
        SignerTrust trust = SignerTrust.of(List.of(binding));
        // Whose fleet the aggregate claims to be: without a binding for the key, nobody can say.
        String fleetId = FleetDocs.aggregate(agg, "--aggregate").fleetId();
        if (binding.origin().isEmpty()) {
          System.err.println(
              "sandboxctl fleet verify: "
                  + trust.refusal(trusted.hex(), fleetId, "--aggregate", true).orElseThrow());
          SignerPolicy.printTrusted(trusted);
          return Sandboxctl.UNUSABLE;
        }
        v = FleetDocs.verifyFleet(doc, agg, before, Optional.of(trusted));
        if (v instanceof FleetDocs.Verdict.Valid) {
          // Signed by the named key (verifyFleet checked): now the fleet id must be the key's.
          Optional<String> refused = trust.refusal(trusted.hex(), fleetId, "--aggregate", true);
          if (refused.isEmpty() && before.isPresent()) {
            refused =
                trust.refusal(
                    trusted.hex(),
                    FleetDocs.aggregate(before.get(), "--old").fleetId(),
                    "--old",
                    true);
          }
          if (refused.isPresent()) {
            v = new FleetDocs.Verdict.Invalid(refused.get());
          }
        }
      } catch (AttestException | IOException e) {
        return Sandboxctl.unusable("fleet verify", e.getMessage());
      }
      if (v instanceof FleetDocs.Verdict.Invalid inv) {
        System.err.println("invalid: " + inv.why());
        SignerPolicy.printTrusted(trusted);
        return 1;
      }
      System.out.println("valid: " + ((FleetDocs.Verdict.Valid) v).what());
      SignerPolicy.printTrusted(trusted);
      return 0;
    }
  }
}
