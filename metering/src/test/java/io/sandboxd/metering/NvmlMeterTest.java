package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Runs the real JNA binding against a C stub of libnvidia-ml.so.1 built with gcc. */
class NvmlMeterTest {
  @Test
  void energyCounterPerDeviceUuid() throws Exception {
    NvmlStub.Control stub = NvmlStub.reset(2);
    stub.stub_set_energy(0, 1_000);
    stub.stub_set_energy(1, 5_000);
    NvmlMeter m = NvmlMeter.open(NvmlMeter.DEFAULT_LIBRARY, System::nanoTime);
    try {
      assertEquals(
          List.of(NvmlStub.UUID0, NvmlStub.UUID1),
          m.domains().stream().map(MeterDomain::id).toList());
      MeterDomain d = m.domains().get(0);
      assertEquals(DeviceClass.Gpu, d.energyClass());
      assertEquals(DomainRole.Device, d.role());
      assertEquals(Provenance.HwShunt, d.provenance());
      assertEquals(1000, d.resolutionUj());
      stub.stub_set_energy(0, 1_500);
      MeterSample s = m.sample();
      assertEquals(500_000, s.cumulativeUj(0)); // 500 mJ
      assertEquals(0, s.cumulativeUj(1));
      assertFalse(s.counts().get(0).reset());
    } finally {
      m.close();
    }
    assertEquals(1, stub.stub_init_calls());
    assertEquals(1, stub.stub_shutdown_calls());
    m.close();
    assertEquals(1, stub.stub_shutdown_calls()); // closing twice shuts down once
  }

  @Test
  void counterDropIsAFlaggedResetNotAWrap() throws Exception {
    NvmlStub.Control stub = NvmlStub.reset(1);
    stub.stub_set_energy(0, 10_000);
    try (NvmlMeter m = NvmlMeter.open(NvmlMeter.DEFAULT_LIBRARY, System::nanoTime)) {
      stub.stub_set_energy(0, 12_000);
      assertEquals(2_000_000, m.sample().cumulativeUj(0));
      stub.stub_set_energy(0, 300); // the driver reloaded
      MeterSample s = m.sample();
      assertEquals(2_300_000, s.cumulativeUj(0));
      assertTrue(s.counts().get(0).reset());
      stub.stub_set_energy(0, 400);
      MeterSample after = m.sample();
      assertEquals(2_400_000, after.cumulativeUj(0));
      assertTrue(after.counts().get(0).reset()); // stays flagged
    }
  }

  @Test
  void unsupportedCounterFallsBackToIntegratedPowerLabelledModelBased() throws Exception {
    NvmlStub.Control stub = NvmlStub.reset(2);
    stub.stub_set_energy_supported(1, 0);
    stub.stub_set_power(1, 100_000); // 100 W
    ManualClock clock = new ManualClock();
    try (NvmlMeter m = NvmlMeter.open(NvmlMeter.DEFAULT_LIBRARY, clock)) {
      assertEquals(Provenance.HwShunt, m.domains().get(0).provenance());
      MeterDomain fallback = m.domains().get(1);
      assertEquals(Provenance.ModelBased, fallback.provenance());
      stub.stub_set_power(1, 300_000);
      clock.advance(1_000_000_000L);
      assertEquals(200_000_000, m.sample().cumulativeUj(1)); // trapezoid: (100 W + 300 W) / 2 × 1 s
      clock.advance(1); // 1 ns at 300 W = 0.3 µJ: carried, not lost
      assertEquals(200_000_000, m.sample().cumulativeUj(1));
      clock.advance(3);
      assertEquals(200_000_001, m.sample().cumulativeUj(1));
    }
  }

  @Test
  void missingLibraryMeansNoGpuMeter() {
    String why = refusal("libnvidia-ml-absent.so.1");
    assertTrue(why.startsWith("no GPU meter"), why);
  }

  @Test
  void failedInitMeansNoGpuMeterWithNvmlsReason() {
    NvmlStub.Control stub = NvmlStub.reset(1);
    stub.stub_set_init_result(9);
    String why = refusal(NvmlMeter.DEFAULT_LIBRARY);
    assertTrue(why.contains("Driver Not Loaded"), why);
  }

  @Test
  void noDeviceMeansNoGpuMeterAndNvmlIsShutDown() {
    NvmlStub.Control stub = NvmlStub.reset(0);
    String why = refusal(NvmlMeter.DEFAULT_LIBRARY);
    assertTrue(why.contains("no meterable device"), why);
    assertEquals(1, stub.stub_shutdown_calls());
  }

  /** Why the meter over {@code library} cannot be opened. */
  private static String refusal(String library) {
    return assertThrows(
            MeterUnavailableException.class, () -> NvmlMeter.open(library, System::nanoTime))
        .getMessage();
  }
}
