package io.sandboxd.daemon;

import io.sandboxd.config.Fleet;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.StoreException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Names the node log after the node and signs a checkpoint at least every {@code
 * checkpoint_every_ms} while it grows (appends sign one every {@code checkpoint_every_records}).
 */
final class LogCheckpointer implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(LogCheckpointer.class.getName());

  // null when the log is off
  private final ScheduledExecutorService timer;

  private LogCheckpointer(ScheduledExecutorService timer) {
    this.timer = timer;
  }

  /** The log's origin line: {@code sandboxd/<host id>}, or by key when the id cannot be one. */
  static String origin(NodeIdentity node) {
    String id = node.host().id();
    boolean usable = !id.isEmpty() && id.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '+');
    return "sandboxd/" + (usable ? id : node.key().publicKey().hex().substring(0, 16));
  }

  /**
   * Configures the store's log and starts the timer (a daemon thread), which runs until {@link
   * #close}: a closed store does not end it.
   */
  static LogCheckpointer start(RunStore store, NodeIdentity node, Fleet fleet) {
    String origin = origin(node);
    store.configureLog(
        origin, fleet.checkpointEveryRecords(), fleet.checkpointEveryMs(), fleet.log());
    LOG.info(
        "node log "
            + origin
            + (fleet.log()
                ? ": "
                    + store.logSize()
                    + " leaves, checkpoint every "
                    + fleet.checkpointEveryRecords()
                    + " records or "
                    + fleet.checkpointEveryMs()
                    + " ms"
                : ": off (fleet.log is false)"));
    if (!fleet.log()) {
      return new LogCheckpointer(null);
    }
    ScheduledExecutorService timer = BackgroundTimer.named("node-log-checkpoint");
    timer.scheduleWithFixedDelay(
        () -> {
          try {
            store.checkpointLogIfDueNow();
          } catch (StoreException e) {
            LOG.fine("node log checkpoint: " + e.getMessage());
          }
        },
        fleet.checkpointEveryMs(),
        fleet.checkpointEveryMs(),
        TimeUnit.MILLISECONDS);
    return new LogCheckpointer(timer);
  }

  /** Stops the timer before the store closes, letting a checkpoint being signed finish. */
  @Override
  public void close() {
    if (timer == null) {
      return;
    }
    timer.shutdown();
    try {
      if (!timer.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.warning("node log checkpoint: still signing after 10 s; left to end");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
