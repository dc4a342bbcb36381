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

  /** Creates both streams with {@code replicas} replicas when they do not exist yet. */
  public static void ensure(Connection nc, int replicas) throws IOException, InterruptedException {
    JetStreamManagement jsm = nc.jetStreamManagement();
    ensure(jsm, RECORDS_STREAM, RECORDS + ">", replicas);
    ensure(jsm, PROOFS_STREAM, PROOFS + ">", replicas);
  }

  private static void ensure(JetStreamManagement jsm, String name, String subject, int replicas)
      throws IOException, InterruptedException {
    IOException last = null;
    for (int attempt = 0; attempt < 50; attempt++) {
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
          // Another node created it meanwhile, or the cluster has no leader yet: look again.
          last = new IOException("stream " + name + ": " + raced.getMessage(), raced);
        }
      } catch (IOException e) {
        last = e;
      }
      Thread.sleep(200);
    }
    throw last;
  }
}
