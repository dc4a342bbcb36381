package io.sandboxd.benchmarks;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.HostIdentity;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.RunRecord;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What a node signs for a run, for the benchmarks that seed a store or a report: the receipt and
 * attestation of an S2 run (its journal attested by root), its first (execute) segment, and the
 * whole record.
 */
final class SignedRun {
  private SignedRun() {}

  /**
   * The key the benchmarks sign with: a fixed seed, so a store one command fills opens under the
   * next (a store's records must verify under its node's key).
   */
  static final SigningKey KEY = SigningKey.fromSeed(new byte[32]);

  /**
   * The receipt of an S2 run of {@code unit} that took {@code cpuMs} of CPU (5 µJ, estimated) and 1
   * ms of wall time from {@code startedMs}, with no inference, I/O or network, signed by {@code
   * key}.
   */
  static Envelope receipt(
      SigningKey key,
      String runId,
      String unit,
      String grantsId,
      long cpuMs,
      long memoryPeakBytes,
      long startedMs) {
    Receipt r =
        Receipt.builder()
            .runId(runId)
            .unit(unit)
            .grantsId(grantsId)
            .tier("S2")
            .energy(
                Map.of(
                    DeviceClass.Cpu, new ClassEnergy(5, Provenance.Estimator, "estimator", 1, 0)))
            .inference(List.of())
            .cpuTimeMs(cpuMs)
            .memoryPeakBytes(memoryPeakBytes)
            .wallMs(1)
            .io(Receipt.IoUse.NONE)
            .net(Receipt.NetUse.NONE)
            .startedMs(startedMs)
            .endedMs(startedMs + 1)
            .build();
    return Envelope.sign(r.toCore(), key);
  }

  /**
   * The attestation of {@code receipt}'s run, its {@code journal} (canonical entries) attested by
   * merkle root, signed by {@code key} as host {@code hostId}.
   */
  static Envelope attestation(
      SigningKey key,
      String hostId,
      String grantsId,
      Envelope receipt,
      String unit,
      Outcome outcome,
      long atMs,
      List<String> journal) {
    List<byte[]> leaves = new ArrayList<>();
    for (String entry : journal) {
      leaves.add(Blake3.hash(CanonicalJson.canonicalize(CanonicalJson.parse(entry))));
    }
    Attestation a =
        Attestation.builder()
            .host(new HostIdentity(hostId, key.publicKey().hex(), "bench"))
            .tier("S2")
            .grantsId(grantsId)
            .receipt(receipt.address())
            .unit(unit)
            .journalRoot(Hex.encode(MerkleTree.blake3(leaves).root()))
            .outcome(outcome)
            .clockConstantMs(0L)
            .issuedMs(atMs)
            .build();
    return Envelope.sign(a.toCore(), key);
  }

  /**
   * The run's first segment, over {@code receipt}, signed by {@code key} as host {@code hostId}.
   */
  static Envelope firstSegment(
      SigningKey key, String hostId, String runId, String grantsId, Envelope receipt, long atMs) {
    RunSegment s =
        new RunSegment(
            runId,
            0,
            RunSegment.Kind.execute,
            null,
            hostId,
            key.publicKey().hex(),
            "S2",
            grantsId,
            receipt.address(),
            null,
            0,
            Provenance.Estimator,
            atMs);
    return Envelope.sign(s.toCore(), key);
  }

  /**
   * A completed run of {@code module} as the supervisor stores it: its receipt, attestation and
   * first segment signed by {@code key} as host {@code hostId}, {@code journal} with no blobs, an
   * empty log; to add to before it is built.
   */
  static RunRecord.Builder completed(
      SigningKey key,
      String hostId,
      String runId,
      byte[] module,
      String grantsId,
      long cpuMs,
      long memoryPeakBytes,
      List<String> journal,
      long createdMs) {
    String unit = Blake3.hex(module);
    Envelope r = receipt(key, runId, unit, grantsId, cpuMs, memoryPeakBytes, createdMs);
    Envelope a =
        attestation(
            key, hostId, grantsId, r, unit, new Outcome.Completed(), createdMs + 2, journal);
    Envelope sg = firstSegment(key, hostId, runId, grantsId, r, createdMs);
    return RunRecord.builder()
        .run(runId, createdMs)
        .unit(unit, grantsId)
        .outcomeJson("\"Completed\"")
        .signed(r, a, sg)
        .journal(journal, Map.of())
        .log("")
        .submission(module, "{\"compute\":{}}", "run");
  }

  /**
   * A completed run of the benchmarks' own module under their own grants (S2, no CPU, 64 KiB),
   * signed now by {@code key} as host {@code bench-host}, with {@code journal}.
   */
  static RunRecord ofBench(SigningKey key, String runId, List<String> journal) {
    byte[] module = "bench module".getBytes(StandardCharsets.UTF_8);
    String grantsId = Blake3.hex("bench grants".getBytes(StandardCharsets.UTF_8));
    return completed(
            key,
            "bench-host",
            runId,
            module,
            grantsId,
            0,
            65536,
            journal,
            System.currentTimeMillis())
        .build();
  }
}
