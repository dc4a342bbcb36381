package io.sandboxd.daemon.fleet;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The JetStream side shared by the nodes and the aggregator: two replicated file streams, one of
 * signed records (a subject per node key, {@code Nats-Msg-Id} = record address) and one of the
 * aggregator's inclusion proofs back to each node.
 */
public final class FleetStreams {
  public static final String RECORDS_STREAM = "SANDBOXD_RECORDS";
  public static final String PROOFS_STREAM = "SANDBOXD_PROOFS";
  public static final String RECORDS = "sandboxd.records.";
  public static final String PROOFS = "sandboxd.proofs.";
  public static final String CHECKPOINTS = "sandboxd.fleet.checkpoint";

  /**
   * The broker's dedup window: a record re-shipped after it is sent again (the aggregator dedups).
   */
  public static final Duration DUPLICATE_WINDOW = Duration.ofSeconds(20);

  /** How often a wait for the cluster is reported after its first refusal. */
  public static final Duration REPORT_EVERY = Duration.ofSeconds(30);

  private static final long FIRST_PAUSE_MS = 200;
  private static final long LONGEST_PAUSE_MS = 2_000;

  private FleetStreams() {}

  /** Connects to the comma-separated server URLs, reconnecting for ever across server failures. */
  public static Connection connect(String urls, String name)
      throws IOException, InterruptedException {
    String[] servers = Arrays.stream(urls.split(",")).map(String::strip).toArray(String[]::new);
    Options o =
        Options.builder()
            .servers(servers)
            .connectionName(name)
            .maxReconnects(-1)
            .reconnectWait(Duration.ofMillis(200))
            .connectionTimeout(Duration.ofSeconds(5))
            .build();
    return Nats.connectReconnectOnConnect(o);
  }

  /**
   * Creates both streams with {@code replicas} replicas when they do not exist yet, waiting for a
   * cluster that is still forming (no leader, or too few peers for the replicas yet) for as long as
   * it takes: until {@code stop} says to give up, when the last refusal is thrown. {@code waiting}
   * hears the first refusal and then one every {@link #REPORT_EVERY}, for a log.
   */
  public static void ensure(
      Connection nc, int replicas, BooleanSupplier stop, Consumer<IOException> waiting)
      throws IOException, InterruptedException {
    ensure(nc.jetStreamManagement(), replicas, stop, waiting);
  }

  static void ensure(
      JetStreamManagement jsm, int replicas, BooleanSupplier stop, Consumer<IOException> waiting)
      throws IOException, InterruptedException {
    Retry retry = new Retry(stop, waiting);
    ensure(jsm, RECORDS_STREAM, RECORDS + ">", replicas, retry);
    ensure(jsm, PROOFS_STREAM, PROOFS + ">", replicas, retry);
  }

  private static void ensure(
      JetStreamManagement jsm, String name, String subject, int replicas, Retry retry)
      throws IOException, InterruptedException {
    while (true) {
      try {
        jsm.getStreamInfo(name);
        return;
      } catch (JetStreamApiException notThere) {
        try {
          jsm.addStream(
              StreamConfiguration.builder()
                  .name(name)
                  .subjects(subject)
                  .storageType(StorageType.File)
                  .replicas(replicas)
                  .duplicateWindow(DUPLICATE_WINDOW)
                  .build());
          return;
        } catch (JetStreamApiException raced) {
          // Another node created it meanwhile, or the cluster has no leader or too few peers yet:
          // look again.
          retry.after(new IOException("stream " + name + ": " + raced.getMessage(), raced));
        }
      } catch (IOException e) {
        retry.after(e);
      }
    }
  }

  /** The pauses between tries, growing to {@link #LONGEST_PAUSE_MS}, and their reports. */
  private static final class Retry {
    private final BooleanSupplier stop;
    private final Consumer<IOException> waiting;
    private long pauseMs = FIRST_PAUSE_MS;
    private long reportedAt;
    private boolean reported;

    Retry(BooleanSupplier stop, Consumer<IOException> waiting) {
      this.stop = stop;
      this.waiting = waiting;
    }

    void after(IOException refusal) throws IOException, InterruptedException {
      if (stop.getAsBoolean()) {
        throw refusal;
      }
      long now = System.nanoTime();
      if (!reported || now - reportedAt >= REPORT_EVERY.toNanos()) {
        waiting.accept(refusal);
        reported = true;
        reportedAt = now;
      }
      Thread.sleep(pauseMs);
      pauseMs = Math.min(LONGEST_PAUSE_MS, pauseMs * 2);
    }
  }
}
