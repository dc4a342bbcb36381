package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * signing.ed25519 on the real daemon: runs signed through libsodium and through BouncyCastle, in
 * one store across a restart, all check under the node's key (bin/test installs libsodium23).
 */
class SigningEngineTest {
  @TempDir Path dir;

  private static void runHello(DaemonProcess d) throws Exception {
    SubmitReply r =
        Submissions.submit(
            d.client(), Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
    assertTrue(r.getRunId().length() > 0, r.toString());
  }

  @Test
  void runsSignedByEitherEngineVerifyInOneStore() throws Exception {
    Path state = dir.resolve("s");
    Path socket = dir.resolve("s.sock");
    String key;
    try (DaemonProcess d =
        DaemonProcess.startWithConfig(state, socket, "{\"signing\":{\"ed25519\":\"libsodium\"}}")) {
      assertTrue(d.log().contains("signing: libsodium "), d.log());
      key = d.publicKey();
      runHello(d);
      runHello(d);
    }
    for (String config : List.of("{\"signing\":{\"ed25519\":\"bouncycastle\"}}", "{}")) {
      try (DaemonProcess d = DaemonProcess.startWithConfig(state, socket, config)) {
        assertTrue(
            d.log()
                .contains(
                    config.equals("{}")
                        ? "signing: libsodium "
                        : "signing: bouncycastle (signing.ed25519)"),
            d.log());
        assertEquals(key, d.publicKey());
        runHello(d);
        DaemonProcess.Result v = d.ctl("store", "verify");
        assertEquals(0, v.exit(), v.out() + v.err());
        DaemonProcess.Result list = d.ctl("runs", "list");
        assertEquals(0, list.exit(), list.err());
      }
    }
  }
}
