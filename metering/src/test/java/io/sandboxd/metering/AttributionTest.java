package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AttributionTest {
  private static final long SECOND = 1_000_000_000L;
  private static final long JOULE = 1_000_000L;

  @TempDir Path root;
  private final ManualClock clock = new ManualClock();
  private final AtomicLong nodeBusy = new AtomicLong(100 * SECOND);

  private PowercapFixture onePackage() {
    return new PowercapFixture(root)
        .zone("intel-rapl:0", "package-0", 1_000)
        .zone("intel-rapl:0:0", "core", 0)
        .zone("intel-rapl:0:1", "dram", 0)
        .zone("intel-rapl:1", "psys", 0);
  }

  private Attribution attribution(List<Meter> meters, long idleMw) {
    return new Attribution(meters, nodeBusy::get, clock, SECOND, idleMw);
  }

  /** Attribution over the powercap tree at {@code root} (whose meter holds nothing open). */
  private Attribution overRapl(long idleMw) throws MeterUnavailableException {
    return attribution(List.of(RaplPowercapMeter.open(root, SysfsReader.files(), clock)), idleMw);
  }

  /** A unit granted the GPU class and {@code devices}, reporting no CPU time. */
  private static UnitSpec gpuUnit(String name, String... devices) {
    return new UnitSpec(name, () -> 0, Set.of(DeviceClass.Gpu), Set.of(devices));
  }

  /** A run's CPU time grows by {@code ns}, and the node's busy time with it (nothing else ran). */
  private void spend(AtomicLong cpu, long ns) {
    cpu.addAndGet(ns);
    nodeBusy.addAndGet(ns);
  }

  @Test
  void cumulativeEnergyOfAClassBracketsAWindow() throws Exception {
    PowercapFixture f = onePackage();
    try (Attribution a = overRapl(0)) {
      long before = a.cumulativeUj(DeviceClass.Cpu);
      f.add("intel-rapl:0", 4 * JOULE);
      f.add("intel-rapl:0:1", JOULE);
      f.add("intel-rapl:0:0", 3 * JOULE); // core is inside the package: not added again
      f.add("intel-rapl:1", 9 * JOULE); // psys is kept apart
      clock.advance(SECOND);
      assertEquals(5 * JOULE, a.cumulativeUj(DeviceClass.Cpu) - before);
      assertEquals(-1, a.cumulativeUj(DeviceClass.Gpu), "a class with no meter");
    }
  }

  @Test
  void packageEnergyIsSharedByCpuTimeAndLabelledModelBased() throws Exception {
    PowercapFixture f = onePackage();
    try (Attribution a = overRapl(0)) {
      AtomicLong cpuA = new AtomicLong();
      AtomicLong cpuB = new AtomicLong();
      MeteredRun runA = a.begin("a", cpuA::get);
      MeteredRun runB = a.begin("b", cpuB::get);
      // one interval: A 3 CPU-s, B 1 CPU-s, another process 1 CPU-s; package 9 J, dram 1 J
      cpuA.addAndGet(3 * SECOND);
      cpuB.addAndGet(SECOND);
      nodeBusy.addAndGet(5 * SECOND);
      f.add("intel-rapl:0", 9 * JOULE);
      f.add("intel-rapl:0:1", JOULE);
      f.add("intel-rapl:0:0", 7 * JOULE); // inside the package: not added again
      f.add("intel-rapl:1", 50 * JOULE); // psys: kept apart
      clock.advance(SECOND);
      RunEnergy ea = runA.end();
      RunEnergy eb = runB.end();
      assertEquals(6 * JOULE, ea.readings().get(DeviceClass.Cpu).uj()); // 10 J × 3/5
      assertEquals(2 * JOULE, eb.readings().get(DeviceClass.Cpu).uj()); // 10 J × 1/5
      EnergyReading r = ea.readings().get(DeviceClass.Cpu);
      assertEquals(Provenance.ModelBased, r.provenance()); // a share is never HwShunt
      assertEquals("rapl", r.source());
      assertEquals(1, r.resolutionUj());
      assertEquals(10_000_000L, r.minWindowNs());
      assertEquals(Set.of(DeviceClass.Cpu), ea.readings().keySet());
      assertEquals(6 * JOULE, ea.totalUj());
      assertEquals(Provenance.ModelBased, ea.provenance());
      assertEquals(Set.of(), a.activeRuns());
    }
  }

  @Test
  void energyBeforeTheRunStartsIsNotCharged() throws Exception {
    PowercapFixture f = onePackage();
    try (Attribution a = overRapl(0)) {
      f.add("intel-rapl:0", 100 * JOULE);
      nodeBusy.addAndGet(10 * SECOND);
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("late", cpu::get);
      spend(cpu, SECOND);
      f.add("intel-rapl:0", 4 * JOULE);
      assertEquals(4 * JOULE, run.end().totalUj());
    }
  }

  @Test
  void wrapMidRunIsSeenByPeriodicPasses() throws Exception {
    PowercapFixture f =
        new PowercapFixture(root)
            .zone("intel-rapl:0", "package-0", PowercapFixture.MAX - 3 * JOULE);
    try (Attribution a = overRapl(0)) {
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("wrap", cpu::get);
      spend(cpu, SECOND);
      f.set("intel-rapl:0", 2 * JOULE); // wrapped: 3 J to the top, 2 J after
      a.samplePass();
      assertEquals(5 * JOULE, run.current().totalUj());
      spend(cpu, SECOND);
      f.set("intel-rapl:0", 3 * JOULE);
      assertEquals(6 * JOULE, run.end().totalUj());
    }
  }

  @Test
  void currentFollowsPassesSoABudgetCanBeChecked() throws Exception {
    PowercapFixture f = onePackage();
    try (Attribution a = overRapl(0)) {
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("budget", cpu::get);
      long budget = 1_000;
      spend(cpu, SECOND);
      f.add("intel-rapl:0", 1_000);
      assertEquals(0, run.current().totalUj()); // not sampled yet
      a.samplePass();
      assertFalse(run.current().exceeds(budget)); // 1000 of 1000: not exceeded
      f.add("intel-rapl:0", 1);
      spend(cpu, SECOND);
      a.samplePass();
      assertTrue(run.current().exceeds(budget)); // 1001 > 1000
      RunEnergy end = run.end();
      assertSame(end, run.end()); // ending twice changes nothing
      assertEquals(1_001, end.totalUj());
    }
  }

  @Test
  void idleBaselineIsNotChargedToUnits() throws Exception {
    PowercapFixture f = onePackage();
    try (Attribution a = overRapl(20_000)) { // 20 W idle
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("active", cpu::get);
      spend(cpu, 2 * SECOND);
      clock.advance(2 * SECOND);
      f.add("intel-rapl:0", 100 * JOULE); // 50 W for 2 s
      assertEquals(60 * JOULE, run.end().totalUj()); // (50 W − 20 W) × 2 s
    }
  }

  @Test
  void laggingNodeCounterNeverGivesAShareAboveOne() throws Exception {
    PowercapFixture f = onePackage();
    try (Attribution a = overRapl(0)) {
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("short", cpu::get);
      cpu.addAndGet(5_000_000L); // 5 ms: /proc/stat has not ticked yet
      f.add("intel-rapl:0", 700);
      assertEquals(700, run.end().totalUj());
    }
  }

  @Test
  void failedSampleIsFlaggedAndItsEnergyChargedLater() throws Exception {
    PowercapFixture f = onePackage();
    AtomicBoolean denied = new AtomicBoolean();
    SysfsReader reader = PowercapFixture.denying(file -> denied.get());
    try (RaplPowercapMeter rapl = RaplPowercapMeter.open(root, reader, clock);
        Attribution a = attribution(List.of(rapl), 0)) {
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("gap", cpu::get);
      spend(cpu, SECOND);
      f.add("intel-rapl:0", 3 * JOULE);
      denied.set(true);
      a.samplePass();
      assertTrue(a.failures().contains("CVE-2020-8694"), a.failures());
      denied.set(false);
      spend(cpu, SECOND);
      RunEnergy e = run.end();
      assertEquals(3 * JOULE, e.totalUj());
      assertTrue(e.readings().get(DeviceClass.Cpu).sampleGap());
    }
  }

  @Test
  void estimatorOnlyNodeChargesModelPowerTimesUnitCpuTime() throws Exception {
    try (Estimator est =
            new Estimator(EstimatorModel.cpuOnly(), Set.of(DeviceClass.Cpu), nodeBusy::get, clock);
        Attribution a = attribution(List.of(est), 0)) {
      AtomicLong cpu = new AtomicLong();
      MeteredRun run = a.begin("est", cpu::get);
      cpu.addAndGet(2 * SECOND);
      nodeBusy.addAndGet(3 * SECOND); // someone else used a CPU-second too
      RunEnergy e = run.end();
      assertEquals(20 * JOULE, e.totalUj()); // 10 W × 2 CPU-s
      assertEquals(Provenance.Estimator, e.provenance());
      assertEquals("estimator", e.readings().get(DeviceClass.Cpu).source());
    }
  }

  @Test
  void unmeterableClassOrDeviceIsRefused() throws Exception {
    onePackage();
    try (Attribution a = overRapl(0)) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> a.begin(new UnitSpec("npu", () -> 0, Set.of(DeviceClass.Npu), Set.of())));
      assertTrue(e.getMessage().contains("Npu"), e.getMessage());
      assertThrows(IllegalArgumentException.class, () -> a.begin(gpuUnit("gpu", "GPU-x")));
      a.begin("dup", () -> 0);
      assertThrows(IllegalArgumentException.class, () -> a.begin("dup", () -> 0));
    }
  }

  @Test
  void gpuEnergyGoesToTheUnitHoldingTheDevice() throws Exception {
    onePackage();
    NvmlStub.Control stub = NvmlStub.reset(2);
    try (RaplPowercapMeter rapl = RaplPowercapMeter.open(root, SysfsReader.files(), clock);
        NvmlMeter nvml = NvmlMeter.open(NvmlMeter.DEFAULT_LIBRARY, clock);
        Attribution a = attribution(List.of(rapl, nvml), 0)) {
      MeteredRun holder = a.begin(gpuUnit("g0", NvmlStub.UUID0));
      MeteredRun cpuOnly = a.begin("c", () -> 0);
      IllegalArgumentException notGranted =
          assertThrows(
              IllegalArgumentException.class,
              () -> a.begin(new UnitSpec("x", () -> 0, Set.of(), Set.of(NvmlStub.UUID1))));
      assertTrue(notGranted.getMessage().contains("not granted"), notGranted.getMessage());
      MeteredRun idleGpuGrant = a.begin(gpuUnit("g-none"));
      stub.stub_set_energy(0, 4_000); // 4 J on device 0
      stub.stub_set_energy(1, 9_000); // 9 J on device 1, held by nobody
      RunEnergy g = holder.end();
      EnergyReading gpu = g.readings().get(DeviceClass.Gpu);
      assertEquals(4 * JOULE, gpu.uj());
      assertEquals(Provenance.HwShunt, gpu.provenance()); // the whole device, exclusively held
      assertEquals(1000, gpu.resolutionUj());
      assertEquals("nvml", gpu.source());
      assertEquals(Set.of(DeviceClass.Cpu, DeviceClass.Gpu), g.readings().keySet());
      assertEquals(Set.of(DeviceClass.Cpu), cpuOnly.end().readings().keySet());
      RunEnergy none = idleGpuGrant.end();
      assertEquals(0, none.readings().get(DeviceClass.Gpu).uj()); // granted: present, even at 0
    }
  }

  @Test
  void sharedDeviceIsSplitAndNoLongerHwShunt() throws Exception {
    onePackage();
    NvmlStub.Control stub = NvmlStub.reset(1);
    try (NvmlMeter nvml = NvmlMeter.open(NvmlMeter.DEFAULT_LIBRARY, clock);
        RaplPowercapMeter rapl = RaplPowercapMeter.open(root, SysfsReader.files(), clock);
        Attribution a = attribution(List.of(rapl, nvml), 0)) {
      UnitSpec one = gpuUnit("one", NvmlStub.UUID0);
      UnitSpec two = gpuUnit("two", NvmlStub.UUID0);
      MeteredRun r1 = a.begin(one);
      MeteredRun r2 = a.begin(two);
      stub.stub_set_energy(0, 6_000);
      RunEnergy e1 = r1.end();
      assertEquals(3 * JOULE, e1.readings().get(DeviceClass.Gpu).uj());
      assertEquals(Provenance.ModelBased, e1.readings().get(DeviceClass.Gpu).provenance());
      stub.stub_set_energy(0, 7_000); // r2 alone now
      assertEquals(4 * JOULE, r2.end().readings().get(DeviceClass.Gpu).uj());
    }
  }

  @Test
  void gpuResetDuringTheRunIsFlagged() throws Exception {
    onePackage();
    NvmlStub.Control stub = NvmlStub.reset(1);
    stub.stub_set_energy(0, 50_000);
    try (NvmlMeter nvml = NvmlMeter.open(NvmlMeter.DEFAULT_LIBRARY, clock);
        RaplPowercapMeter rapl = RaplPowercapMeter.open(root, SysfsReader.files(), clock);
        Attribution a = attribution(List.of(rapl, nvml), 0)) {
      MeteredRun run = a.begin(gpuUnit("r", NvmlStub.UUID0));
      stub.stub_set_energy(0, 51_000);
      a.samplePass();
      stub.stub_set_energy(0, 200); // driver reload
      EnergyReading r = run.end().readings().get(DeviceClass.Gpu);
      assertEquals(1_200_000, r.uj());
      assertTrue(r.counterReset());
    }
  }

  @Test
  void periodicSamplerRunsOnItsOwn() throws Exception {
    onePackage();
    try (RaplPowercapMeter rapl = RaplPowercapMeter.open(root);
        Attribution a =
            new Attribution(List.of(rapl), nodeBusy::get, System::nanoTime, 2_000_000L, 0)) {
      long before = a.passes();
      a.startSampling();
      long deadline = System.nanoTime() + 5 * SECOND;
      while (a.passes() < before + 3 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertTrue(a.passes() >= before + 3, "passes: " + a.passes());
    }
  }
}
