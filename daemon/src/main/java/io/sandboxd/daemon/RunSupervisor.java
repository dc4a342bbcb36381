package io.sandboxd.daemon;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.JournalEntry;
import io.sandboxd.executor.ReplaySource;
import io.sandboxd.executor.UnitRequest;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Supervises one submission end to end: execute (or decline), build the receipt, attestation and
 * execute segment, sign them, and append them to the store before anyone is answered.
 */
public final class RunSupervisor {
  static final String TIER = "S2";

  private final Admission admission;
  private final Executor executor;
  private final RunStore store;
  private final NodeIdentity node;
  private final Path storageBase;
  private final SecureRandom random = new SecureRandom();

  /** A supervisor whose unit storage lives next to the store, in {@code storage/}. */
  public RunSupervisor(Admission admission, Executor executor, RunStore store, NodeIdentity node) {
    this(
        admission,
        executor,
        store,
        node,
        store.file().toAbsolutePath().getParent().resolve("storage"));
  }

  /**
   * A supervisor whose units keep their files under {@code storageBase/<unit address>}: runs of the
   * same module share its storage, other modules never see it.
   */
  public RunSupervisor(
      Admission admission, Executor executor, RunStore store, NodeIdentity node, Path storageBase) {
    this.admission = admission;
    this.executor = executor;
    this.store = store;
    this.node = node;
    this.storageBase = storageBase;
  }

  /** Admits, runs and records a unit; the returned record is on disk. */
  public RunRecord submit(byte[] module, String grantsJson, String entry) {
    return run(admission.admit(module, grantsJson, entry), java.util.OptionalLong.empty());
  }

  /**
   * As {@link #submit(byte[], String, String)} for {@code caller}: the node policy admits it, and
   * its uid is recorded with the run.
   */
  public RunRecord submit(Caller caller, byte[] module, String grantsJson, String entry) {
    Admission.Admitted a = admission.admit(caller, module, grantsJson, entry);
    try (SubmitterPolicy.Slot slot = a.slot()) {
      return run(
          a,
          caller.known()
              ? java.util.OptionalLong.of(caller.uid())
              : java.util.OptionalLong.empty());
    }
  }

  private RunRecord run(Admission.Admitted a, java.util.OptionalLong submitterUid) {
    String runId = newRunId();
    Optional<String> decline = admission.declineReason(a.grants());
    ExecutionResult result;
    if (decline.isPresent()) {
      result = declined(a, decline.get());
    } else {
      result =
          executor.execute(
              new UnitRequest(runId, a.unit(), a.entry(), a.grants())
                  .withStorageRoot(storageBase.resolve(a.unit().address())));
    }
    RunRecord record = seal(runId, a, result, submitterUid);
    store.append(record);
    return record;
  }

  private ExecutionResult declined(Admission.Admitted a, String reason) {
    return ExecutionResult.declined(
        reason,
        Executor.dispatchableClasses(a.grants().compute()),
        a.grants().host().clock(),
        System.currentTimeMillis());
  }

  private RunRecord seal(
      String runId, Admission.Admitted a, ExecutionResult r, java.util.OptionalLong submitterUid) {
    String grantsId = a.grants().grantsId();
    String unit = a.unit().address();
    Map<DeviceClass, ClassEnergy> energy = new TreeMap<>(r.energy());
    List<Receipt.InferenceUse> inference = inferenceRows(r, energy);
    Receipt receipt =
        Receipt.builder()
            .runId(runId)
            .unit(unit)
            .grantsId(grantsId)
            .tier(TIER)
            .energy(energy)
            .inference(inference)
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
    Envelope receiptEnv = Envelope.sign(receipt.toCore(), node.key());
    long now = System.currentTimeMillis();
    Attestation attestation =
        Attestation.builder()
            .host(node.host())
            .tier(TIER)
            .grantsId(grantsId)
            .receipt(receiptEnv.address())
            .unit(unit)
            .journalRoot(r.journalRoot())
            .outcome(r.outcome())
            .clockGranted(r.clockGranted())
            .clockConstantMs(r.clockGranted() ? null : r.clockConstantMs())
            .issuedMs(now)
            .build();
    Envelope attestationEnv = Envelope.sign(attestation.toCore(), node.key());
    RunSegment segment =
        new RunSegment(
            runId,
            0,
            RunSegment.Kind.execute,
            null,
            node.host().id(),
            node.host().publicKey(),
            TIER,
            grantsId,
            receiptEnv.address(),
            null,
            0,
            Provenance.Estimator,
            now);
    Envelope segmentEnv = Envelope.sign(segment.toCore(), node.key());
    List<String> journal = r.journal().stream().map(JournalEntry::canonicalString).toList();
    return RunRecord.builder()
        .run(runId, r.startedMs())
        .unit(unit, grantsId)
        .outcomeJson(CanonicalJson.canonicalString(r.outcome().toJson()))
        .signed(receiptEnv, attestationEnv, segmentEnv)
        .journal(journal, r.journalBlobs())
        .log(r.log())
        .submission(
            a.module(), CanonicalJson.canonicalString(a.grants().canonicalTree()), a.entry())
        .submitter(submitterUid)
        .build();
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

  /** The verdict of re-executing a recorded run from its journal. */
  public record ReplayVerdict(
      String runId,
      String recordedOutcome,
      String replayedOutcome,
      String recordedRoot,
      String replayedRoot,
      Optional<String> divergence) {
    public boolean matches() {
      return divergence.isEmpty()
          && recordedOutcome.equals(replayedOutcome)
          && recordedRoot.equals(replayedRoot);
    }
  }

  /**
   * Re-executes a stored run feeding it its journaled inputs; it must reach the same outcome and
   * journal_root. Nothing is written: a replay observes, it does not act.
   */
  public Optional<ReplayVerdict> replay(String runId) {
    Optional<RunStore.Submission> sub = store.submission(runId);
    if (sub.isEmpty()) {
      return Optional.empty();
    }
    Optional<RunStore.Pruned> pruned = store.pruned(runId);
    if (pruned.isPresent()) {
      throw new ReplayRefusedException(
          "run "
              + runId
              + ": journal pruned by "
              + pruned.get().reason()
              + " at "
              + java.time.Instant.ofEpochMilli(pruned.get().prunedMs())
              + "; it cannot be replayed (its signed records are kept)");
    }
    RunStore.Submission s = sub.get();
    if (s.grantsJson().isEmpty()) {
      throw new ReplayRefusedException(
          "run " + runId + ": recorded without its grants; cannot replay");
    }
    Attestation recorded =
        Attestation.fromCore(store.records(runId, RecordKind.ATTESTATION).get(0).core());
    String recordedOutcome = CanonicalJson.canonicalString(recorded.outcome().toJson());
    if (recorded.outcome() instanceof Outcome.Declined) {
      return Optional.of(
          new ReplayVerdict(
              runId,
              recordedOutcome,
              recordedOutcome,
              recorded.journalRoot(),
              recorded.journalRoot(),
              Optional.empty()));
    }
    Admission.Admitted a;
    try {
      a = admission.admit(s.module(), s.grantsJson(), s.entry());
    } catch (AdmissionException e) {
      // The node's policy changed since the run (e.g. a secret binding was removed).
      throw new ReplayRefusedException(
          "run " + runId + ": no longer admitted on this node: " + e.getMessage(), e);
    }
    List<JournalEntry> entries = s.journal().stream().map(JournalEntry::parse).toList();
    ReplaySource source = new ReplaySource(entries, s.blobs());
    ExecutionResult r =
        executor.execute(
            new UnitRequest(runId, a.unit(), a.entry(), a.grants())
                .withStorageRoot(storageBase.resolve(a.unit().address()))
                .withReplay(source));
    Optional<String> divergence = r.replayDivergence().map(ReplaySource.Divergence::describe);
    if (divergence.isEmpty() && source.remaining() > 0) {
      divergence =
          Optional.of(
              "journal entry "
                  + (entries.size() - source.remaining())
                  + ": recorded "
                  + entries.get(entries.size() - source.remaining()).call()
                  + ", replay ended without asking for it");
    }
    return Optional.of(
        new ReplayVerdict(
            runId,
            recordedOutcome,
            CanonicalJson.canonicalString(r.outcome().toJson()),
            recorded.journalRoot(),
            r.journalRoot(),
            divergence));
  }

  /** Time-ordered, unguessable run ids: 12 hex digits of ms then 8 random hex digits. */
  private String newRunId() {
    byte[] b = new byte[4];
    random.nextBytes(b);
    return String.format("%012x", System.currentTimeMillis()) + HexFormat.of().formatHex(b);
  }
}
