package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The {@code fleet} section: its shipping fields (issue 14 item 3) and the node log's, with their
 * defaults, the values taken and the faults named.
 */
class FleetConfigTest {
  private static final String KEY = "ab".repeat(32);

  @Test
  void defaultsShipNothingKeepTheLogAndCheckpointEverySecondOr1024Records() {
    Fleet f = parse("{}").fleet();
    assertEquals(Optional.empty(), f.nats());
    assertEquals(Fleet.DEFAULT_ORIGIN, f.origin());
    assertEquals(3, f.replicas());
    assertTrue(f.log());
    assertEquals(1024, f.checkpointEveryRecords());
    assertEquals(1000, f.checkpointEveryMs());
  }

  @Test
  void valuesAreTaken() {
    Fleet f =
        parse(
                "{\"fleet\":{\"nats\":\"nats://127.0.0.1:4222\",\"aggregator_key\":\""
                    + KEY
                    + "\",\"origin\":\"ours\",\"replicas\":1,\"checkpoint_every_records\":7,"
                    + "\"checkpoint_every_ms\":250,\"log\":false}}")
            .fleet();
    assertEquals(Optional.of("nats://127.0.0.1:4222"), f.nats());
    assertEquals(Optional.of(KEY), f.aggregatorKey());
    assertEquals("ours", f.origin());
    assertEquals(1, f.replicas());
    assertEquals(7, f.checkpointEveryRecords());
    assertEquals(250, f.checkpointEveryMs());
    assertFalse(f.log());
  }

  @Test
  void badFleetFieldsAreRefusedNamingTheField() {
    for (String[] c :
        new String[][] {
          {"{\"fleet\":{\"nats\":\"nats://127.0.0.1:4222\"}}", "$.fleet.aggregator_key"},
          {"{\"fleet\":{\"aggregator_key\":\"XYZ\"}}", "aggregator_key"},
          {"{\"fleet\":{\"replicas\":9}}", "replicas"},
          {"{\"fleet\":{\"natz\":\"x\"}}", "natz"},
          {"{\"fleet\":{\"checkpoint_every_records\":0}}", "$.fleet.checkpoint_every_records"},
          {"{\"fleet\":{\"checkpoint_every_ms\":0}}", "$.fleet.checkpoint_every_ms"},
          {"{\"fleet\":{\"checkpoint_every_ms\":-5}}", "$.fleet.checkpoint_every_ms"},
          {"{\"fleet\":{\"log\":\"yes\"}}", "$.fleet.log"},
          {"{\"fleet\":{\"checkpoints\":1}}", "checkpoints"},
        }) {
      String msg = refusal(c[0]);
      assertTrue(msg.contains(c[1]), c[0] + " -> " + msg);
    }
  }
}
