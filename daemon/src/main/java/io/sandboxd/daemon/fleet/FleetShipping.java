package io.sandboxd.daemon.fleet;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.config.ConfigException;
import io.sandboxd.config.Fleet;
import io.sandboxd.daemon.store.FleetOutbox;
import io.sandboxd.daemon.store.RunStore;
import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A node's record shipping for one daemon's life: started in the background (the daemon serves
 * while its brokers are down or its cluster forms) and stopped by the daemon's close, before the
 * store it reads from closes.
 */
public final class FleetShipping implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(FleetShipping.class.getName());

  /** How long a close waits for a start under way: a connect gives up on a server after 5 s. */
  private static final long STOP_WAIT_MS = 10_000;

  /** No {@code fleet.nats}: nothing ships, nothing to stop. */
  public static final FleetShipping NONE = new FleetShipping(null, "");

  /** Starts shipping, waiting until {@code stop} says to give up; returns what close must close. */
  @FunctionalInterface
  interface Start {
    AutoCloseable start(BooleanSupplier stop) throws IOException, InterruptedException;
  }

  private final AtomicBoolean stop = new AtomicBoolean();
  private final Thread starter;
  private final String where;
  // Guarded by this: whether the start has returned, and what it started unless the close came
  // first.
  private boolean started;
  private AutoCloseable running;

  private FleetShipping(Start start, String where) {
    this.where = where;
    this.starter =
        start == null ? null : new Thread(() -> startUnlessStopped(start), "fleet-start");
  }

  /**
   * The aggregator's key that {@code fleet} names, checked as a key (the configuration checks only
   * its spelling): a node must not serve for days believing it ships to a key that cannot sign.
   */
  public static Optional<PublicKey> aggregatorKey(Fleet fleet) {
    try {
      return fleet.aggregatorKey().map(hex -> PublicKey.ofHex(hex, "aggregator_key"));
    } catch (AttestException e) {
      throw new ConfigException(
          "$.fleet.aggregator_key: not an Ed25519 public key (" + e.getMessage() + ")");
    }
  }

  /**
   * With {@code fleet.nats} configured, starts shipping this node's records; else {@link #NONE}.
   */
  public static FleetShipping startIfConfigured(Fleet fleet, RunStore store, SigningKey key) {
    if (fleet.nats().isEmpty()) {
      return NONE;
    }
    String urls = fleet.nats().get();
    PublicKey aggregator = aggregatorKey(fleet).orElseThrow();
    FleetOutbox outbox = new FleetOutbox(store);
    return start(
        stop ->
            RecordShipper.start(
                urls,
                fleet.replicas(),
                outbox,
                key.publicKey().hex(),
                aggregator,
                fleet.origin(),
                stop),
        urls);
  }

  static FleetShipping start(Start start, String where) {
    FleetShipping s = new FleetShipping(start, where);
    s.starter.setDaemon(true);
    s.starter.start();
    return s;
  }

  private void startUnlessStopped(Start start) {
    AutoCloseable opened;
    try {
      opened = start.start(stop::get);
    } catch (IOException | RuntimeException e) {
      if (!stop.get()) {
        LOG.log(Level.SEVERE, "fleet: cannot start shipping: " + e.getMessage(), e);
      }
      return;
    } catch (InterruptedException e) {
      return;
    }
    boolean keep;
    synchronized (this) {
      started = true;
      keep = !stop.get();
      if (keep) {
        running = opened;
      }
    }
    if (keep) {
      LOG.info("fleet: shipping records to " + where);
    } else {
      // The close came while it was starting: nothing else will close what it opened. The close's
      // interrupt (sent before this thread saw the stop) was for the wait, not for this.
      Thread.interrupted();
      closeQuietly(opened);
    }
  }

  /** True while the start is still under way (connecting, or waiting for the cluster). */
  boolean starting() {
    return starter != null && starter.isAlive();
  }

  /** Stops a start under way and the shipping that started; the outbox keeps what is unshipped. */
  @Override
  public void close() {
    if (starter == null) {
      return;
    }
    AutoCloseable r;
    synchronized (this) {
      stop.set(true);
      r = running;
      running = null;
      if (!started) {
        // Ends a pause between tries at once (a connect in progress ends within its timeout).
        starter.interrupt();
      }
    }
    try {
      starter.join(STOP_WAIT_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (starter.isAlive()) {
      LOG.warning("fleet: the start did not stop within " + STOP_WAIT_MS + " ms; left to end");
    }
    if (r != null) {
      closeQuietly(r);
    }
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.log(Level.WARNING, "fleet: closing the shipping failed: " + e.getMessage(), e);
    }
  }
}
