package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.daemon.rpc.ErrorStatus;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.UnitCompiler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Submissions in an environment: refused unless offered, attested by address, replayed in it. */
class RunSupervisorEnvironmentTest extends NodeStoreFixture {
  @RegisterExtension static final TestExecutor executor = new TestExecutor(2, 60_000);
  static final byte[] module = Wat2Wasm.parse(RunSupervisorTest.UNIT);

  OfferedEnvironments offered;

  @BeforeEach
  void wire() throws Exception {
    Path file =
        Files.writeString(
            tmp.resolve("env.json"),
            OfferedEnvironmentsTest.core(
                "[{\"source\":\"\",\"target\":\"/scratch\",\"kind\":\"tmpfs\"}]"));
    offered =
        OfferedEnvironments.load(
            new DaemonConfig.Environments(
                List.of(new DaemonConfig.Environments.Offered("py312", file)), List.of()),
            node.key(),
            new EnvironmentMounts(tmp, List.of()),
            tmp.resolve("environments"),
            OfferedEnvironmentsTest.CORE_AS_FILE);
  }

  RunSupervisor supervisor(OfferedEnvironments envs) {
    return new RunSupervisor(
        new Admission(new UnitCompiler(16), Set.of(DeviceClass.Cpu)),
        executor.get(),
        store,
        node,
        tmp.resolve("storage"),
        envs,
        DaemonConfig.Io.defaults());
  }

  static String grants() {
    return RunSupervisorTest.grants("[]", RunSupervisorTest.ALL_HOST);
  }

  @Test
  void theAttestationNamesTheEnvironmentAndReplayNeedsIt() {
    RunSupervisor s = supervisor(offered);
    String address = offered.resolve("py312").address();
    RunRecord r = s.submit(module, grants(), "run", "py312");
    assertEquals(address, Attestation.fromCore(r.attestation().core()).manifest());
    RunRecord byAddress = s.submit(module, grants(), "run", "b3:" + address);
    assertEquals(address, Attestation.fromCore(byAddress.attestation().core()).manifest());
    RunRecord none = s.submit(module, grants(), "run", "");
    assertNull(Attestation.fromCore(none.attestation().core()).manifest());
    assertTrue(s.replay(r.runId()).orElseThrow().matches());

    ReplayRefusedException refused =
        assertThrows(
            ReplayRefusedException.class,
            () -> supervisor(OfferedEnvironments.none()).replay(r.runId()));
    assertTrue(refused.getMessage().contains("b3:" + address), refused.getMessage());
    assertTrue(refused.getMessage().contains("no longer offers"), refused.getMessage());
    // A run in no environment replays on a node that offers none.
    assertTrue(supervisor(OfferedEnvironments.none()).replay(none.runId()).orElseThrow().matches());
  }

  @Test
  void anEnvironmentNotOfferedIsRefusedBeforeAnythingRuns() {
    RunSupervisor s = supervisor(offered);
    EnvironmentNotOfferedException e =
        assertThrows(
            EnvironmentNotOfferedException.class, () -> s.submit(module, grants(), "run", "py313"));
    assertTrue(e.getMessage().startsWith("env: "), e.getMessage());
    assertEquals(0, store.list(10).size());
    assertEquals(io.grpc.Status.Code.NOT_FOUND, ErrorStatus.of(e).getCode(), "a client's mistake");
  }
}
