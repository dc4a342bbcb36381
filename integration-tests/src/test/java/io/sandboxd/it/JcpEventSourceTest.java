package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.JcpKeysRequest;
import io.sandboxd.daemon.rpc.MintEventRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 2, JCP events, through the running daemon: an event signed by a key the config
 * lists in {@code standing.event_sources} mints; replayed after a restart it mints nothing (the
 * nonce is remembered in the run store); the config's keys are the only ones beside the issuer.
 */
class JcpEventSourceTest {
  static final String PARENT =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":50000000,\"cpu_time_ms\":10000,"
          + "\"memory_bytes\":1048576},\"host\":{\"logging\":true}}";

  @TempDir Path dir;

  @Test
  void aConfiguredSourceMintsOnceAndItsReplayAfterARestartMintsNothing() throws Exception {
    SigningKey issuer = SeededKeys.counting(0x11);
    SigningKey source = SeededKeys.counting(0x61);
    SigningKey unlisted = SeededKeys.counting(0x71);
    Path config =
        Files.writeString(
            dir.resolve("config.json"),
            "{\"standing\":{\"event_sources\":[\"" + source.publicKey().hex() + "\"]}}");
    DaemonProcess d =
        DaemonProcess.start(
            dir.resolve("state"), dir.resolve("run/s.sock"), "--config", config.toString());
    DaemonClient c = new DaemonClient(d.socket);
    String policy;
    String event = StandingGrantsTest.signedBy(source, "{\"type\":\"push\"}", "src-1", far());
    try {
      String holder = c.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance()).getHolder();
      Envelope signed =
          StandingGrantsTest.signedPolicy(
              issuer, holder, PARENT, PARENT, 10, 1, 10, "{}", 4_000_000_000_000L, null);
      policy = StandingGrantsTest.addPolicy(c, signed, PARENT);
      Envelope child = Envelope.fromJson(CanonicalJson.parse(mint(c, policy, event)));
      assertEquals(
          Envelope.fromJson(CanonicalJson.parse(event)).address(),
          JcpChild.fromCore(child.core()).event(),
          "the child names the signed event");
      StatusRuntimeException other =
          assertThrows(
              StatusRuntimeException.class,
              () ->
                  mint(
                      c,
                      policy,
                      StandingGrantsTest.signedBy(unlisted, "{\"type\":\"push\"}", "u-1", far())));
      assertEquals(Status.Code.PERMISSION_DENIED, other.getStatus().getCode());
      // status names the configured source: an operator sees who else can mint authority.
      DaemonProcess.Result status = d.ctl("status", "--json");
      assertEquals(0, status.exit(), status.err());
      assertEquals(
          "[\"" + source.publicKey().hex() + "\"]",
          CanonicalJson.parse(status.out().trim()).get("event_sources").toString());
      assertTrue(
          other.getStatus().getDescription().contains(unlisted.publicKey().hex()),
          other.getStatus().getDescription());
    } finally {
      c.close();
      d.stop();
    }
    d =
        DaemonProcess.start(
            dir.resolve("state"), dir.resolve("run/s.sock"), "--config", config.toString());
    DaemonClient c2 = new DaemonClient(d.socket);
    try {
      StatusRuntimeException replay =
          assertThrows(StatusRuntimeException.class, () -> mint(c2, policy, event));
      assertEquals(Status.Code.PERMISSION_DENIED, replay.getStatus().getCode());
      assertTrue(
          replay.getStatus().getDescription().startsWith("rule event_nonce:")
              && replay.getStatus().getDescription().contains("src-1"),
          replay.getStatus().getDescription());
      // A fresh nonce from the same source still mints: seq 1 after the one child.
      String next = StandingGrantsTest.signedBy(source, "{\"type\":\"push\"}", "src-2", far());
      assertEquals(
          1,
          JcpChild.fromCore(Envelope.fromJson(CanonicalJson.parse(mint(c2, policy, next))).core())
              .seq());
    } finally {
      c2.close();
      d.stop();
    }
  }

  static long far() {
    return System.currentTimeMillis() + 600_000;
  }

  static String mint(DaemonClient c, String policy, String event) {
    return c.jcp()
        .mintEvent(MintEventRequest.newBuilder().setPolicy(policy).setEventJson(event).build())
        .getChild();
  }
}
