package io.sandboxd.metering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sandboxd.attest.DeviceClass;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MeterDiscoveryTest {
  @TempDir Path dir;

  private MeteringConfig nothingHere() {
    return MeteringConfig.defaults()
        .withPowercapRoot(dir.resolve("no-powercap"))
        .withMsr(dir.resolve("no-msr"), dir.resolve("no-cpu"), dir.resolve("no-cpuinfo"))
        .withNvmlLibrary("libnvidia-ml-absent.so.1");
  }

  private static MeterProbe probe(DiscoveredMeters d, String source) {
    return d.probes().stream().filter(p -> p.source().equals(source)).findFirst().orElseThrow();
  }

  @Test
  void nothingMeasurableFallsBackToTheCpuEstimator() {
    try (DiscoveredMeters d = MeterDiscovery.discover(nothingHere(), () -> 0, System::nanoTime)) {
      assertEquals(Set.of(DeviceClass.Cpu), d.meterableClasses());
      assertFalse(d.canMeter(DeviceClass.Gpu)); // admission refuses a Gpu grant here
      assertEquals(1, d.meters().size());
      assertTrue(d.meters().get(0) instanceof Estimator);
      assertEquals(MeterProbe.Status.Unavailable, probe(d, "rapl").status());
      assertEquals(MeterProbe.Status.Unavailable, probe(d, "rapl-msr").status());
      assertEquals(MeterProbe.Status.Unavailable, probe(d, "nvml").status());
      assertTrue(probe(d, "nvml").detail().startsWith("no GPU meter"));
      assertEquals(MeterProbe.Status.Found, probe(d, "estimator").status());
      String line = d.summaryLine();
      assertTrue(line.contains("ESTIMATED ONLY"), line);
      assertTrue(line.contains("[Cpu]"), line);
      assertFalse(line.contains("\n"));
    }
  }

  @Test
  void powercapIsPreferredAndMsrIsNotTried() {
    PowercapFixture.twoPackages(dir.resolve("powercap"));
    MeteringConfig c = nothingHere().withPowercapRoot(dir.resolve("powercap"));
    try (DiscoveredMeters d = MeterDiscovery.discover(c, () -> 0, System::nanoTime)) {
      assertEquals(Set.of(DeviceClass.Cpu), d.meterableClasses());
      assertEquals(List.of("rapl"), d.meters().stream().map(Meter::source).toList());
      assertEquals(MeterProbe.Status.Skipped, probe(d, "rapl-msr").status());
      assertEquals(MeterProbe.Status.Skipped, probe(d, "estimator").status());
      assertFalse(d.summaryLine().contains("ESTIMATED"));
    }
  }

  @Test
  void msrIsUsedWhenPowercapIsUnreadable() throws IOException {
    PowercapFixture.twoPackages(dir.resolve("powercap"));
    Path energy = dir.resolve("powercap/intel-rapl:0/energy_uj");
    Files.delete(energy);
    Files.createDirectory(energy);
    Path cpus = dir.resolve("cpu");
    int[] packageOfCpu = {0, 0, 1, 1};
    for (int cpu = 0; cpu < packageOfCpu.length; cpu++) {
      Path topo = cpus.resolve("cpu" + cpu).resolve("topology");
      Files.createDirectories(topo);
      Files.writeString(topo.resolve("physical_package_id"), packageOfCpu[cpu] + "\n");
    }
    Files.createDirectories(cpus.resolve("cpufreq")); // not a cpuN directory
    Path msr = dir.resolve("msr");
    for (int cpu : new int[] {0, 2}) {
      Files.createDirectories(msr.resolve(Integer.toString(cpu)));
      Path f = msr.resolve(cpu + "/msr");
      MsrFixture.put(f, MsrFixture.INTEL_UNIT, MsrFixture.UNIT_ESU_14);
      MsrFixture.put(f, MsrFixture.INTEL_PKG, 1);
    }
    Path cpuinfo = dir.resolve("cpuinfo");
    Files.writeString(cpuinfo, "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n");
    MeteringConfig c =
        nothingHere().withPowercapRoot(dir.resolve("powercap")).withMsr(msr, cpus, cpuinfo);
    try (DiscoveredMeters d = MeterDiscovery.discover(c, () -> 0, System::nanoTime)) {
      assertEquals(List.of("rapl-msr"), d.meters().stream().map(Meter::source).toList());
      assertEquals(
          List.of("package-0", "package-1"),
          d.meters().get(0).domains().stream().map(MeterDomain::id).toList());
      assertTrue(probe(d, "rapl").detail().contains(energy.toString()));
    }
  }

  @Test
  void unknownVendorIsUnavailable() throws IOException {
    Path cpuinfo = dir.resolve("cpuinfo");
    Files.writeString(cpuinfo, "vendor_id\t: CentaurHauls\n");
    MeterUnavailableException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            MeterUnavailableException.class, () -> MeterDiscovery.vendor(cpuinfo));
    assertTrue(e.getMessage().contains("CentaurHauls"));
  }

  @Test
  void gpusFromNvmlMakeGpuMeterable() {
    NvmlStub.reset(2);
    MeteringConfig c = nothingHere().withNvmlLibrary(NvmlMeter.DEFAULT_LIBRARY);
    try (DiscoveredMeters d = MeterDiscovery.discover(c, () -> 0, System::nanoTime)) {
      assertEquals(Set.of(DeviceClass.Cpu, DeviceClass.Gpu), d.meterableClasses());
      assertEquals(MeterProbe.Status.Found, probe(d, "nvml").status());
      assertFalse(d.canMeter(DeviceClass.Npu));
    }
  }

  @Test
  void listingShowsEveryCounterWithAReadingAsTextAndJson() throws Exception {
    PowercapFixture.twoPackages(dir.resolve("powercap"));
    NvmlStub.reset(1);
    MeteringConfig c =
        nothingHere()
            .withPowercapRoot(dir.resolve("powercap"))
            .withNvmlLibrary(NvmlMeter.DEFAULT_LIBRARY);
    try (DiscoveredMeters d = MeterDiscovery.discover(c, () -> 0, System::nanoTime)) {
      MeterListing listing = d.listing();
      assertEquals(9, listing.counters().size()); // 8 RAPL zones + 1 GPU
      String text = listing.toText();
      assertTrue(text.contains("psys (not summed)"), text);
      assertTrue(text.contains(NvmlStub.UUID0), text);
      assertTrue(text.contains("HwShunt"), text);
      JsonNode json = new ObjectMapper().readTree(listing.toJson());
      assertEquals("Cpu", json.get("meterableClasses").get(0).asText());
      assertEquals("Gpu", json.get("meterableClasses").get(1).asText());
      JsonNode first = json.get("counters").get(0);
      assertEquals("package-0", first.get("id").asText());
      assertEquals("HwShunt", first.get("provenance").asText());
      assertTrue(first.get("readingUj").isIntegralNumber());
      assertEquals(10_000_000L, first.get("minWindowNs").asLong());
    }
  }

  @Test
  void listingReportsAFailedSampleInsteadOfThrowing() throws IOException {
    PowercapFixture.twoPackages(dir.resolve("powercap"));
    MeteringConfig c = nothingHere().withPowercapRoot(dir.resolve("powercap"));
    try (DiscoveredMeters d = MeterDiscovery.discover(c, () -> 0, System::nanoTime)) {
      Path energy = dir.resolve("powercap/intel-rapl:1/energy_uj");
      Files.delete(energy);
      MeterListing listing = d.listing();
      assertTrue(listing.counters().stream().allMatch(e -> e.readingUj() == null));
      assertTrue(listing.toText().contains("error: cannot read " + energy), listing.toText());
    }
  }

  @Test
  void discoveryOnThisHostAlwaysMetersCpu() {
    try (DiscoveredMeters d = MeterDiscovery.discover(MeteringConfig.defaults())) {
      assertTrue(d.canMeter(DeviceClass.Cpu), d.summaryLine());
    }
  }
}
