package io.sandboxd.benchmarks;

import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.MeterException;
import io.sandboxd.metering.MeterSample;
import io.sandboxd.metering.MeteredRun;
import io.sandboxd.metering.ProcStatCpuTime;
import io.sandboxd.metering.RaplPowercapMeter;
import io.sandboxd.metering.SysfsReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The cost of one metering pass over a two-package powercap fixture (8 zones, as on a dual-socket
 * server) plus a /proc/stat fixture, with four active units: what the sampler spends per interval.
 * Divide the score by the sampling interval (1 s by default) for the overhead fraction.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class MeteringBench {
  private Path dir;
  private RaplPowercapMeter meter;
  private Attribution attribution;
  private final List<MeteredRun> runs = new ArrayList<>();
  private final AtomicLong unitCpu = new AtomicLong();

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dir = Files.createTempDirectory("metering-bench");
    Path powercap = dir.resolve("powercap");
    String[][] zones = {
      {"intel-rapl:0", "package-0"},
      {"intel-rapl:0:0", "core"},
      {"intel-rapl:0:1", "uncore"},
      {"intel-rapl:0:2", "dram"},
      {"intel-rapl:1", "package-1"},
      {"intel-rapl:1:0", "core"},
      {"intel-rapl:1:1", "dram"},
      {"intel-rapl:2", "psys"},
    };
    for (String[] z : zones) {
      Path d = powercap.resolve(z[0]);
      Files.createDirectories(d);
      Files.writeString(d.resolve("name"), z[1] + "\n", StandardCharsets.US_ASCII);
      Files.writeString(
          d.resolve("max_energy_range_uj"), "262143328850\n", StandardCharsets.US_ASCII);
      Files.writeString(d.resolve("energy_uj"), "123456789\n", StandardCharsets.US_ASCII);
    }
    Path stat = dir.resolve("stat");
    Files.writeString(
        stat,
        "cpu  4287 0 1331 55164 109 0 20 12 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n",
        StandardCharsets.US_ASCII);
    meter = RaplPowercapMeter.open(powercap, SysfsReader.files(), System::nanoTime);
    attribution =
        new Attribution(
            List.of(meter), new ProcStatCpuTime(stat), System::nanoTime, 1_000_000_000L, 0);
    for (int i = 0; i < 4; i++) {
      runs.add(attribution.begin("bench-" + i, unitCpu::get));
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    runs.forEach(MeteredRun::end);
    attribution.close();
    meter.close();
    ScratchDirectory.delete(dir);
  }

  /** One full attribution pass: read 8 zones and /proc/stat, charge four units. */
  @Benchmark
  public long samplingPass() {
    unitCpu.addAndGet(1_000_000L);
    attribution.samplePass();
    return attribution.passes();
  }

  /** The meter read alone. */
  @Benchmark
  public MeterSample meterSample() throws MeterException {
    return meter.sample();
  }
}
