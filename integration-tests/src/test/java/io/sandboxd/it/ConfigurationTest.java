package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The daemon reads its configuration file strictly and applies the node policy it sets. */
class ConfigurationTest {
  @TempDir Path dir;

  @Test
  void aBadConfigurationFileStopsTheStartNamingTheField() throws Exception {
    Path cfg = Files.writeString(dir.resolve("bad.json"), "{\"exec\":{\"denylist\":[\"ls\"]}}");
    String said = DaemonProcess.refusedStart(dir.resolve("s"), "--config", cfg.toString());
    assertTrue(said.contains("$.exec.denylist[0]"), said);
  }

  @Test
  void theNodeMemoryCapBoundsEveryUnit() throws Exception {
    Path cfg = Files.writeString(dir.resolve("cap.json"), "{\"max_unit_memory_bytes\":32768}");
    try (DaemonProcess d =
            DaemonProcess.start(
                dir.resolve("s2"), dir.resolve("s2.sock"), "--config", cfg.toString());
        DaemonClient client = new DaemonClient(d.socket)) {
      assertTrue(d.log().contains("configuration: " + cfg), d.log());
      SubmitReply r =
          client
              .stub()
              .submit(
                  SubmitRequest.newBuilder()
                      .setModule(
                          ByteString.copyFrom(
                              Files.readAllBytes(
                                  DaemonProcess.ROOT.resolve("examples/hello.wasm"))))
                      .setGrantsJson(
                          Files.readString(
                              DaemonProcess.ROOT.resolve("examples/hello.grants.json")))
                      .build());
      // hello.wasm starts with one 64 KiB page; the node allows 32 KiB whatever the grant says.
      assertEquals("{\"Terminated\":{\"breach\":\"Memory\"}}", r.getOutcomeJson());
    }
  }
}
