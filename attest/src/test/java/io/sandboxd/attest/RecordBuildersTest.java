package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The wide signed records built by field name produce the same records as their constructors. */
class RecordBuildersTest {
  private static final String A64 = "a".repeat(64);
  private static final String B64 = "b".repeat(64);

  @Test
  void receiptBuilderSetsEveryFieldByName() {
    Map<DeviceClass, ClassEnergy> energy =
        Map.of(DeviceClass.Cpu, new ClassEnergy(7, Provenance.HwShunt, "rapl", 1, 10));
    Receipt positional =
        new Receipt(
            "r1",
            A64,
            B64,
            "S2",
            energy,
            3,
            List.of(new Receipt.InferenceUse(DeviceClass.Cpu, 2, 1)),
            11,
            12,
            13,
            new Receipt.IoUse(1, 2, 3),
            new Receipt.NetUse(4, 5),
            100,
            200);
    Receipt built =
        Receipt.builder()
            .runId("r1")
            .unit(A64)
            .grantsId(B64)
            .tier("S2")
            .energy(energy)
            .idleUj(3)
            .inference(List.of(new Receipt.InferenceUse(DeviceClass.Cpu, 2, 1)))
            .cpuTimeMs(11)
            .memoryPeakBytes(12)
            .wallMs(13)
            .io(new Receipt.IoUse(1, 2, 3))
            .net(new Receipt.NetUse(4, 5))
            .startedMs(100)
            .endedMs(200)
            .build();
    assertEquals(positional, built);
    assertEquals(
        CanonicalJson.canonicalString(positional.toCore()),
        CanonicalJson.canonicalString(built.toCore()));
  }

  @Test
  void receiptBuilderStillChecksTheRecordsRules() {
    // Cpu is always dispatchable: a builder cannot skip the constructor's checks.
    assertThrows(AttestException.class, () -> Receipt.builder().runId("r").build());
  }

  @Test
  void attestationBuilderSetsEveryFieldByName() {
    HostIdentity host = new HostIdentity("node-a", A64, "linux-x86_64");
    Attestation positional =
        new Attestation(
            host,
            "S2",
            B64,
            A64,
            B64,
            null,
            A64,
            new Outcome.Completed(),
            true,
            null,
            false,
            true,
            null,
            42,
            null,
            null,
            null);
    Attestation built =
        Attestation.builder()
            .host(host)
            .tier("S2")
            .grantsId(B64)
            .receipt(A64)
            .unit(B64)
            .journalRoot(A64)
            .outcome(new Outcome.Completed())
            .clockGranted(true)
            .tamperingDetected(true)
            .issuedMs(42)
            .build();
    assertEquals(positional, built);
  }
}
