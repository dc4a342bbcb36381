package io.sandboxd.daemon.fleet;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.PullSubscribeOptions;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.FleetProof;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.daemon.ReportPace;
import io.sandboxd.daemon.store.FleetOutbox;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A node's side of fleet shipping: publishes every signed record that has no proof yet to the
 * records stream ({@code Nats-Msg-Id} = its address), and keeps it unshipped until a proof from the
 * aggregator verifies (a broker acknowledgement is not evidence). Re-sends what stays without a
 * proof, so a restart, a lost message or a lost proof only costs a resend.
 */
public final class RecordShipper implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(RecordShipper.class.getName());
  private static final long RESEND_MS = FleetStreams.DUPLICATE_WINDOW.toMillis() + 5_000;

  private final Connection nc;
  private final FleetOutbox outbox;
  private final String node;
  private final PublicKey aggregator;
  private final String origin;
  private final AtomicBoolean stop = new AtomicBoolean();
  private final Map<String, Long> sentMs = new HashMap<>();
  // Whatever can publish on this node's proof subject may send junk at any rate, and a failing
  // store fails every 500 ms: both reach the log at a pace.
  private final ReportPace refusedProofs = new ReportPace();
  private final ReportPace shipFailures = new ReportPace();
  private final Thread shipping;
  private final Thread proving;

  private RecordShipper(
      Connection nc, FleetOutbox outbox, String node, PublicKey aggregator, String origin) {
    this.nc = nc;
    this.outbox = outbox;
    this.node = node;
    this.aggregator = aggregator;
    this.origin = origin;
    this.shipping = new Thread(this::shipLoop, "fleet-ship");
    this.proving = new Thread(this::proofLoop, "fleet-proofs");
  }

  /**
   * Connects and starts shipping the outbox of this node (key {@code node}, hex), waiting for the
   * brokers and their JetStream cluster for as long as it takes: until {@code stop} says to give
   * up, when the last refusal is thrown and nothing is left open.
   */
  public static RecordShipper start(
      String urls,
      int replicas,
      FleetOutbox outbox,
      String node,
      PublicKey aggregator,
      String origin,
      BooleanSupplier stop)
      throws IOException, InterruptedException {
    Connection nc =
        FleetStreams.connect(
            urls,
            "sandboxd-node-" + node.substring(0, 16),
            stop,
            e -> LOG.warning("fleet: waiting for NATS before shipping: " + e.getMessage()));
    try {
      // The node serves meanwhile, its records waiting in the outbox: a node started before its
      // cluster has formed still ships once it has.
      FleetStreams.ensure(
          nc,
          replicas,
          stop,
          e -> LOG.warning("fleet: waiting for JetStream before shipping: " + e.getMessage()));
    } catch (IOException | InterruptedException | RuntimeException e) {
      nc.close();
      throw e;
    }
    RecordShipper s = new RecordShipper(nc, outbox, node, aggregator, origin);
    s.shipping.setDaemon(true);
    s.proving.setDaemon(true);
    s.shipping.start();
    s.proving.start();
    return s;
  }

  private void shipLoop() {
    JetStream js;
    try {
      js = nc.jetStream();
    } catch (IOException e) {
      LOG.log(Level.SEVERE, "fleet: no JetStream context", e);
      return;
    }
    while (!stop.get()) {
      try {
        long now = System.currentTimeMillis();
        List<FleetOutbox.Unshipped> todo = outbox.unshipped(1000);
        int sent = 0;
        for (FleetOutbox.Unshipped u : todo) {
          Long last = sentMs.get(u.address());
          if (last != null && now - last < RESEND_MS) {
            continue;
          }
          js.publishAsync(
                  FleetStreams.RECORDS + node,
                  u.envelope().getBytes(StandardCharsets.UTF_8),
                  PublishOptions.builder().messageId(u.address()).build())
              .whenComplete(
                  (ack, err) -> {
                    if (err != null) {
                      synchronized (sentMs) {
                        sentMs.remove(u.address());
                      }
                    }
                  });
          synchronized (sentMs) {
            sentMs.put(u.address(), now);
          }
          sent++;
        }
        synchronized (sentMs) {
          if (sentMs.size() > 100_000) {
            sentMs.clear();
          }
        }
        Thread.sleep(sent == 0 && !outbox.behind() ? 250 : 20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RuntimeException e) {
        shipFailures.log(LOG, Level.WARNING, "fleet: shipping failed, retrying: " + e, e);
        sleep(500);
      }
    }
  }

  private void proofLoop() {
    JetStreamSubscription sub = null;
    while (!stop.get()) {
      try {
        if (sub == null) {
          sub =
              nc.jetStream()
                  .subscribe(
                      FleetStreams.PROOFS + node,
                      PullSubscribeOptions.builder()
                          .durable("node-" + node.substring(0, 32))
                          .build());
        }
        for (Message m : sub.fetch(256, Duration.ofMillis(500))) {
          accept(m);
        }
      } catch (IOException | JetStreamApiException | RuntimeException e) {
        LOG.log(Level.FINE, "fleet: proof fetch failed, retrying", e);
        sleep(300);
      }
    }
  }

  private void accept(Message m) {
    Optional<FleetProof> p = verified(m.getData(), aggregator, origin, refusedProofs);
    if (p.isPresent()) {
      // A store that fails here throws: the proof stays unacknowledged and comes again.
      outbox.prove(
          p.get().address(),
          p.get().proof().treeSize(),
          CanonicalJson.canonicalString(p.get().toJson()));
    }
    m.ack();
  }

  /**
   * The proof in {@code data} when it is one and verifies against the aggregator's checkpoint;
   * empty for anything else, whatever the bytes (refused at {@code pace}; its record stays
   * unshipped and is sent again). Acknowledged either way, so junk is not delivered for ever.
   */
  static Optional<FleetProof> verified(
      byte[] data, PublicKey aggregator, String origin, ReportPace pace) {
    try {
      FleetProof p = FleetProof.fromJson(CanonicalJson.parse(data));
      p.verify(aggregator, origin);
      return Optional.of(p);
    } catch (RuntimeException e) {
      pace.log(LOG, Level.WARNING, "fleet: refused a proof: " + e, null);
      return Optional.empty();
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() throws InterruptedException {
    stop.set(true);
    try {
      shipping.join(2000);
      proving.join(2000);
    } finally {
      nc.close();
    }
  }
}
