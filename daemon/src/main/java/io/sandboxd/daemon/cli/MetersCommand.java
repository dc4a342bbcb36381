package io.sandboxd.daemon.cli;

import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.MeterDiscovery;
import io.sandboxd.metering.MeteringConfig;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `sandboxctl meters`: the energy meters this node has (what the daemon finds at start), their
 * provenance and a current reading.
 */
@Command(name = "meters", description = "List this node's energy meters and a current reading.")
final class MetersCommand implements Callable<Integer> {
  @Mixin JsonOutput json;

  @Option(
      names = "--powercap",
      paramLabel = "DIR",
      description = "Powercap root (default /sys/class/powercap).")
  Path powercap;

  @Option(
      names = "--nvml",
      paramLabel = "LIB",
      description = "NVML library name or path (\"\" disables).")
  String nvml;

  @Override
  public Integer call() {
    MeteringConfig cfg = MeteringConfig.defaults();
    if (powercap != null) {
      cfg = cfg.withPowercapRoot(powercap);
    }
    if (nvml != null) {
      cfg = cfg.withNvmlLibrary(nvml);
    }
    try (DiscoveredMeters meters = MeterDiscovery.discover(cfg)) {
      System.out.println(json.on ? meters.listing().toJson() : meters.listing().toText());
      return 0;
    }
  }
}
