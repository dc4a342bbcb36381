package io.sandboxd.daemon.run;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.WarmpoolEvict;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.UnitIo;
import io.sandboxd.warmpool.Claim;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Builds and signs the records a run leaves behind: receipts, attestations, run segments (execute,
 * suspend, resume), warm-pool claims and evictions, with the node's key. It is the only code that
 * signs them: a submission, a durable run's steps and its resume all seal here, so a record means
 * the same whichever path made it. Signing happens before the store is entered (the store only
 * writes).
 */
public final class RecordSealer {
  /** The isolation tier every record of this node names. */
  static final String TIER = "S2";

  private final NodeIdentity node;

  /** Seals with {@code node}'s key, naming its host. */
  public RecordSealer(NodeIdentity node) {
    this.node = node;
  }

  NodeIdentity node() {
    return node;
  }

  /** An execute step's signed receipt and segment, and the run's budget as of the step's end. */
  public record Step(Envelope receipt, Envelope segment, RunSegment.Budget budget) {}

  /**
   * Seals execute step {@code seq} of {@code runId}, after segment {@code prev} (null first): its
   * receipt ({@code idleUj}: the idle energy of a warm claim it carries), then its segment, whose
   * budget adds the receipt to what the run consumed {@code before}.
   */
  public Step step(
      String runId,
      long seq,
      String prev,
      Admission.Admitted a,
      ExecutionResult r,
      long idleUj,
      io.sandboxd.executor.Consumed before,
      long nowMs) {
    Receipt unsigned = receiptOf(runId, a, r, idleUj);
    Envelope receipt = Envelope.sign(unsigned.toCore(), node.key());
    // From the receipt as built: reading it back from its signed core gave the same two numbers.
    RunSegment.Budget budget =
        budget(a.grants(), before.plus(unsigned.cpuTimeMs(), unsigned.totalUj()));
    return new Step(
        receipt, execute(runId, seq, prev, a.grantsId(), receipt.address(), budget, nowMs), budget);
  }

  /** The receipt of one execute step of {@code runId}, unsigned. */
  static Receipt receiptOf(String runId, Admission.Admitted a, ExecutionResult r, long idleUj) {
    Map<DeviceClass, ClassEnergy> energy = new TreeMap<>(r.energy());
    List<Receipt.InferenceUse> inference = inferenceRows(r, energy);
    return Receipt.builder()
        .runId(runId)
        .unit(a.unit().address())
        .grantsId(a.grantsId())
        .tier(TIER)
        .energy(energy)
        .inference(inference)
        // Idle energy of the warm instance the run claimed; never counted against the budget.
        .idleUj(idleUj)
        // Compiling for this run is work done for this run (a declined run records none).
        .cpuTimeMs(
            TimeUnit.NANOSECONDS.toMillis(
                r.cpuTimeNanos()
                    + (r.outcome() instanceof Outcome.Declined ? 0 : a.compileCpuNanos())))
        .memoryPeakBytes(r.memoryPeakBytes())
        .wallMs(TimeUnit.NANOSECONDS.toMillis(r.wallNanos()))
        .io(r.io().storage())
        .net(r.io().network())
        .startedMs(r.startedMs())
        .endedMs(r.endedMs())
        .build();
  }

  /**
   * The signed attestation of the execute step whose receipt is at {@code receipt}, naming the
   * environment manifest (or null), a WASI command's inputs and outputs, and the standing-grant
   * policy and child the grants were minted under ({@code jcp}, null for none).
   */
  public Envelope attestation(
      Admission.Admitted a,
      ExecutionResult r,
      String receipt,
      String manifest,
      UnitIo unitIo,
      long now,
      Attestation.Jcp jcp) {
    String unit = a.unit().address();
    Attestation att =
        Attestation.builder()
            .host(node.host())
            .tier(TIER)
            .grantsId(a.grantsId())
            .receipt(receipt)
            .unit(unit)
            .journalRoot(r.journalRoot())
            .manifest(manifest)
            .outcome(r.outcome())
            .clockGranted(r.clockGranted())
            .clockConstantMs(r.clockGranted() ? null : r.clockConstantMs())
            .issuedMs(now)
            .inputs(r.stdio().map(io -> inputs(unitIo, unit)).orElse(null))
            .outputs(
                r.stdio()
                    .map(
                        io ->
                            new Attestation.Outputs(
                                Attestation.Blob.of(io.stdout().bytes()),
                                Attestation.Blob.of(io.stderr().bytes())))
                    .orElse(null))
            .jcp(jcp)
            .build();
    return Envelope.sign(att.toCore(), node.key());
  }

  /**
   * The signed execute segment {@code seq} of {@code runId}, after {@code prev} (null first),
   * carrying the run's budget as of its end.
   */
  private Envelope execute(
      String runId,
      long seq,
      String prev,
      String grantsId,
      String receipt,
      RunSegment.Budget budget,
      long nowMs) {
    return segment(
        new RunSegment(
            runId,
            seq,
            RunSegment.Kind.execute,
            prev,
            node.host().id(),
            node.host().publicKey(),
            TIER,
            grantsId,
            receipt,
            null,
            0,
            Provenance.Estimator,
            nowMs,
            budget));
  }

  /**
   * The budget of a segment that consumed nothing of its own: the grant in force, and what the run
   * had consumed {@code before} (a resume's).
   */
  public static RunSegment.Budget budget(
      io.sandboxd.enforcer.Grants inForce, io.sandboxd.executor.Consumed before) {
    return new RunSegment.Budget(
        inForce.compute().cpuTimeMs(),
        inForce.compute().energyBudgetUj(),
        before.cpuTimeMs(),
        before.energyUj());
  }

  /** The signed suspend segment that parks {@code runId} after execute segment {@code prev}. */
  public Envelope suspend(
      String runId,
      long seq,
      String prev,
      String grantsId,
      RunSegment.SnapshotRef ref,
      RunSegment.Budget budget,
      Provenance idleProvenance,
      long nowMs) {
    return segment(
        new RunSegment(
            runId,
            seq,
            RunSegment.Kind.suspend,
            prev,
            node.host().id(),
            node.host().publicKey(),
            TIER,
            grantsId,
            null,
            ref,
            0,
            idleProvenance,
            nowMs,
            budget));
  }

  /**
   * The signed resume segment after {@code suspendEnv}, under {@code grantsId}, carrying the idle
   * energy of the park; its snapshot is the suspend's as signed, byte for byte (not as re-encoded).
   */
  public Envelope resume(
      Envelope suspendEnv,
      RunSegment suspend,
      String grantsId,
      RunSegment.Budget budget,
      long idleUj,
      Provenance idleProvenance,
      long nowMs) {
    RunSegment resume =
        new RunSegment(
            suspend.runId(),
            suspend.seq() + 1,
            RunSegment.Kind.resume,
            suspendEnv.address(),
            node.host().id(),
            node.host().publicKey(),
            TIER,
            grantsId,
            null,
            suspend.snapshot(),
            idleUj,
            idleProvenance,
            nowMs,
            budget);
    ObjectNode core = resume.toCore();
    core.set("snapshot", suspendEnv.core().get("snapshot").deepCopy());
    return Envelope.sign(core, node.key());
  }

  private Envelope segment(RunSegment s) {
    return Envelope.sign(s.toCore(), node.key());
  }

  /** The signed eviction records of warm instances evicted together (stored in one batch). */
  public List<Envelope> evictions(List<WarmpoolEvict> records) {
    return records.stream().map(r -> Envelope.sign(r.toCore(), node.key())).toList();
  }

  /** The signed warm-pool claim of a run that took a warm instance; empty for a cold start. */
  Optional<Envelope> claim(Claim claim) {
    return claim.record().map(c -> Envelope.sign(c.toCore(), node.key()));
  }

  /** The attested inputs of a WASI command: the argv it saw and its stdin, if one was attached. */
  private static Attestation.Inputs inputs(UnitIo unitIo, String unit) {
    return new Attestation.Inputs(
        unitIo.argv(unit), unitIo.stdin().map(Attestation.Blob::of).orElse(null));
  }

  /**
   * Inference energy goes to the class that served it (never into a host-call lump): it is added to
   * that class's energy, labelled ModelBased at best (the counter's delta over the call windows is
   * an apportionment), and listed per class with the number of calls.
   */
  private static List<Receipt.InferenceUse> inferenceRows(
      ExecutionResult r, Map<DeviceClass, ClassEnergy> energy) {
    ExecutionResult.Inference inference = r.io().inference();
    if (inference.calls() == 0) {
      return List.of();
    }
    DeviceClass cls = inference.deviceClass();
    ClassEnergy c = energy.get(cls);
    if (c != null && inference.uj() > 0) {
      energy.put(
          cls,
          new ClassEnergy(
              Math.addExact(c.uj(), inference.uj()),
              c.provenance().worst(Provenance.ModelBased),
              c.source(),
              c.resolutionUj(),
              c.minWindowNs()));
    }
    return List.of(new Receipt.InferenceUse(cls, inference.uj(), inference.calls()));
  }
}
