package io.sandboxd.daemon.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.Error;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Creating the fleet's streams on a cluster that is still forming: refusals are waited out (a node
 * started before its cluster must still ship once it forms), reported once, and given up only when
 * the caller says stop.
 */
class FleetStreamsTest {
  /** A JetStream API whose streams do not exist and whose first {@code refusals} creates fail. */
  private static final class FormingCluster {
    final AtomicInteger refusals;
    final List<StreamConfiguration> created = new ArrayList<>();

    FormingCluster(int refusals) {
      this.refusals = new AtomicInteger(refusals);
    }

    JetStreamManagement api() {
      return (JetStreamManagement)
          Proxy.newProxyInstance(
              JetStreamManagement.class.getClassLoader(),
              new Class<?>[] {JetStreamManagement.class},
              (proxy, method, args) -> {
                switch (method.getName()) {
                  case "getStreamInfo" -> throw new JetStreamApiException(Error.JsBadRequestErr);
                  case "addStream" -> {
                    if (refusals.getAndDecrement() > 0) {
                      // what a cluster without enough peers for the replicas answers
                      throw new JetStreamApiException(Error.JsBadRequestErr);
                    }
                    created.add((StreamConfiguration) args[0]);
                    return null;
                  }
                  default -> throw new UnsupportedOperationException(method.getName());
                }
              });
    }
  }

  @Test
  void refusalsWhileTheClusterFormsAreWaitedOutAndReportedOnce() throws Exception {
    FormingCluster cluster = new FormingCluster(4);
    List<IOException> reports = new ArrayList<>();
    FleetStreams.ensure(cluster.api(), 3, () -> false, reports::add);
    assertEquals(
        List.of(FleetStreams.RECORDS_STREAM, FleetStreams.PROOFS_STREAM),
        cluster.created.stream().map(StreamConfiguration::getName).toList());
    assertEquals(3, cluster.created.get(0).getReplicas());
    assertEquals(1, reports.size(), "the first refusal is reported, not each retry");
    assertTrue(
        reports.get(0).getMessage().startsWith("stream " + FleetStreams.RECORDS_STREAM + ": "),
        reports.get(0).getMessage());
  }

  @Test
  void aCallerThatStopsGetsTheLastRefusal() {
    FormingCluster cluster = new FormingCluster(Integer.MAX_VALUE);
    AtomicInteger tries = new AtomicInteger();
    IOException e =
        assertThrows(
            IOException.class,
            () ->
                FleetStreams.ensure(cluster.api(), 3, () -> tries.incrementAndGet() > 2, x -> {}));
    assertTrue(e.getMessage().startsWith("stream " + FleetStreams.RECORDS_STREAM), e.getMessage());
    assertTrue(cluster.created.isEmpty());
  }

  @Test
  void anInterruptedWaitEndsAtOnce() throws Exception {
    FormingCluster cluster = new FormingCluster(Integer.MAX_VALUE);
    Thread.currentThread().interrupt();
    assertThrows(
        InterruptedException.class,
        () -> FleetStreams.ensure(cluster.api(), 1, () -> false, x -> {}));
    assertTrue(cluster.created.isEmpty());
  }
}
