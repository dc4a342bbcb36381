package io.sandboxd.daemon.run;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunIo;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.JournalEntry;
import io.sandboxd.executor.ReplaySource;
import io.sandboxd.executor.UnitIo;
import io.sandboxd.warmpool.Claim;
import io.sandboxd.warmpool.WarmPools;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Supervises one submission end to end: execute (or decline), build the receipt, attestation and
 * execute segment, sign them, and append them to the store before anyone is answered.
 */
public final class RunSupervisor {
  static final String TIER = RecordSealer.TIER;

  private final Admission admission;
  private final RunStore store;
  private final RecordSealer sealer;
  private final Launch launch;
  private final RunIds ids;
  private volatile RunPhases phases = RunPhases.NONE;

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
    this(
        admission,
        executor,
        store,
        node,
        storageBase,
        OfferedEnvironments.none(),
        DaemonConfig.Io.defaults());
  }

  /**
   * As above, on a node that offers {@code environments} for units to run in, holding a WASI
   * command's inputs and outputs to {@code ioCaps}.
   */
  public RunSupervisor(
      Admission admission,
      Executor executor,
      RunStore store,
      NodeIdentity node,
      Path storageBase,
      OfferedEnvironments environments,
      DaemonConfig.Io ioCaps) {
    this(
        admission.offering(environments, ioCaps),
        new Launch(executor, storageBase, environments),
        new RecordSealer(node),
        new RunIds(),
        store);
  }

  /**
   * A supervisor on the node's own run pipeline, which durable runs share: {@code admission}
   * (already offering the node's environments and io caps) checks, {@code launch} runs, {@code
   * sealer} signs, {@code ids} names runs, and {@code store} keeps what they leave (null only for
   * {@link RunPathPrimer}'s, which calls nothing but {@link #sealUnstored}).
   */
  public RunSupervisor(
      Admission admission, Launch launch, RecordSealer sealer, RunIds ids, RunStore store) {
    this.admission = admission;
    this.launch = launch;
    this.sealer = sealer;
    this.ids = ids;
    this.store = store;
  }

  /** Tells {@code p} how long each phase of every submitted run takes from now on. */
  public void onPhases(RunPhases p) {
    phases = Objects.requireNonNull(p, "phases");
  }

  /** Serves runs from {@code pools} (warm instances) from now on. */
  public void usePools(WarmPools pools) {
    launch.usePools(pools);
  }

  /** Admits, runs and records a unit; the returned record is on disk. */
  public RunRecord submit(byte[] module, String grantsJson, String entry) {
    return submit(module, grantsJson, entry, "", CommandInput.NONE);
  }

  /** As {@link #submit(byte[], String, String)}, in the environment {@code env} names. */
  public RunRecord submit(byte[] module, String grantsJson, String entry, String env) {
    return submit(module, grantsJson, entry, env, CommandInput.NONE);
  }

  /** The environments this node offers. */
  public OfferedEnvironments environments() {
    return admission.environments();
  }

  /**
   * Admits, runs and records a unit in the environment {@code env} names ({@code NAME} or {@code
   * b3:<address>}; empty for none, else one this node offers), giving a WASI command {@code input}
   * (argv and stdin, checked against the node's caps first); the returned record is on disk. No
   * node policy applies: this is the embedded entry, the socket's is the one with a caller.
   */
  public RunRecord submit(
      byte[] module, String grantsJson, String entry, String env, CommandInput input) {
    return submit(new Submission(module, grantsJson, entry, env, input, null, false, null));
  }

  /** Admits (no node policy: the embedded entry), runs and records {@code s}; on disk on return. */
  public RunRecord submit(Submission s) {
    return admitted(() -> admission.admit(s));
  }

  /**
   * As above for {@code caller}: the node policy admits it (and holds one of its run slots while it
   * runs), and its uid is recorded with the run.
   */
  public RunRecord submit(
      Caller caller,
      byte[] module,
      String grantsJson,
      String entry,
      String env,
      CommandInput input) {
    return submit(caller, new Submission(module, grantsJson, entry, env, input, null, false, null));
  }

  /**
   * Admits {@code caller}'s submission {@code s} (every check, in {@link Admission}), launches it
   * and records it: the returned record is on disk. A minted grant's {@code jcp} is named in the
   * run's attestation.
   */
  public RunRecord submit(Caller caller, Submission s) {
    return admitted(() -> admission.admit(caller, s));
  }

  /** Admits a submission through {@code admit}, then runs and records it, timing each phase. */
  private RunRecord admitted(Supplier<AdmittedRun> admit) {
    RunPhases timed = phases;
    long t0 = System.nanoTime();
    try (AdmittedRun run = admit.get()) {
      timed.timed(RunPhases.Phase.ADMIT, System.nanoTime() - t0);
      return run(run, timed);
    }
  }

  /**
   * Admits, launches and seals {@code s} as {@link #submit(Submission)} does, and stores nothing:
   * the start-up primer's run, whose record is dropped once built (see {@link RunPathPrimer}).
   */
  RunRecord sealUnstored(Submission s) {
    try (AdmittedRun run = admission.admit(s)) {
      return sealed(run, RunPhases.NONE);
    }
  }

  /** Declines, or launches, then seals and stores one admitted run, timing each phase. */
  private RunRecord run(AdmittedRun run, RunPhases timed) {
    RunRecord record = sealed(run, timed);
    long t0 = System.nanoTime();
    store.append(record);
    timed.timed(RunPhases.Phase.STORE, System.nanoTime() - t0);
    return record;
  }

  /** Declines, or launches, then seals one admitted run, timing its launch and seal. */
  private RunRecord sealed(AdmittedRun run, RunPhases timed) {
    Admission.Admitted a = run.admitted();
    String runId = ids.next();
    Optional<String> decline = admission.declineReason(a.grants());
    ExecutionResult result;
    Claim claim = Claim.cold();
    if (decline.isPresent()) {
      result = declined(a, decline.get());
    } else {
      long t0 = System.nanoTime();
      Launch.Result launched = launch.execute(runId, run);
      timed.timed(RunPhases.Phase.LAUNCH, System.nanoTime() - t0);
      result = launched.execution();
      claim = launched.claim();
    }
    long t0 = System.nanoTime();
    RunRecord record =
        seal(
            runId,
            a,
            result,
            claim,
            run.environment().map(OfferedEnvironments.Offer::address),
            run.io(),
            run.submitterUid(),
            run.jcp());
    timed.timed(RunPhases.Phase.SEAL, System.nanoTime() - t0);
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
      String runId,
      Admission.Admitted a,
      ExecutionResult r,
      Claim claim,
      Optional<String> manifest,
      UnitIo unitIo,
      java.util.OptionalLong submitterUid,
      Attestation.Jcp jcp) {
    String grantsId = a.grantsId();
    String unit = a.unit().address();
    long now = System.currentTimeMillis();
    RecordSealer.Step step =
        sealer.step(runId, 0, null, a, r, claim.idleUj(), io.sandboxd.executor.Consumed.NONE, now);
    Envelope attestationEnv =
        sealer.attestation(a, r, step.receipt().address(), manifest.orElse(null), unitIo, now, jcp);
    List<String> journal = r.journal().stream().map(JournalEntry::canonicalString).toList();
    return RunRecord.builder()
        .run(runId, r.startedMs())
        .unit(unit, grantsId)
        .outcomeJson(CanonicalJson.canonicalString(r.outcome().toJson()))
        .signed(step.receipt(), attestationEnv, step.segment())
        .journal(journal, r.journalBlobs())
        .log(r.log())
        .submission(a.module(), a.grantsCanonical(), a.entry())
        .claim(sealer.claim(claim))
        .io(
            r.stdio()
                .map(
                    io ->
                        new RunIo(
                            unitIo.argv(unit),
                            unitIo.stdin(),
                            io.stdout(),
                            io.stderr(),
                            r.exitStatus(),
                            r.exited()))
                .orElse(null))
        .submitter(submitterUid)
        .build();
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
    return replay(Optional.empty(), runId);
  }

  /**
   * As {@link #replay(String)} asked by {@code caller}: a replay runs the unit again, so the node
   * policy admits it as it would a submission (ceiling, environment, a place among the caller's
   * runs in flight); a caller cannot replay a run wider than it may submit.
   */
  public Optional<ReplayVerdict> replay(Caller caller, String runId) {
    return replay(Optional.of(caller), runId);
  }

  private Optional<ReplayVerdict> replay(Optional<Caller> caller, String runId) {
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
    // The same environment or none: its variables and mount targets are part of what the guest saw.
    Optional<OfferedEnvironments.Offer> offer = Optional.empty();
    if (recorded.manifest() != null) {
      offer = admission.environments().byAddress(recorded.manifest());
      if (offer.isEmpty()) {
        throw new ReplayRefusedException(
            "run "
                + runId
                + ": ran in environment b3:"
                + recorded.manifest()
                + ", which this node no longer offers; it can only be replayed in that"
                + " environment");
      }
    }
    Admission.Admitted a;
    try {
      a =
          caller.isPresent()
              ? admission.admit(caller.get(), s.module(), s.grantsJson(), s.entry(), offer)
              : admission.admit(s.module(), s.grantsJson(), s.entry());
    } catch (AdmissionException e) {
      // The node's policy changed since the run (e.g. a secret binding was removed).
      throw new ReplayRefusedException(
          "run " + runId + ": no longer admitted on this node: " + e.getMessage(), e);
    }
    try (SubmitterPolicy.Slot slot = a.slot()) {
      return Optional.of(replayAdmitted(runId, a, offer, s, recorded, recordedOutcome));
    }
  }

  private ReplayVerdict replayAdmitted(
      String runId,
      Admission.Admitted a,
      Optional<OfferedEnvironments.Offer> offer,
      RunStore.Submission s,
      Attestation recorded,
      String recordedOutcome) {
    List<JournalEntry> entries = s.journal().stream().map(JournalEntry::parse).toList();
    ReplaySource source = new ReplaySource(entries, s.blobs());
    ExecutionResult r = launch.replay(runId, a, offer, recordedIo(runId, recorded), source);
    Optional<String> divergence = r.replayDivergence().map(ReplaySource.Divergence::describe);
    if (divergence.isEmpty() && recorded.outputs() != null) {
      divergence = outputDivergence(recorded.outputs(), r);
    }
    if (divergence.isEmpty() && source.remaining() > 0) {
      divergence =
          Optional.of(
              "journal entry "
                  + (entries.size() - source.remaining())
                  + ": recorded "
                  + entries.get(entries.size() - source.remaining()).call()
                  + ", replay ended without asking for it");
    }
    return new ReplayVerdict(
        runId,
        recordedOutcome,
        CanonicalJson.canonicalString(r.outcome().toJson()),
        recorded.journalRoot(),
        r.journalRoot(),
        divergence);
  }

  /**
   * A recorded WASI command's inputs, from its signed attestation (the stored stdin is checked
   * against the address it names), with output caps that keep exactly what the run kept.
   */
  private UnitIo recordedIo(String runId, Attestation recorded) {
    if (recorded.inputs() == null) {
      return UnitIo.NONE;
    }
    Optional<byte[]> stdin = Optional.empty();
    Attestation.Blob in = recorded.inputs().stdin();
    if (in != null) {
      stdin =
          Optional.of(
              store
                  .ioBlob(runId, in.address())
                  .orElseThrow(
                      () ->
                          new ReplayRefusedException(
                              "run " + runId + ": its stdin " + in.address() + " is not stored")));
    }
    Attestation.Outputs out = recorded.outputs();
    int outCap = out == null ? UnitIo.DEFAULT_OUTPUT_BYTES : (int) out.stdout().bytes();
    int errCap = out == null ? UnitIo.DEFAULT_OUTPUT_BYTES : (int) out.stderr().bytes();
    return new UnitIo(recorded.inputs().args(), stdin, outCap, errCap);
  }

  /** Where a replay's stdout or stderr differs from the attested one, if it does. */
  private static Optional<String> outputDivergence(
      Attestation.Outputs recorded, ExecutionResult r) {
    if (r.stdio().isEmpty()) {
      return Optional.of("outputs: recorded stdout and stderr, the replay had no stdio");
    }
    ExecutionResult.Stdio io = r.stdio().get();
    Attestation.Blob out = Attestation.Blob.of(io.stdout().bytes());
    Attestation.Blob err = Attestation.Blob.of(io.stderr().bytes());
    if (!out.equals(recorded.stdout())) {
      return Optional.of(
          "stdout: recorded " + describe(recorded.stdout()) + ", replay wrote " + describe(out));
    }
    if (!err.equals(recorded.stderr())) {
      return Optional.of(
          "stderr: recorded " + describe(recorded.stderr()) + ", replay wrote " + describe(err));
    }
    return Optional.empty();
  }

  private static String describe(Attestation.Blob b) {
    return b.address() + " (" + b.bytes() + " bytes)";
  }

  /** The node's signing key, for records the daemon signs outside a run (intoto export). */
  public io.sandboxd.attest.SigningKey signingKey() {
    return sealer.node().key();
  }
}
