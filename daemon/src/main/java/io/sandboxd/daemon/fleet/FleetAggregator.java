package io.sandboxd.daemon.fleet;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetProof;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.Verification;
import io.sandboxd.daemon.LogLine;
import io.sandboxd.daemon.ReportPace;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * `sandboxd aggregate`: consumes the records stream, verifies each record's signature against the
 * allowlisted node keys (refusing and reporting anything else), appends new addresses to the
 * durable {@link FleetLog}, forces it to disk, publishes a signed fleet checkpoint (C2SP signed
 * note) and a per-record inclusion proof to each node's proof subject, and only then acknowledges
 * the batch. A restart at any moment redelivers what was not acknowledged; the address index turns
 * a redelivery into a second proof, never a second leaf. A disk that fails or fills stops nothing
 * but the batch at hand: it is not acknowledged, the aggregator waits and goes on, and the broker
 * delivers the batch again.
 */
public final class FleetAggregator {
  private static final Logger LOG = Logger.getLogger(FleetAggregator.class.getName());
  private static final int BATCH = 512;
  private static final long FIRST_PAUSE_MS = 200;
  private static final long LONGEST_PAUSE_MS = 5_000;

  private final Connection nc;
  private final FleetLog log;
  private final SigningKey key;
  private final String origin;
  private final Set<String> allowed;
  private final Path stateDir;
  private long appended;
  private long duplicates;
  private long refused;
  // A full disk fails every batch: its reports reach the log at a pace.
  private final ReportPace diskFailures = new ReportPace();
  private final ReportPace refusals = new ReportPace();
  private final RefusalFile refusalFile;

  FleetAggregator(
      Connection nc, FleetLog log, SigningKey key, String origin, Set<String> allowed, Path state) {
    this.nc = nc;
    this.log = log;
    this.key = key;
    this.origin = origin;
    this.allowed = Set.copyOf(allowed);
    this.stateDir = state;
    this.refusalFile = new RefusalFile(state);
  }

  /** Consumes until {@code stop} is set. */
  void run(AtomicBoolean stop) throws IOException, InterruptedException {
    JetStream js = nc.jetStream();
    JetStreamSubscription sub = null;
    while (sub == null && !stop.get()) {
      try {
        sub =
            js.subscribe(
                FleetStreams.RECORDS + ">",
                PullSubscribeOptions.builder()
                    .durable("aggregator")
                    .configuration(
                        ConsumerConfiguration.builder()
                            .ackWait(Duration.ofSeconds(10))
                            .maxAckPending(100_000)
                            .build())
                    .build());
      } catch (IOException | io.nats.client.JetStreamApiException e) {
        LOG.warning("aggregate: cannot subscribe yet: " + e.getMessage());
        Thread.sleep(500);
      }
    }
    long pause = FIRST_PAUSE_MS;
    while (!stop.get()) {
      List<Message> batch;
      try {
        batch = sub.fetch(BATCH, Duration.ofMillis(500));
      } catch (RuntimeException e) {
        // A server went away: the client reconnects to another; fetch again.
        LOG.log(Level.FINE, "aggregate: fetch failed", e);
        Thread.sleep(200);
        continue;
      }
      if (batch.isEmpty()) {
        continue;
      }
      try {
        handle(js, batch);
        pause = FIRST_PAUSE_MS;
      } catch (IOException e) {
        // Nothing of the batch was acknowledged: the broker delivers it again after the ack wait,
        // and the log, whole whatever failed (FleetLog), takes it then.
        diskFailures.log(
            LOG,
            Level.WARNING,
            "aggregate: cannot keep the fleet log, its checkpoint or a refusal in "
                + stateDir
                + ": "
                + e
                + "; the batch of "
                + batch.size()
                + " is not acknowledged and comes again, and the aggregator goes on",
            null);
        Thread.sleep(pause);
        pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
      }
    }
  }

  private record Accepted(Message message, String address, String node) {}

  void handle(JetStream js, List<Message> batch) throws IOException {
    if (log.unsynced()) {
      // A force failed: no new leaf until the ones before it are on disk.
      log.sync();
    }
    List<Accepted> ok = new ArrayList<>();
    for (Message m : batch) {
      Accepted a;
      try {
        a = check(m);
      } catch (AttestException e) {
        refuse(m, e.getMessage());
        continue;
      }
      if (log.indexOf(a.address()).isEmpty()) {
        log.append(a.address(), a.node());
        appended++;
      } else {
        duplicates++;
      }
      ok.add(a);
    }
    if (ok.isEmpty()) {
      return;
    }
    // Nothing is acknowledged (nor proven) before the leaves are on disk.
    log.sync();
    String note = LogCheckpoint.of(origin, log.head()).sign(key);
    writeCheckpoint(note);
    nc.publish(FleetStreams.CHECKPOINTS, note.getBytes(StandardCharsets.UTF_8));
    List<CompletableFuture<PublishAck>> sent = new ArrayList<>();
    for (Accepted a : ok) {
      long leaf = log.indexOf(a.address()).getAsLong();
      FleetProof p = new FleetProof(a.address(), log.prove(leaf), note);
      sent.add(
          js.publishAsync(
              FleetStreams.PROOFS + a.node(),
              CanonicalJson.canonicalize(p.toJson()),
              PublishOptions.builder().messageId(a.address() + "@" + log.size()).build()));
    }
    for (int i = 0; i < ok.size(); i++) {
      try {
        sent.get(i).get(10, TimeUnit.SECONDS);
        ok.get(i).message().ack();
      } catch (Exception e) {
        // Unacknowledged: redelivered after the ack wait, deduplicated, proven again.
        LOG.warning("aggregate: proof for " + ok.get(i).address() + " not published: " + e);
      }
    }
  }

  /** The record in {@code m}, verified, or an AttestException saying why it is refused. */
  Accepted check(Message m) {
    String subject = m.getSubject();
    if (!subject.startsWith(FleetStreams.RECORDS)) {
      throw new AttestException("subject " + subject + ": not a records subject");
    }
    String node = subject.substring(FleetStreams.RECORDS.length());
    if (!allowed.contains(node)) {
      throw new AttestException("node " + node + " is not in the allowlist");
    }
    Envelope env = Envelope.fromJson(CanonicalJson.parse(m.getData()));
    if (!env.publicKey().equals(node)) {
      throw new AttestException(
          "record signed by " + env.publicKey() + " arrived on node " + node + "'s subject");
    }
    if (env.verify(Optional.of(PublicKey.ofHex(node, "node")))
        instanceof Verification.Invalid bad) {
      throw new AttestException("record " + env.address() + ": " + bad.reason());
    }
    Headers h = m.getHeaders();
    String id = h == null ? null : h.getFirst("Nats-Msg-Id");
    if (!env.address().equals(id)) {
      throw new AttestException(
          "Nats-Msg-Id " + id + " is not the record's address " + env.address());
    }
    return new Accepted(m, env.address(), node);
  }

  private void refuse(Message m, String reason) throws IOException {
    // The subject and the reason are a publisher's to choose, and so is how often they come.
    String subject = LogLine.of(m.getSubject());
    String why = LogLine.of(reason);
    refusals.log(
        LOG, Level.WARNING, "aggregate: refused a message on " + subject + ": " + why, null);
    var line = CanonicalJson.mapper().createObjectNode();
    line.put("subject", subject);
    line.put("reason", why);
    line.put("refused_ms", System.currentTimeMillis());
    refusalFile.append(CanonicalJson.canonicalString(line));
    // Counted once kept: a refusal the disk could not keep comes again.
    refused++;
    // Terminal: a refused record is never redelivered (it is reported, not retried).
    m.term();
  }

  private void writeCheckpoint(String note) throws IOException {
    Path tmp = stateDir.resolve("checkpoint.tmp");
    Files.writeString(tmp, note, StandardCharsets.UTF_8);
    Files.move(
        tmp,
        stateDir.resolve("checkpoint"),
        StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  long appended() {
    return appended;
  }

  long duplicates() {
    return duplicates;
  }

  long refused() {
    return refused;
  }
}
