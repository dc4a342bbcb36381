package io.sandboxd.daemon.fleet;

import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.sandboxd.daemon.ReportPace;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

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

  private static final long FIRST_PAUSE_MS = 200;
  private static final long LONGEST_PAUSE_MS = 2_000;

  private FleetStreams() {}

  /**
   * Connects to the comma-separated server URLs, trying them again until one answers or {@code
   * stop} says to give up (then the last refusal is thrown); {@code waiting} hears the first
   * refusal and then one every {@link ReportPace#EVERY}. Once connected, the client reconnects for
   * ever across server failures, and reports those failures at the same pace.
   */
  public static Connection connect(
      String urls, String name, BooleanSupplier stop, Consumer<IOException> waiting)
      throws IOException, InterruptedException {
    String[] servers = Arrays.stream(urls.split(",")).map(String::strip).toArray(String[]::new);
    Options o =
        Options.builder()
            .servers(servers)
            .connectionName(name)
            .maxReconnects(-1)
            .reconnectWait(Duration.ofMillis(200))
            .connectionTimeout(Duration.ofSeconds(5))
            .errorListener(new PacedErrors(name))
            .build();
    // Not the client's own reconnect-on-connect: that call neither returns nor hears an interrupt
    // until a server answers, so a node whose broker is down could never stop waiting for it.
    Retry retry = new Retry(stop, waiting);
    while (true) {
      try {
        return Nats.connect(o);
      } catch (IOException refused) {
        retry.after(refused);
      }
    }
  }

  /**
   * Creates both streams with {@code replicas} replicas when they do not exist yet, waiting for a
   * cluster that is still forming (no leader, or too few peers for the replicas yet) for as long as
   * it takes: until {@code stop} says to give up, when the last refusal is thrown. {@code waiting}
   * hears the first refusal and then one every {@link ReportPace#EVERY}, for a log.
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
    private final ReportPace pace = new ReportPace();
    private long pauseMs = FIRST_PAUSE_MS;

    Retry(BooleanSupplier stop, Consumer<IOException> waiting) {
      this.stop = stop;
      this.waiting = waiting;
    }

    void after(IOException refusal) throws IOException, InterruptedException {
      if (stop.getAsBoolean()) {
        throw refusal;
      }
      if (pace.due(System.nanoTime()) >= 0) {
        waiting.accept(refusal);
      }
      Thread.sleep(pauseMs);
      pauseMs = Math.min(LONGEST_PAUSE_MS, pauseMs * 2);
    }
  }

  /**
   * The client's failures, logged at a pace: while a broker is down the client tries again every
   * 200 ms, and its default listener logs each try, five lines a second for as long as it lasts.
   */
  static final class PacedErrors implements ErrorListener {
    private static final Logger LOG = Logger.getLogger(FleetStreams.class.getName());
    private final String name;
    private final ReportPace exceptions = new ReportPace();
    private final ReportPace errors = new ReportPace();
    private final ReportPace slow = new ReportPace();

    PacedErrors(String name) {
      this.name = name;
    }

    @Override
    public void exceptionOccurred(Connection conn, Exception exp) {
      report(exceptions, "failed: " + exp);
    }

    @Override
    public void errorOccurred(Connection conn, String error) {
      report(errors, "the server says: " + error);
    }

    @Override
    public void slowConsumerDetected(Connection conn, io.nats.client.Consumer consumer) {
      report(slow, "a consumer is too slow, messages dropped");
    }

    private void report(ReportPace pace, String what) {
      pace.log(LOG, Level.WARNING, "NATS connection " + name + " " + what, null);
    }
  }
}
