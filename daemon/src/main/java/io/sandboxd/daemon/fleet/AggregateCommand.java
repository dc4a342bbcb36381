package io.sandboxd.daemon.fleet;

import io.nats.client.Connection;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.config.Fleet;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** `sandboxd aggregate`: the fleet aggregator (a second entry point of the same jar). */
@Command(
    name = "aggregate",
    description =
        "Consume the nodes' signed records from NATS JetStream, append them to the fleet log,"
            + " publish signed fleet checkpoints and per-record inclusion proofs.")
public final class AggregateCommand implements Callable<Integer> {
  @Option(
      names = "--nats",
      required = true,
      paramLabel = "URL[,URL...]",
      description = "JetStream server URL(s).")
  String nats;

  @Option(
      names = "--nodes",
      required = true,
      paramLabel = "FILE",
      description = "Allowlisted node keys: one 64-hex Ed25519 public key per line (# comments).")
  Path nodes;

  @Option(
      names = "--state",
      required = true,
      paramLabel = "DIR",
      description = "Fleet log, checkpoint, refusals and the aggregator's key (keys/).")
  Path state;

  @Option(names = "--origin", paramLabel = "NAME", description = "Fleet log name (checkpoints).")
  String origin = Fleet.DEFAULT_ORIGIN;

  @Option(names = "--replicas", paramLabel = "N", description = "Stream replicas (default 3).")
  int replicas = 3;

  /** Reads the allowlist; a bad line is refused naming its number. */
  static Set<String> readNodes(Path file) throws IOException {
    Set<String> out = new LinkedHashSet<>();
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    for (int i = 0; i < lines.size(); i++) {
      String l = lines.get(i).strip();
      if (l.isEmpty() || l.startsWith("#")) {
        continue;
      }
      if (!l.matches("[0-9a-f]{64}")) {
        throw new IllegalArgumentException(
            file + " line " + (i + 1) + ": expected a 64-hex Ed25519 public key");
      }
      out.add(l);
    }
    return out;
  }

  @Override
  public Integer call() throws Exception {
    Set<String> allowed;
    try {
      allowed = readNodes(nodes);
    } catch (IOException | IllegalArgumentException e) {
      System.err.println("sandboxd aggregate: --nodes: " + e.getMessage());
      return 2;
    }
    Files.createDirectories(state.resolve("keys"));
    SigningKey key = KeyFile.loadOrCreate(state.resolve("keys/aggregator.ed25519"));
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stop.set(true);
                  try {
                    done.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }));
    try (FleetLog log = FleetLog.open(state.resolve("fleet.log"));
        Connection nc =
            FleetStreams.connect(
                nats,
                "sandboxd-aggregate",
                stop::get,
                e ->
                    System.err.println(
                        "sandboxd aggregate: waiting for NATS: " + e.getMessage()))) {
      FleetStreams.ensure(
          nc,
          replicas,
          stop::get,
          e -> System.err.println("sandboxd aggregate: waiting for JetStream: " + e.getMessage()));
      FleetAggregator agg = new FleetAggregator(nc, log, key, origin, allowed, state);
      System.err.println(
          "sandboxd aggregate: serving; key "
              + key.publicKey().hex()
              + " origin "
              + origin
              + " leaves "
              + log.size()
              + " nodes "
              + allowed.size());
      agg.run(stop);
      System.err.println(
          "sandboxd aggregate: stopped; appended "
              + agg.appended()
              + " duplicates "
              + agg.duplicates()
              + " refused "
              + agg.refused());
    } finally {
      done.countDown();
    }
    return 0;
  }
}
