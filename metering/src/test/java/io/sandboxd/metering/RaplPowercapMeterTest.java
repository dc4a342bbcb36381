package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RaplPowercapMeterTest {
  @TempDir Path root;

  @Test
  void enumeratesPackagesSubzonesAndPsysInOrder() throws Exception {
    PowercapFixture.twoPackages(root);
    try (RaplPowercapMeter m = RaplPowercapMeter.open(root)) {
      List<String> ids = m.domains().stream().map(MeterDomain::id).toList();
      assertEquals(
          List.of(
              "package-0",
              "package-0/core",
              "package-0/uncore",
              "package-0/dram",
              "package-1",
              "package-1/core",
              "package-1/dram",
              "psys"),
          ids);
      List<DomainRole> roles = m.domains().stream().map(MeterDomain::role).toList();
      assertEquals(
          List.of(
              DomainRole.Package,
              DomainRole.Core,
              DomainRole.Uncore,
              DomainRole.Dram,
              DomainRole.Package,
              DomainRole.Core,
              DomainRole.Dram,
              DomainRole.Psys),
          roles);
      // psys contains the packages and core is inside them: neither may be summed
      assertFalse(DomainRole.Psys.additive());
      assertFalse(DomainRole.Core.additive());
      assertTrue(DomainRole.Dram.additive());
      MeterDomain pkg = m.domains().get(0);
      assertEquals(DeviceClass.Cpu, pkg.energyClass());
      assertEquals(Provenance.HwShunt, pkg.provenance());
      assertEquals("rapl", pkg.source());
      assertEquals(1, pkg.resolutionUj());
      assertEquals(10_000_000L, pkg.minWindowNs());
    }
  }

  @Test
  void reportsEnergySinceOpen() throws Exception {
    PowercapFixture f = PowercapFixture.twoPackages(root);
    try (RaplPowercapMeter m = RaplPowercapMeter.open(root)) {
      f.add("intel-rapl:0", 5_000);
      f.add("intel-rapl:0:2", 700);
      MeterSample s = m.sample();
      assertEquals(5_000, s.cumulativeUj(0));
      assertEquals(700, s.cumulativeUj(3));
      assertEquals(0, s.cumulativeUj(4));
      f.add("intel-rapl:0", 1);
      assertEquals(5_001, m.sample().cumulativeUj(0));
    }
  }

  @Test
  void counterWrapMidRunIsUnfolded() throws Exception {
    PowercapFixture f =
        new PowercapFixture(root)
            .zone("intel-rapl:0", "package-0", 262_143_327_000L, PowercapFixture.MAX);
    try (RaplPowercapMeter m = RaplPowercapMeter.open(root)) {
      f.set("intel-rapl:0", 262_143_328_000L);
      assertEquals(1_000, m.sample().cumulativeUj(0));
      f.set("intel-rapl:0", 500); // the WIRE.md example: +1350 across the wrap
      assertEquals(2_350, m.sample().cumulativeUj(0));
      f.set("intel-rapl:0", 10_500);
      assertEquals(12_350, m.sample().cumulativeUj(0));
    }
  }

  @Test
  void unreadableCounterIsReportedWithTheFileAtOpen() throws IOException {
    new PowercapFixture(root).zone("intel-rapl:0", "package-0", 1);
    Path energy = root.resolve("intel-rapl:0/energy_uj");
    Files.delete(energy);
    Files.createDirectory(energy); // reading a directory fails even as root
    MeterUnavailableException e =
        assertThrows(MeterUnavailableException.class, () -> RaplPowercapMeter.open(root));
    assertTrue(e.getMessage().contains(energy.toString()), e.getMessage());
  }

  @Test
  void permissionDeniedNamesTheCveAndTheFix() {
    new PowercapFixture(root).zone("intel-rapl:0", "package-0", 1);
    SysfsReader rootOnly =
        PowercapFixture.denying(file -> file.getFileName().toString().equals("energy_uj"));
    MeterUnavailableException e =
        assertThrows(
            MeterUnavailableException.class,
            () -> RaplPowercapMeter.open(root, rootOnly, System::nanoTime));
    assertTrue(e.getMessage().contains("CVE-2020-8694"), e.getMessage());
    assertTrue(e.getMessage().contains("permission denied"), e.getMessage());
    assertTrue(e.getMessage().contains("energy_uj"), e.getMessage());
  }

  @Test
  void counterThatBecomesUnreadableFailsTheSampleAndRecovers() throws Exception {
    PowercapFixture f = new PowercapFixture(root).zone("intel-rapl:0", "package-0", 100);
    AtomicBoolean denied = new AtomicBoolean();
    SysfsReader reader = PowercapFixture.denying(file -> denied.get());
    try (RaplPowercapMeter m = RaplPowercapMeter.open(root, reader, System::nanoTime)) {
      denied.set(true);
      f.add("intel-rapl:0", 40);
      MeterException e = assertThrows(MeterException.class, m::sample);
      assertTrue(e.getMessage().contains("CVE-2020-8694"), e.getMessage());
      denied.set(false);
      f.add("intel-rapl:0", 2);
      assertEquals(42, m.sample().cumulativeUj(0)); // nothing lost: the counter kept counting
    }
  }

  @Test
  void amdZonesAreReadLikeIntelOnes() throws Exception {
    PowercapFixture f =
        new PowercapFixture(root)
            .zone("amd-rapl:0", "package-0", 10)
            .zone("amd-rapl:0:0", "core", 5)
            // intel-rapl-mmio repeats the package counter on some Intel parts: never counted twice
            .zone("intel-rapl-mmio:0", "package-0", 77);
    try (RaplPowercapMeter m = RaplPowercapMeter.open(root)) {
      assertEquals(
          List.of("package-0", "package-0/core"),
          m.domains().stream().map(MeterDomain::id).toList());
      f.add("amd-rapl:0", 900);
      assertEquals(900, m.sample().cumulativeUj(0));
    }
  }

  @Test
  void noTreeOrNoPackageIsUnavailable() {
    MeterUnavailableException none =
        assertThrows(
            MeterUnavailableException.class, () -> RaplPowercapMeter.open(root.resolve("absent")));
    assertTrue(none.getMessage().contains("no powercap tree"), none.getMessage());
    new PowercapFixture(root).zone("intel-rapl:0", "psys", 1);
    MeterUnavailableException psysOnly =
        assertThrows(MeterUnavailableException.class, () -> RaplPowercapMeter.open(root));
    assertTrue(psysOnly.getMessage().contains("no RAPL package zone"), psysOnly.getMessage());
  }

  @Test
  void garbageInACounterIsAClearError() throws IOException {
    new PowercapFixture(root).zone("intel-rapl:0", "package-0", 1);
    Files.writeString(root.resolve("intel-rapl:0/energy_uj"), "lots\n");
    MeterUnavailableException e =
        assertThrows(MeterUnavailableException.class, () -> RaplPowercapMeter.open(root));
    assertTrue(e.getMessage().contains("'lots'"), e.getMessage());
  }
}
