package io.sandboxd.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.PullSubscribeOptions;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetProof;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.fleet.FleetStreams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `sandboxd aggregate` whose state directory fills up (a tmpfs of its own, in a mount namespace of
 * its own): a leaf, a checkpoint and a refusal that cannot be written hold back only their batch,
 * which is not acknowledged; the aggregator stays up, and once there is room every record is in the
 * fleet log once, in order of arrival with nothing torn, proven under a checkpoint that verifies,
 * and the refused record is reported once.
 */
class AggregatorDiskFullTest {
  private static final String ORIGIN = "test.full";
  private static final int BEFORE = 30;
  private static final int WHILE_FULL = 100;

  @TempDir Path dir;

  @Test
  void aFullDiskHoldsTheAggregatorBackAndLosesNothing() throws Exception {
    int port = FleetJetStreamTest.freePort();
    Path conf = dir.resolve("nats.conf");
    Files.writeString(
        conf,
        "listen: 127.0.0.1:" + port + "\njetstream { store_dir: \"" + dir.resolve("js") + "\" }\n");
    Process nats =
        new ProcessBuilder(FleetJetStreamTest.natsServer(), "-c", conf.toString())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("nats.log").toFile())
            .start();
    Process agg = null;
    try {
      String url = "nats://127.0.0.1:" + port;
      SigningKey node = SeededKeys.filled(0x51);
      SigningKey stranger = SeededKeys.filled(0x52);
      String nodeHex = node.publicKey().hex();
      Path nodes = dir.resolve("nodes.txt");
      Files.writeString(nodes, nodeHex + "\n");
      Path state = Files.createDirectories(dir.resolve("aggregate"));
      Path log = dir.resolve("aggregate.log");
      List<String> cmd = DiskFullTest.onTmpfs("1m", state);
      cmd.addAll(FleetJetStreamTest.aggregateCommand(url, nodes, state, ORIGIN, 1));
      agg = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      Poll.until(60, log, () -> Files.readString(log).contains("serving; key"));
      Matcher key = Pattern.compile("serving; key ([0-9a-f]{64})").matcher(Files.readString(log));
      assertTrue(key.find());
      PublicKey aggKey = PublicKey.ofHex(key.group(1), "aggregator");

      List<String> sent = new ArrayList<>();
      try (Connection nc = FleetStreams.connect(url, "test", () -> false, e -> {})) {
        JetStream js = nc.jetStream();
        JetStreamSubscription proofs =
            js.subscribe(
                FleetStreams.PROOFS + nodeHex,
                PullSubscribeOptions.builder().durable("proofs-seen").build());
        Map<String, FleetProof> proven = new HashMap<>();
        for (int i = 0; i < BEFORE; i++) {
          sent.add(publish(js, node, nodeHex, i));
        }
        Poll.until(60, log, () -> collect(proofs, proven, aggKey).keySet().containsAll(sent));

        // The file system fills: the next leaves, checkpoints and the refusal find no room.
        long pid = agg.pid();
        DiskFullTest.inNamespace(
            pid, "dd if=/dev/zero of=\"$0/fill\" bs=4096 2>/dev/null; df -k \"$0\" >&2", state);
        for (int i = BEFORE; i < BEFORE + WHILE_FULL; i++) {
          sent.add(publish(js, node, nodeHex, i));
        }
        Envelope strange =
            Envelope.sign(CanonicalJson.parse("{\"schema\":\"x/1\",\"n\":999999}"), stranger);
        Envelope forged =
            new Envelope(strange.core(), strange.address(), strange.signature(), nodeHex);
        js.publish(
            FleetStreams.RECORDS + nodeHex,
            forged.toJsonLine().getBytes(UTF_8),
            PublishOptions.builder().messageId(forged.address()).build());
        Poll.until(60, log, () -> Files.readString(log).contains("cannot keep the fleet log"));
        // Held back for a few rounds of redelivery (the ack wait is 10 s), and still up.
        Thread.sleep(12_000);
        assertTrue(
            agg.isAlive(), "the aggregator stopped on a full disk:\n" + Files.readString(log));
        String held = Files.readString(log);
        assertTrue(held.contains("No space left on device") && held.contains("comes again"), held);

        DiskFullTest.inNamespace(pid, "rm \"$0/fill\"", state);
        boolean all =
            Poll.within(
                90,
                200,
                () ->
                    collect(proofs, proven, aggKey).keySet().containsAll(sent)
                        && refusals(pid, state) == 1);
        assertTrue(
            all,
            "after room was made: "
                + proven.size()
                + " of "
                + sent.size()
                + " proven, refusals:\n"
                + refusalsText(pid, state)
                + "\nlog:\n"
                + Files.readString(log));
        assertTrue(agg.isAlive(), Files.readString(log));
        proofs.unsubscribe();

        // The fleet log: each record once, nothing torn, nothing else.
        byte[] leaves =
            Base64.getDecoder()
                .decode(
                    DiskFullTest.inNamespace(pid, "base64 -w0 \"$0/fleet.log\"", state).strip());
        assertEquals(0, leaves.length % 64, "a torn entry in the fleet log");
        Set<String> inLog = new LinkedHashSet<>();
        for (int i = 0; i < leaves.length; i += 64) {
          String address = Hex.encode(Arrays.copyOfRange(leaves, i, i + 32));
          assertTrue(inLog.add(address), "twice in the fleet log: " + address);
          assertEquals(nodeHex, Hex.encode(Arrays.copyOfRange(leaves, i + 32, i + 64)));
        }
        assertEquals(new LinkedHashSet<>(sent), inLog);
        assertEquals(BEFORE + WHILE_FULL, inLog.size());
        // The first BEFORE came before the disk filled, in the order sent.
        assertEquals(sent.subList(0, BEFORE), new ArrayList<>(inLog).subList(0, BEFORE));
        assertTrue(
            refusalsText(pid, state).contains("\"subject\":\"" + FleetStreams.RECORDS + nodeHex),
            refusalsText(pid, state));
      }
    } finally {
      if (agg != null) {
        agg.destroyForcibly().waitFor();
      }
      nats.destroyForcibly().waitFor();
    }
  }

  private static String publish(JetStream js, SigningKey node, String nodeHex, int n)
      throws Exception {
    Envelope e = Envelope.sign(CanonicalJson.parse("{\"schema\":\"x/1\",\"n\":" + n + "}"), node);
    js.publish(
        FleetStreams.RECORDS + nodeHex,
        e.toJsonLine().getBytes(UTF_8),
        PublishOptions.builder().messageId(e.address()).build());
    return e.address();
  }

  /** Takes what proofs have come, each verified against the aggregator's key, into {@code into}. */
  private static Map<String, FleetProof> collect(
      JetStreamSubscription proofs, Map<String, FleetProof> into, PublicKey aggKey) {
    for (Message m : proofs.fetch(512, Duration.ofMillis(500))) {
      FleetProof p = FleetProof.fromJson(CanonicalJson.parse(m.getData()));
      p.verify(aggKey, ORIGIN);
      into.put(p.address(), p);
      m.ack();
    }
    return into;
  }

  private static String refusalsText(long pid, Path state) throws Exception {
    return DiskFullTest.inNamespace(pid, "cat \"$0/refused.jsonl\" 2>/dev/null; true", state);
  }

  private static int refusals(long pid, Path state) throws Exception {
    return (int) refusalsText(pid, state).lines().count();
  }
}
