package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.report.ReportContext;
import io.sandboxd.daemon.report.ReportSite;
import io.sandboxd.daemon.report.ReportWindow;
import io.sandboxd.daemon.report.RunEvidence;
import io.sandboxd.daemon.report.VerifiedRecords;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;

/**
 * Issue 26: what `sandboxctl report` costs at 10^3..10^5 runs, past the daemon (which answers the
 * records): each run's signed segment, receipt and attestation are made from a fixed seed, then
 * timed separately: verification (EvidenceBundle per run), and aggregation + rendering + writing
 * every page. Prints one line per size: runs, verify ms, render ms, index bytes, total bytes,
 * files. Run with benchmarks/run-report-bench.sh [N...].
 */
public final class ReportBench {
  private ReportBench() {}

  public static void main(String[] args) throws Exception {
    List<Integer> sizes = new ArrayList<>();
    for (String a : args) {
      sizes.add(Integer.parseInt(a));
    }
    if (sizes.isEmpty()) {
      sizes = List.of(1_000, 10_000, 100_000);
    }
    SigningKey key = SignedRun.KEY;
    for (int n : sizes) {
      List<RunEvidence> runs = seeded(key, n, 26L);
      Path dir = Files.createTempDirectory("report-bench-");
      try {
        java.lang.management.ThreadMXBean cpu =
            java.lang.management.ManagementFactory.getThreadMXBean();
        long c0 = cpu.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        VerifiedRecords r = VerifiedRecords.check(runs, Set.of(key.publicKey()), ReportWindow.ALL);
        long t1 = System.nanoTime();
        long c1 = cpu.getCurrentThreadCpuTime();
        ReportSite.Written w =
            ReportSite.write(
                dir,
                r,
                new ReportContext(
                    0,
                    "bench",
                    ReportWindow.ALL,
                    List.of(key.publicKey().hex()),
                    Optional.empty(),
                    List.of()));
        long t2 = System.nanoTime();
        long c2 = cpu.getCurrentThreadCpuTime();
        if (r.runs().size() != n) {
          throw new IllegalStateException(
              "only " + r.runs().size() + " of " + n + " verified: " + r.rejected().get(0));
        }
        System.out.printf(
            "runs %d  verify_ms %d (cpu %d)  render_write_ms %d (cpu %d)  index_bytes %d"
                + "  total_bytes %d  files %d%n",
            n,
            (t1 - t0) / 1_000_000,
            (c1 - c0) / 1_000_000,
            (t2 - t1) / 1_000_000,
            (c2 - c1) / 1_000_000,
            w.indexBytes(),
            w.bytes(),
            w.files());
      } finally {
        ScratchDirectory.delete(dir);
      }
    }
  }

  /**
   * {@code n} plain runs over 30 days: 200 modules, 50 submitters, four outcomes, some warm idle.
   */
  static List<RunEvidence> seeded(SigningKey key, int n, long seed) {
    Random rnd = new Random(seed);
    List<RunEvidence> out = new ArrayList<>(n);
    long t0 = 1_790_000_000_000L;
    for (int i = 0; i < n; i++) {
      String runId = String.format("%020x", i);
      long at = t0 + (long) (rnd.nextDouble() * 30 * 86_400_000L);
      String unit = Blake3.hex(("module " + rnd.nextInt(200)).getBytes(StandardCharsets.UTF_8));
      String gid = Blake3.hex(("grants " + rnd.nextInt(20)).getBytes(StandardCharsets.UTF_8));
      int k = rnd.nextInt(10);
      Outcome o =
          k < 7
              ? new Outcome.Completed()
              : k < 9 ? new Outcome.Terminated(Outcome.Breach.CpuTime) : new Outcome.Failed("trap");
      Map<DeviceClass, ClassEnergy> energy = new EnumMap<>(DeviceClass.class);
      energy.put(
          DeviceClass.Cpu,
          new ClassEnergy(1 + rnd.nextInt(1_000_000), Provenance.Estimator, "estimator", 1, 0));
      if (rnd.nextInt(5) == 0) {
        energy.put(
            DeviceClass.Gpu,
            new ClassEnergy(1 + rnd.nextInt(5_000_000), Provenance.ModelBased, "nvml", 1, 0));
      }
      long cpu = rnd.nextInt(2000);
      Receipt rc =
          new Receipt(
              runId,
              unit,
              gid,
              "S2",
              energy,
              0,
              List.of(),
              cpu,
              65536,
              cpu + 1,
              Receipt.IoUse.NONE,
              Receipt.NetUse.NONE,
              at,
              at + cpu + 1);
      Envelope re = Envelope.sign(rc.toCore(), key);
      Envelope ae = SignedRun.attestation(key, "bench", gid, re, unit, o, at + cpu + 2, List.of());
      Envelope se = SignedRun.firstSegment(key, "bench", runId, gid, re, at);
      out.add(
          RunEvidence.of(
              runId,
              "completed",
              OptionalLong.of(1000 + rnd.nextInt(50)),
              List.of(se, re, ae),
              ""));
    }
    return out;
  }

  /** The key a benchmark's records are signed with. */
  static PublicKey key() {
    return SignedRun.KEY.publicKey();
  }
}
