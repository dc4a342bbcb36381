package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The node log's fields of {@code fleet}: defaults, values taken, faults named. */
class FleetLogConfigTest {
  @Test
  void defaultsKeepTheLogAndCheckpointEverySecondOr1024Records() {
    Fleet f = parse("{}").fleet();
    assertTrue(f.log());
    assertEquals(1024, f.checkpointEveryRecords());
    assertEquals(1000, f.checkpointEveryMs());
  }

  @Test
  void valuesAreTaken() {
    Fleet f =
        parse(
                "{\"fleet\":{\"checkpoint_every_records\":7,\"checkpoint_every_ms\":250,"
                    + "\"log\":false}}")
            .fleet();
    assertEquals(7, f.checkpointEveryRecords());
    assertEquals(250, f.checkpointEveryMs());
    assertFalse(f.log());
  }

  @Test
  void faultsNameTheField() {
    for (String[] c :
        new String[][] {
          {"{\"fleet\":{\"checkpoint_every_records\":0}}", "$.fleet.checkpoint_every_records"},
          {"{\"fleet\":{\"checkpoint_every_ms\":0}}", "$.fleet.checkpoint_every_ms"},
          {"{\"fleet\":{\"checkpoint_every_ms\":-5}}", "$.fleet.checkpoint_every_ms"},
          {"{\"fleet\":{\"log\":\"yes\"}}", "$.fleet.log"},
          {"{\"fleet\":{\"checkpoints\":1}}", "checkpoints"},
        }) {
      String msg = assertThrows(ConfigException.class, () -> parse(c[0])).getMessage();
      assertTrue(msg.contains(c[1]), c[0] + " -> " + msg);
    }
  }
}
