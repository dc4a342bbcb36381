package io.sandboxd.config;

import static io.sandboxd.config.ConfigText.parse;
import static io.sandboxd.config.ConfigText.refusal;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DaemonConfigTest {
  @Test
  void noFileAndAnEmptyDocumentAreTheDefaults() {
    assertEquals(DaemonConfig.defaults(), DaemonConfig.load(Optional.empty()));
    assertEquals(DaemonConfig.defaults(), parse("{}"));
  }

  @Test
  void everyFieldIsRead() {
    String hash = "b3:" + "ab".repeat(32);
    DaemonConfig c =
        parse(
            "{\"max_concurrent_units\":3,\"max_unit_memory_bytes\":1048576,\"max_wall_ms\":5000,"
                + "\"exec\":{\"denylist\":[\""
                + hash
                + "\"],\"search_path\":[\"/opt/bin\"],"
                + "\"timeout_ms\":2000},\"egress\":{\"timeout_ms\":700},"
                + "\"inference\":{\"endpoint\":\"http://127.0.0.1:8080/v1/chat/completions\","
                + "\"class\":\"Gpu\"},\"metering\":{\"powercap_root\":\"/tmp/pc\","
                + "\"nvml_library\":\"\",\"estimator_cpu_mw\":12000,\"sampling_interval_ms\":250}}");
    assertEquals(3, c.maxConcurrentUnits());
    assertEquals(1048576, c.maxUnitMemoryBytes());
    assertEquals(Set.of(hash), c.exec().denylist());
    assertEquals("/opt/bin", c.exec().searchPath().get(0));
    assertEquals(700, c.egressTimeoutMs());
    assertEquals(DeviceClass.Gpu, c.inference().orElseThrow().servingClass());
    assertEquals(Optional.of(Path.of("/tmp/pc")), c.metering().powercapRoot());
    assertEquals(250, c.metering().samplingIntervalMs());
  }

  @Test
  void sealOnStopIsOffByDefaultAndReadStrictly() {
    DaemonConfig.Store d = DaemonConfig.defaults().limits().store();
    // Off unless asked for: a run sealed at stop is no longer refused at start when changed.
    assertEquals(false, d.sealOnStop());
    DaemonConfig.Store on = parse("{\"store\":{\"seal_on_stop\":true}}").limits().store();
    assertEquals(true, on.sealOnStop());
    assertEquals(d.verifyCpuPercent(), on.verifyCpuPercent());
    assertEquals(d.maxBytes(), on.maxBytes());
    assertTrue(
        refusal("{\"store\":{\"seal_on_stop\":1}}").startsWith("$.store.seal_on_stop"),
        refusal("{\"store\":{\"seal_on_stop\":1}}"));
  }

  @Test
  void theVerifierMayTakeAWholeCoreWhileIdleAndNeverLessThanUnderLoad() {
    DaemonConfig.Store d = DaemonConfig.defaults().limits().store();
    assertEquals(5, d.verifyCpuPercent());
    assertEquals(100, d.verifyIdleCpuPercent());
    DaemonConfig.Store capped =
        parse("{\"store\":{\"verify_cpu_percent\":10,\"verify_idle_cpu_percent\":10}}")
            .limits()
            .store();
    assertEquals(10, capped.verifyCpuPercent());
    assertEquals(10, capped.verifyIdleCpuPercent(), "equal shares: no boost while idle");
    // Below the share under load, or outside 1..100: refused, naming the field.
    for (String bad :
        new String[] {
          "{\"store\":{\"verify_cpu_percent\":20,\"verify_idle_cpu_percent\":10}}",
          "{\"store\":{\"verify_idle_cpu_percent\":0}}",
          "{\"store\":{\"verify_idle_cpu_percent\":101}}",
          "{\"store\":{\"verify_idle_cpu_percent\":\"50\"}}"
        }) {
      String why = refusal(bad);
      assertTrue(why.startsWith("$.store.verify_idle_cpu_percent"), bad + " -> " + why);
    }
    assertThrows(
        IllegalArgumentException.class, () -> new DaemonConfig.Store(1, 0, 0, 20, 10, false));
  }

  @Test
  void quotasHaveSafeDefaultsAndAreReadStrictly() {
    DaemonConfig.Quotas d = DaemonConfig.defaults().quotas();
    // 200 x 1 MiB of kv (issue 8 item 11) must not fit the default.
    assertTrue(d.kvBytesPerModule() < 200L << 20, "default kv quota " + d.kvBytesPerModule());
    assertTrue(d.storageBytesPerModule() < 1L << 40, "default storage quota");
    DaemonConfig.Quotas q =
        parse("{\"quotas\":{\"storage_bytes_per_module\":4096,\"kv_bytes_per_module\":100}}")
            .quotas();
    assertEquals(new DaemonConfig.Quotas(4096, 100), q);
    assertTrue(
        refusal("{\"quotas\":{\"kv_bytes_per_module\":0}}")
            .startsWith("$.quotas.kv_bytes_per_module"));
    assertTrue(refusal("{\"quotas\":{\"disk\":1}}").startsWith("$.quotas.disk"));
    // The disk reserve: the proportional default unless set; 0 turns it off; never negative.
    assertEquals(DaemonConfig.Quotas.DEFAULT_RESERVE, d.reserveBytes());
    assertEquals(DaemonConfig.Quotas.DEFAULT_RESERVE, q.reserveBytes());
    assertEquals(0, parse("{\"quotas\":{\"reserve_bytes\":0}}").quotas().reserveBytes());
    assertEquals(
        1L << 32, parse("{\"quotas\":{\"reserve_bytes\":4294967296}}").quotas().reserveBytes());
    assertTrue(refusal("{\"quotas\":{\"reserve_bytes\":-1}}").startsWith("$.quotas.reserve_bytes"));
    assertTrue(
        refusal("{\"quotas\":{\"reserve_bytes\":1.5}}").startsWith("$.quotas.reserve_bytes"));
  }

  @Test
  void ioCapsHaveDefaultsAndAreReadStrictly() {
    DaemonConfig.Io d = DaemonConfig.defaults().io();
    assertTrue(d.stdinMaxBytes() > 0 && d.stdinMaxBytes() <= DaemonConfig.Io.MAX_CAP);
    assertTrue(d.stdoutMaxBytes() > 0 && d.stderrMaxBytes() > 0);
    DaemonConfig.Io io =
        parse(
                "{\"io\":{\"stdin_max_bytes\":10,\"stdout_max_bytes\":20,"
                    + "\"stderr_max_bytes\":0,\"args_max_count\":3,\"args_max_bytes\":40}}")
            .io();
    assertEquals(new DaemonConfig.Io(10, 20, 0, 3, 40), io);
    assertEquals(d, parse("{\"io\":{}}").io());
    assertTrue(refusal("{\"io\":{\"stdout\":1}}").startsWith("$.io.stdout: unknown field"));
    assertTrue(refusal("{\"io\":{\"args_max_count\":0}}").startsWith("$.io.args_max_count"));
    assertTrue(
        refusal("{\"io\":{\"stdin_max_bytes\":" + (DaemonConfig.Io.MAX_CAP + 1) + "}}")
            .startsWith("$.io.stdin_max_bytes"));
    assertTrue(refusal("{\"io\":{\"stderr_max_bytes\":-1}}").startsWith("$.io.stderr_max_bytes"));
  }

  @Test
  void anExecTreesBoundsAreReadStrictly() {
    DaemonConfig.Exec d = DaemonConfig.defaults().exec();
    assertEquals(DaemonConfig.Exec.DEFAULT_MAX_PROCESSES, d.maxProcesses());
    assertEquals(DaemonConfig.Exec.DEFAULT_MAX_MEMORY_BYTES, d.maxMemoryBytes());
    DaemonConfig.Exec c =
        parse("{\"exec\":{\"max_processes\":8,\"max_memory_bytes\":1048576}}").exec();
    assertEquals(8, c.maxProcesses());
    assertEquals(1 << 20, c.maxMemoryBytes());
    assertEquals(d.timeoutMs(), c.timeoutMs());
    for (String bad :
        new String[] {
          "{\"exec\":{\"max_processes\":0}}",
          "{\"exec\":{\"max_processes\":4097}}",
          "{\"exec\":{\"max_processes\":\"8\"}}",
          "{\"exec\":{\"max_memory_bytes\":1048575}}",
          "{\"exec\":{\"max_memory_bytes\":-1}}"
        }) {
      String field = bad.substring(bad.indexOf("max_"), bad.indexOf('"', bad.indexOf("max_")));
      assertTrue(refusal(bad).startsWith("$.exec." + field), bad + ": " + refusal(bad));
    }
  }

  @Test
  void theCompileBudgetScalesWithModuleSize() {
    DaemonConfig.Compile d = DaemonConfig.defaults().compile();
    assertTrue(d.timeoutMsPerMib() > 0, "default per-MiB compile budget " + d.timeoutMsPerMib());
    DaemonConfig.Compile c =
        parse("{\"compile\":{\"timeout_ms\":5000,\"timeout_ms_per_mib\":0}}").compile();
    assertEquals(5000, c.timeoutMs());
    assertEquals(0, c.timeoutMsPerMib());
    assertTrue(
        refusal("{\"compile\":{\"timeout_ms_per_mib\":-1}}")
            .startsWith("$.compile.timeout_ms_per_mib"));
  }

  @Test
  void badFieldsAreRefusedNamingThePath() {
    assertTrue(refusal("{\"max_wal_ms\":1}").startsWith("$.max_wal_ms: unknown field"));
    assertTrue(refusal("{\"exec\":{\"denylist\":[\"ls\"]}}").startsWith("$.exec.denylist[0]"));
    assertTrue(
        refusal("{\"exec\":{\"search_path\":[\"bin\"]}}").startsWith("$.exec.search_path[0]"));
    assertTrue(refusal("{\"max_concurrent_units\":0}").startsWith("$.max_concurrent_units"));
    assertTrue(refusal("{\"max_concurrent_units\":1.5}").startsWith("$.max_concurrent_units"));
    assertTrue(refusal("{\"inference\":{\"class\":\"Gpu\"}}").startsWith("$.inference.endpoint"));
    assertTrue(
        refusal("{\"inference\":{\"endpoint\":\"ftp://x\"}}").startsWith("$.inference.endpoint"));
    assertTrue(
        refusal("{\"inference\":{\"endpoint\":\"http://x\",\"class\":\"Fpga\"}}")
            .startsWith("$.inference.class"));
    assertTrue(refusal("{\"a\":1,\"a\":2}").contains("Duplicate"));
  }

  @Test
  void aFileNamesItselfInErrors(@TempDir Path dir) throws Exception {
    Path f = Files.writeString(dir.resolve("sandboxd.json"), "{\"egress\":{\"timeout_ms\":-1}}");
    ConfigException e =
        assertThrows(ConfigException.class, () -> DaemonConfig.load(Optional.of(f)));
    assertTrue(e.getMessage().startsWith(f + ": $.egress.timeout_ms"), e.getMessage());
  }
}
