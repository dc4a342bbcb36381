package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The daemon reads its configuration file strictly and applies the node policy it sets. */
class ConfigurationTest {
  @TempDir Path dir;

  /** Configuration files the daemon refuses at start, and what its refusal names. */
  static Stream<Arguments> badConfigurations() {
    return Stream.of(
        Arguments.of(
            "an exec denylist", "{\"exec\":{\"denylist\":[\"ls\"]}}", "$.exec.denylist[0]"),
        Arguments.of(
            "a secret binding that is not an HTTP URL",
            "{\"secrets\":{\"vault:x\":{\"env\":\"X\",\"endpoints\":[\"ftp://h:21/\"]}}}",
            "$.secrets.vault:x.endpoints[0]"),
        Arguments.of(
            "a non-loopback metrics address",
            "{\"metrics\": {\"listen\": \"0.0.0.0:9464\"}}",
            "$.metrics.listen: 0.0.0.0 is not a loopback address"),
        Arguments.of(
            "an Ed25519 engine the daemon does not have",
            "{\"signing\": {\"ed25519\": \"openssl\"}}",
            "$.signing.ed25519: expected \"auto\", \"libsodium\" or \"bouncycastle\""));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badConfigurations")
  void aBadConfigurationFileStopsTheStartNamingTheField(String what, String json, String named)
      throws Exception {
    Path cfg = Files.writeString(dir.resolve("bad.json"), json);
    String said = DaemonProcess.refusedStart(dir.resolve("s"), "--config", cfg.toString());
    assertTrue(said.contains(named), said);
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
