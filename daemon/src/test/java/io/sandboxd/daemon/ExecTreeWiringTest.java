package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.config.DaemonConfig;
import io.sandboxd.executor.TreeBounds;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The bounds of an exec'd tree reach the executor as configured, and default to its own. */
class ExecTreeWiringTest {
  @Test
  void theConfiguredBoundsAreTheExecutorsAndTheDefaultsAgree() {
    assertEquals(TreeBounds.DEFAULT, Daemon.execTree(DaemonConfig.defaults().exec()));
    DaemonConfig.Exec small =
        new DaemonConfig.Exec(Set.of(), java.util.List.of("/bin"), 1000, 8, 3L << 20);
    assertEquals(new TreeBounds(8, 3L << 20), Daemon.execTree(small));
  }
}
