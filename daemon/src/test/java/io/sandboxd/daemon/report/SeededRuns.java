package io.sandboxd.daemon.report;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.WarmpoolClaim;
import io.sandboxd.daemon.TestRecords;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A store's worth of runs made of real signed records, as a daemon answers them: plain runs of each
 * outcome, warm-started runs with a signed claim, and durable runs parked on host A and resumed on
 * host B. Everything the tests assert is computed from what was built here, not typed in.
 */
final class SeededRuns {
  static final SigningKey A = SigningKey.fromSeed(new byte[32]);
  static final SigningKey B = SigningKey.fromSeed(filled((byte) 1));
  static final long T0 = 1_790_000_000_000L;
  static final String EMPTY_JOURNAL = Blake3.hex(new byte[0]);

  static final String GRANTS_SMALL =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":5000000,\"cpu_time_ms\":2000,"
          + "\"memory_bytes\":131072}}";
  static final String GRANTS_GPU =
      "{\"compute\":{\"devices\":[\"Gpu\"],\"energy_budget_uj\":90000000,\"cpu_time_ms\":9000,"
          + "\"memory_bytes\":262144}}";

  final List<RunEvidence> evidence = new ArrayList<>();

  /** What the seed put in, for the test to compare the report with. */
  final Map<String, Long> outcomes = new java.util.TreeMap<>();

  final java.util.Set<Long> minutes = new java.util.TreeSet<>();
  final Map<Provenance, Long> cpuByProvenance = new EnumMap<>(Provenance.class);
  long gpuUj;
  long warmIdleUj;
  long parkedIdleUj;
  int durable;

  private static byte[] filled(byte b) {
    byte[] s = new byte[32];
    java.util.Arrays.fill(s, b);
    return s;
  }

  static String grantsId(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8)).grantsId();
  }

  static String module(int i) {
    return Blake3.hex(("module " + i).getBytes(StandardCharsets.UTF_8));
  }

  /** {@code n} runs from {@code seed}: outcomes, modules, submitters and energies drawn from it. */
  static SeededRuns of(long seed, int n) {
    SeededRuns s = new SeededRuns();
    java.util.Random rnd = new java.util.Random(seed);
    for (int i = 0; i < n; i++) {
      String runId = "run-" + i;
      long at = T0 + (long) rnd.nextInt(30) * 60_000L + rnd.nextInt(59_000);
      int kind = rnd.nextInt(10);
      if (kind == 0) {
        s.durable(runId, at, rnd);
        continue;
      }
      Outcome o =
          kind < 6
              ? new Outcome.Completed()
              : kind < 8
                  ? new Outcome.Terminated(Outcome.Breach.CpuTime)
                  : kind < 9
                      ? new Outcome.Declined("class Npu is not metered here")
                      : new Outcome.Failed("trap");
      boolean gpu = rnd.nextBoolean();
      String grants = gpu ? GRANTS_GPU : GRANTS_SMALL;
      Provenance p = rnd.nextBoolean() ? Provenance.Estimator : Provenance.ModelBased;
      long cpuUj = 1000 + rnd.nextInt(100_000);
      long gpuUj = gpu ? 5000 + rnd.nextInt(500_000) : 0;
      long idle = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(20_000) : 0;
      s.plain(
          runId,
          at,
          o,
          module(rnd.nextInt(5)),
          grants,
          p,
          cpuUj,
          gpuUj,
          idle,
          1000 + rnd.nextInt(3));
    }
    return s;
  }

  private void count(String kind, long at) {
    outcomes.merge(kind, 1L, Long::sum);
    minutes.add(Math.floorDiv(at, 60_000L));
  }

  private void plain(
      String runId,
      long at,
      Outcome o,
      String unit,
      String grants,
      Provenance p,
      long cpuUj,
      long gpu,
      long idle,
      long uid) {
    String gid = grantsId(grants);
    Map<DeviceClass, ClassEnergy> energy = new EnumMap<>(DeviceClass.class);
    energy.put(
        DeviceClass.Cpu,
        new ClassEnergy(cpuUj, p, p == Provenance.Estimator ? "estimator" : "rapl", 1, 0));
    if (gpu > 0) {
      energy.put(DeviceClass.Gpu, new ClassEnergy(gpu, Provenance.ModelBased, "nvml", 1, 0));
      gpuUj += gpu;
    }
    cpuByProvenance.merge(p, cpuUj, Long::sum);
    Receipt r = receipt(runId, unit, gid, energy, idle, at, 5 + (cpuUj % 50));
    Envelope re = Envelope.sign(r.toCore(), A);
    Envelope at1 =
        Envelope.sign(
            TestRecords.attestation(A, "host-a", gid, re.address(), unit, EMPTY_JOURNAL, o, at + 3)
                .toCore(),
            A);
    Envelope seg =
        Envelope.sign(
            TestRecords.execute(runId, 0, null, "host-a", A, gid, re.address(), at).toCore(), A);
    List<Envelope> env = new ArrayList<>(List.of(seg, re, at1));
    if (idle > 0) {
      WarmpoolClaim c =
          new WarmpoolClaim(
              "pool-" + unit.substring(0, 8),
              "inst-" + runId,
              at - 5000,
              at,
              "S2",
              null,
              idle,
              Provenance.Estimator,
              runId);
      env.add(Envelope.sign(c.toCore(), A));
      warmIdleUj += idle;
    }
    evidence.add(RunEvidence.of(runId, "completed", OptionalLong.of(uid), env, grants));
    count(kindOf(o), at);
  }

  /** Execute on A, suspend on A, resume on B after a park, execute on B to completion. */
  private void durable(String runId, long at, java.util.Random rnd) {
    String unit = module(9);
    String gid = grantsId(GRANTS_SMALL);
    long parked = 1 + rnd.nextInt(50_000);
    Receipt r0 = receipt(runId, unit, gid, cpu(2000), 0, at, 10);
    Envelope e0 = Envelope.sign(r0.toCore(), A);
    Envelope s0 =
        Envelope.sign(
            TestRecords.execute(runId, 0, null, "host-a", A, gid, e0.address(), at).toCore(), A);
    RunSegment.SnapshotRef snap =
        new RunSegment.SnapshotRef(
            Blake3.hex(new byte[] {1}),
            null,
            Blake3.hex(new byte[] {3}),
            gid,
            List.of(),
            Blake3.hex(new byte[] {2}));
    Envelope s1 =
        Envelope.sign(
            new RunSegment(
                    runId,
                    1,
                    RunSegment.Kind.suspend,
                    s0.address(),
                    "host-a",
                    A.publicKey().hex(),
                    "S2",
                    gid,
                    null,
                    snap,
                    0,
                    Provenance.Estimator,
                    at + 100)
                .toCore(),
            A);
    Envelope s2 =
        Envelope.sign(
            new RunSegment(
                    runId,
                    2,
                    RunSegment.Kind.resume,
                    s1.address(),
                    "host-b",
                    B.publicKey().hex(),
                    "S2",
                    gid,
                    null,
                    snap,
                    parked,
                    Provenance.Estimator,
                    at + 9000)
                .toCore(),
            B);
    Receipt r3 = receipt(runId, unit, gid, cpu(3000), 0, at + 9001, 12);
    Envelope e3 = Envelope.sign(r3.toCore(), B);
    Envelope s3 =
        Envelope.sign(
            TestRecords.execute(runId, 3, s2.address(), "host-b", B, gid, e3.address(), at + 9001)
                .toCore(),
            B);
    Envelope a3 =
        Envelope.sign(
            TestRecords.attestation(
                    B,
                    "host-b",
                    gid,
                    e3.address(),
                    unit,
                    EMPTY_JOURNAL,
                    new Outcome.Completed(),
                    at + 9100)
                .toCore(),
            B);
    cpuByProvenance.merge(Provenance.Estimator, 5000L, Long::sum);
    parkedIdleUj += parked;
    durable++;
    evidence.add(
        RunEvidence.of(
            runId,
            "completed",
            OptionalLong.of(1000),
            List.of(s0, s1, s2, s3, e0, e3, a3),
            GRANTS_SMALL));
    count("Completed", at);
  }

  static String kindOf(Outcome o) {
    if (o instanceof Outcome.Terminated) {
      return "Terminated";
    }
    if (o instanceof Outcome.Declined) {
      return "Declined";
    }
    return o instanceof Outcome.Failed ? "Failed" : "Completed";
  }

  private static Map<DeviceClass, ClassEnergy> cpu(long uj) {
    return Map.of(DeviceClass.Cpu, new ClassEnergy(uj, Provenance.Estimator, "estimator", 1, 0));
  }

  static Receipt receipt(
      String runId,
      String unit,
      String gid,
      Map<DeviceClass, ClassEnergy> energy,
      long idle,
      long at,
      long cpuMs) {
    return new Receipt(
        runId,
        unit,
        gid,
        "S2",
        energy,
        idle,
        List.of(),
        cpuMs,
        65536,
        cpuMs + 2,
        Receipt.IoUse.NONE,
        Receipt.NetUse.NONE,
        at,
        at + cpuMs + 2);
  }
}
