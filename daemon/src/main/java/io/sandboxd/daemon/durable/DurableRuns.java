package io.sandboxd.daemon.durable;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.EvidenceBundle;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.SegmentChain;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.jcp.JcpRefusedException;
import io.sandboxd.daemon.run.Admission;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.AdmittedRun;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.run.CommandInput;
import io.sandboxd.daemon.run.Launch;
import io.sandboxd.daemon.run.OfferedEnvironments;
import io.sandboxd.daemon.run.PoolWiring;
import io.sandboxd.daemon.run.RecordSealer;
import io.sandboxd.daemon.run.RunIds;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.run.Submission;
import io.sandboxd.daemon.run.SubmitterPolicy;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.DurableRunTable.Change;
import io.sandboxd.daemon.store.DurableRunTable.Segment;
import io.sandboxd.daemon.store.DurableRunTable.State;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.enforcer.Attenuation;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.executor.Consumed;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.InstanceSnapshot;
import io.sandboxd.executor.ParkSignal;
import io.sandboxd.executor.SnapshotException;
import io.sandboxd.executor.SnapshotStore;
import io.sandboxd.warmpool.IdlePower;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Durable runs (issue 12, WIRE.md §2.6): a detached run executes on its own thread and can be
 * parked at a boundary, which appends a signed execute segment and a signed suspend segment with
 * the SnapshotRef of what was frozen (memory snapshot and storage tree in the node's content-
 * addressed {@link SnapshotStore}). A parked run is resumed here (every check of the issue, then a
 * signed resume segment repeating the SnapshotRef byte for byte with the idle energy of the park)
 * or exported as a {@link RunBundle} and imported on another node, which verifies everything before
 * it stores anything.
 */
public final class DurableRuns {
  private static final Logger LOG = Logger.getLogger(DurableRuns.class.getName());

  /**
   * The SnapshotRef {@code manifest} of a run in no declared environment: BLAKE3 of empty input
   * (WIRE.md makes the field mandatory; a resume must then be offered no environment too).
   */
  static final String NO_ENVIRONMENT = Blake3.hex(new byte[0]);

  private final Admission admission;
  private final Launch launch;
  private final RecordSealer sealer;
  private final RunIds ids;
  private final NodeIdentity node;
  private final DurableRunTable table;
  private final SnapshotStore snapshots;
  private final IdlePower idle;
  private final Path storage;
  private final Path staging;
  private final Map<String, ParkSignal> running = new ConcurrentHashMap<>();
  // Physical memory, over which the node's idle draw is apportioned to parked runs.
  private final long nodeMemoryBytes = PoolWiring.nodeMemoryBytes();
  // The run's applied amendments and minted grant (JCP, WIRE.md §2.11).
  private volatile AmendmentLedger amendments = AmendmentLedger.NONE;
  // Runs an amendment asked to park so that their segment ends where it takes effect, and runs a
  // client asked to park (which stay parked even when an amendment asked too).
  private final Set<String> splits = ConcurrentHashMap.newKeySet();
  private final Set<String> clientParks = ConcurrentHashMap.newKeySet();
  // Amendments waiting for their run's next park boundary, where they take effect.
  private final Map<String, PendingAmendment> pending = new ConcurrentHashMap<>();
  // The park signal a run's thread currently runs under (a resume by the node replaces it).
  private final ThreadLocal<ParkSignal> threadSignal = new ThreadLocal<>();

  /** How long an amendment waits for a boundary before it takes effect inside the segment. */
  public static final long AMEND_BOUNDARY_WAIT_MS = 5_000;

  /** An accepted amendment handed to its running run, and what to do once it is in force. */
  private record PendingAmendment(
      Grants grants, Runnable record, java.util.concurrent.CompletableFuture<Void> applied) {}

  private final Object changed = new Object();

  /**
   * Durable runs on the node's run pipeline, shared with submitted runs: {@code admission} checks a
   * start and a resume, {@code launch} runs each segment, {@code sealer} signs every record and
   * {@code ids} names runs. A run parked elsewhere is told apart by {@code node}'s host; rows go to
   * {@code store}, frozen instances to {@code snapshots}, a park is charged {@code idle}'s draw,
   * and runs keep their storage under {@code durableDir}.
   */
  public DurableRuns(
      Admission admission,
      Launch launch,
      RecordSealer sealer,
      RunIds ids,
      NodeIdentity node,
      RunStore store,
      SnapshotStore snapshots,
      IdlePower idle,
      Path durableDir) {
    this.admission = admission;
    this.launch = launch;
    this.sealer = sealer;
    this.ids = ids;
    this.node = node;
    this.table = store.durable();
    this.snapshots = snapshots;
    this.idle = idle;
    this.storage = durableDir.resolve("storage");
    this.staging = durableDir.resolve("import");
    List<String> interrupted =
        table.settleInterrupted(
            CanonicalJson.canonicalString(
                new Outcome.Failed("the daemon stopped while the run was running").toJson()));
    if (!interrupted.isEmpty()) {
      LOG.warning("durable runs left running by a stopped daemon, now failed: " + interrupted);
    }
    this.sweep = new SnapshotSweep(table, snapshots);
    sweep.recordUnrecorded();
    // Finishes a sweep a crash interrupted, and deletes what the runs failed just now held.
    sweep.sweep();
  }

  private final SnapshotSweep sweep;

  /** Deletes the snapshot blobs only ended or moved runs refer to (issue 23). */
  public void sweepSnapshots() {
    sweep.sweep();
  }

  public DurableRunTable table() {
    return table;
  }

  private volatile StoreRoom room = StoreRoom.UNLIMITED;

  /** Imports must fit the store's limit (issue 23 item 6). */
  public void limitStore(StoreRoom r) {
    this.room = r;
  }

  // ================================================================ start, park, wait

  /** Admits and starts a detached run; returns its id once its row is on disk. */
  public String start(Caller caller, byte[] module, String grantsJson, String entry, String env) {
    return start(
        caller,
        new Submission(module, grantsJson, entry, env, CommandInput.NONE, null, true, null));
  }

  /**
   * Admits {@code caller}'s detached submission {@code s} through the same admission as a waiting
   * one, records the durable run and launches its first segment; returns its id.
   */
  public String start(Caller caller, Submission s) {
    AdmittedRun admitted = admission.admit(caller, s);
    Admission.Admitted a = admitted.admitted();
    Optional<OfferedEnvironments.Offer> offer = admitted.environment();
    byte[] module = s.module();
    try {
      Optional<String> decline = admission.declineReason(a.grants());
      if (decline.isPresent()) {
        throw new AdmissionException("grants: declined on this node: " + decline.get(), null);
      }
      String runId = ids.next();
      long now = System.currentTimeMillis();
      String grantsCanon = a.grantsCanonical();
      table.insert(
          new DurableRunTable.Run(
              runId,
              State.running,
              now,
              now,
              a.unit().address(),
              grantsCanon,
              a.grantsId(),
              a.entry(),
              offer.map(OfferedEnvironments.Offer::address).orElse(""),
              "",
              false,
              false),
          module,
          List.of(),
          List.of());
      launch(
          runId,
          a,
          park -> step(runId, a, offer, 0, null, Optional.empty(), List.of(), Consumed.NONE, park));
      return runId;
    } catch (RuntimeException e) {
      a.slot().close();
      throw e;
    }
  }

  /**
   * Runs {@code segment} (the run's next execute segment, told its park signal) on a thread of its
   * own holding the admission's slot: a failure is stored as the run's outcome, and the run's
   * signals are dropped when the thread ends.
   */
  private void launch(String runId, Admission.Admitted a, Consumer<ParkSignal> segment) {
    ParkSignal park = new ParkSignal();
    running.put(runId, park);
    Thread t =
        new Thread(
            () -> {
              threadSignal.set(park);
              try (SubmitterPolicy.Slot slot = a.slot()) {
                segment.accept(park);
              } catch (RuntimeException | Error e) {
                LOG.log(Level.WARNING, "durable run " + runId + " failed", e);
                storeFailure(
                    runId,
                    CanonicalJson.canonicalString(
                        new Outcome.Failed("supervisor: " + e.getMessage()).toJson()));
                sweep.sweep();
              } finally {
                // Only this thread's own signal: a client may have resumed the run on a new one.
                boolean mine = running.remove(runId, threadSignal.get());
                PendingAmendment late = mine ? pending.remove(runId) : null;
                if (mine) {
                  splits.remove(runId);
                  clientParks.remove(runId);
                }
                if (late != null) {
                  late.applied()
                      .completeExceptionally(
                          new DurableRunException.Refused(
                              "run "
                                  + runId
                                  + " ended before reaching a boundary where the amendment could"
                                  + " take effect; nothing was amended"));
                }
                synchronized (changed) {
                  changed.notifyAll();
                }
              }
            },
            "durable-" + runId);
    t.start();
  }

  /** Runs that ended without the store taking their end (a full disk): why, by run. */
  private final Map<String, String> unstoredEnds = new ConcurrentHashMap<>();

  /** Longest wait between two tries to store a run's failure. */
  private static final long RETRY_MAX_MS = 5_000;

  /**
   * Stores run {@code runId} as failed with {@code outcomeJson}. A store that refuses it (a full
   * disk: most likely why the run failed) is tried again on this thread until it takes it, so the
   * run does not stay running in the store with nothing running it; meanwhile calls on the run are
   * answered with why its end is not stored ({@link #require}). A daemon that stops first leaves
   * the row running, and its next start settles it as failed.
   */
  private void storeFailure(String runId, String outcomeJson) {
    long delayMs = 100;
    while (true) {
      try {
        table.apply(
            new Change(runId, List.of(), List.of(), State.failed, outcomeJson, Optional.empty()));
        if (unstoredEnds.remove(runId) != null) {
          LOG.info("durable run " + runId + ": its failure is stored now");
        }
        return;
      } catch (RuntimeException e) {
        if (unstoredEnds.put(runId, String.valueOf(e.getMessage())) == null) {
          LOG.log(
              Level.SEVERE,
              "durable run " + runId + ": its failure is not stored; trying again until it is",
              e);
          synchronized (changed) {
            changed.notifyAll();
          }
        }
      }
      if (!runningInStore(runId)) {
        unstoredEnds.remove(runId);
        return;
      }
      try {
        Thread.sleep(delayMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      delayMs = Math.min(RETRY_MAX_MS, delayMs * 2);
    }
  }

  /** Whether the store still has {@code runId} running (or cannot say: it is failing). */
  private boolean runningInStore(String runId) {
    try {
      return table.run(runId).map(r -> r.state() == State.running).orElse(false);
    } catch (RuntimeException e) {
      return true;
    }
  }

  /** Why run {@code runId} is still running in the store although it ended: its end not stored. */
  private StoreException endNotStored(String runId, String why) {
    return new StoreException(
        "run "
            + runId
            + " ended, but the store has not taken its end ("
            + why
            + "); the node stores it as failed as soon as the store takes it");
  }

  /** One execute segment: run (or resume) until the entry ends or parks, then sign and store. */
  private void step(
      String runId,
      Admission.Admitted a,
      Optional<OfferedEnvironments.Offer> offer,
      long seq,
      String prev,
      Optional<InstanceSnapshot> resume,
      List<String> carriedTaint,
      Consumed before,
      ParkSignal park) {
    Path root = storage.resolve(runId);
    ExecutionResult ran =
        launch.segment(
            runId, a, offer, new Launch.Segment(root, park, carriedTaint, before, resume));
    // A park must fit store.max_bytes (issue 23): weighed before any of it is written.
    ParkWeight weight = weigh(runId, ran, root);
    ExecutionResult r = weight.result();
    // A segment is sealed under the grants it started with: an amendment accepted while it ran
    // (enforced from its next host call) takes effect in the records at the segment's end.
    Admission.Admitted held = a;
    String grantsId = held.grantsId();
    long now = System.currentTimeMillis();
    RecordSealer.Step sealed = sealer.step(runId, seq, prev, held, r, 0, before, now);
    Envelope receiptEnv = sealed.receipt();
    RunSegment.Budget budget = sealed.budget();
    Envelope execute = sealed.segment();
    if (r.parked().isPresent()) {
      // Blobs first (fsynced), then the segments that name them and the references to them, all
      // under the sweep's lock: no sweep deletes a blob this park found held and did not write.
      sweep.lock().lock();
      Envelope suspendEnv = null;
      SnapshotException unkept = null;
      java.util.SortedSet<String> taint = new java.util.TreeSet<>(carriedTaint);
      try {
        String memory = snapshots.put(r.parked().get());
        // Taint only grows: what earlier parks froze stays, or a second park would launder it.
        taint.addAll(r.taint());
        String fs = snapshots.putTree(weight.tree());
        RunSegment.SnapshotRef ref =
            new RunSegment.SnapshotRef(
                fs,
                memory,
                offer.map(OfferedEnvironments.Offer::address).orElse(NO_ENVIRONMENT),
                grantsId,
                List.copyOf(taint),
                r.journalRoot());
        suspendEnv =
            sealer.suspend(
                runId, seq + 1, execute.address(), grantsId, ref, budget, idle.provenance(), now);
        table.apply(
            new Change(
                runId,
                List.of(new Segment(execute, r.log()), new Segment(suspendEnv, "")),
                List.of(receiptEnv),
                State.parked,
                "",
                Optional.empty()),
            // Every blob the park refers to: pages unchanged since a resume are held already and
            // not in the snapshot's own blobs.
            snapshots.sizes(weight.references()));
      } catch (SnapshotException e) {
        unkept = e;
      } finally {
        sweep.lock().unlock();
      }
      // What only the run's earlier park held goes now (or what a park that failed wrote).
      sweep.sweep();
      if (unkept != null) {
        // The snapshot could not be written (a full disk, an I/O error): the run ends here as a
        // park that does not fit does, its failure signed, and not as a run with no last segment.
        LOG.log(Level.WARNING, "durable run " + runId + ": park not stored, run ended", unkept);
        ExecutionResult ended = StoreRoom.ended(r, parkFailure(runId, unkept));
        end(
            runId,
            held,
            offer,
            ended,
            sealer.step(runId, seq, prev, held, ended, 0, before, now),
            now);
        return;
      }
      LOG.info(() -> "durable run " + runId + " parked at seq " + (seq + 1));
      boolean split = splits.remove(runId);
      boolean client = clientParks.remove(runId);
      PendingAmendment p = pending.remove(runId);
      if (p != null) {
        // The amendment takes effect here: the segments just sealed ran under the wider grant.
        try {
          table.setGrants(
              runId,
              CanonicalJson.canonicalString(p.grants().canonicalTree()),
              p.grants().grantsId());
          p.record().run();
          p.applied().complete(null);
        } catch (RuntimeException e) {
          p.applied().completeExceptionally(e);
          throw e;
        }
      }
      if ((split || p != null) && !client) {
        continueAmended(runId, a, offer, suspendEnv, r.parked().get(), List.copyOf(taint));
      }
      return;
    }
    end(runId, held, offer, r, sealed, now);
  }

  /**
   * Stores the execute segment {@code sealed} that ends run {@code runId} with {@code r}'s outcome,
   * with its receipt and the run's attestation: signed under that segment's grants, naming the
   * minted grant and every amendment applied (a parked run has none).
   */
  private void end(
      String runId,
      Admission.Admitted held,
      Optional<OfferedEnvironments.Offer> offer,
      ExecutionResult r,
      RecordSealer.Step sealed,
      long nowMs) {
    Envelope attestation =
        sealer.attestation(
            held,
            r,
            sealed.receipt().address(),
            offer.map(OfferedEnvironments.Offer::address).orElse(null),
            io.sandboxd.executor.UnitIo.NONE,
            nowMs,
            amendments.jcpOf(runId));
    table.apply(
        new Change(
            runId,
            List.of(new Segment(sealed.segment(), r.log())),
            List.of(sealed.receipt(), attestation),
            stateOf(r.outcome()),
            CanonicalJson.canonicalString(r.outcome().toJson()),
            Optional.empty()));
    LOG.info(() -> "durable run " + runId + " -> " + r.outcome().summary());
    sweep.sweep();
  }

  /**
   * The signed reason of a run whose park could not be written: what failed, without the node's own
   * paths (a signed outcome travels with exports).
   */
  static String parkFailure(String runId, SnapshotException e) {
    String why;
    if (e.getCause() instanceof java.nio.file.FileSystemException f) {
      why = f.getReason() == null ? f.getClass().getSimpleName() : f.getReason();
    } else if (e.getCause() instanceof java.io.IOException io) {
      why = io.getMessage() == null ? io.getClass().getSimpleName() : io.getMessage();
    } else {
      why = e.getMessage(); // the store's own refusals name paths inside the tree only
    }
    return "parking run "
        + runId
        + ": its snapshot could not be stored ("
        + why
        + "); the run ended at this boundary and nothing of its snapshot is kept";
  }

  /** A run's result after its park was weighed, and what the park would store. */
  private record ParkWeight(
      ExecutionResult result, SnapshotStore.TreeContent tree, Map<String, byte[]> blobs) {
    /** Every blob address the park refers to: the snapshot's (held or new) and the tree's. */
    Set<String> references() {
      Set<String> all = new LinkedHashSet<>(result.parked().orElseThrow().addresses());
      all.addAll(tree.blobs().keySet());
      return all;
    }
  }

  /**
   * Weighs the park of {@code ran} (its memory snapshot and storage tree) against the store's
   * limit. A park that does not fit ends the run failed, its signed outcome naming store.max_bytes
   * and the sizes: the frozen instance can neither be held here nor go on without a gap in its
   * signed records (what it consumed up to the boundary is in this segment's receipt). So does a
   * storage tree the snapshot store refuses (past its limits) or cannot read, naming why.
   */
  private ParkWeight weigh(String runId, ExecutionResult ran, Path root) {
    if (ran.parked().isEmpty()) {
      return new ParkWeight(ran, null, Map.of());
    }
    SnapshotStore.TreeContent tree;
    try {
      tree = snapshots.treeContent(root);
    } catch (SnapshotException e) {
      // A tree the store refuses (a unit's storage past the tree limits) or cannot read.
      LOG.warning("durable run " + runId + ": park refused, run ended: " + e.getMessage());
      return new ParkWeight(StoreRoom.ended(ran, parkFailure(runId, e)), null, Map.of());
    }
    Map<String, byte[]> blobs = new LinkedHashMap<>(ran.parked().get().blobs());
    blobs.putAll(tree.blobs());
    Optional<String> refused = room.parkRefusal(runId, snapshots.freshBytes(blobs));
    if (refused.isEmpty()) {
      return new ParkWeight(ran, tree, blobs);
    }
    LOG.warning("durable run " + runId + ": park refused, run ended: " + refused.get());
    return new ParkWeight(StoreRoom.ended(ran, refused.get()), null, Map.of());
  }

  /**
   * The idle energy a park is charged on this node: the node's idle draw (mW) times the time parked
   * here (ms), times the share of the node's memory the parked instance holds (its linear memory's
   * pages over physical memory), so that parks held at once do not each claim the node's whole
   * draw. An imported run is charged from when it arrived here, never for time spent elsewhere.
   */
  long parkIdleUj(
      DurableRunTable.Run run, RunSegment suspend, InstanceSnapshot snapshot, long nowMs) {
    long from = run.imported() ? Math.max(suspend.atMs(), run.updatedMs()) : suspend.atMs();
    long parkedMs = Math.max(0, nowMs - from);
    long heldBytes = (long) snapshot.memoryPages().orElse(0) * 65_536L;
    return apportionedIdleUj(idle.milliwatts(), parkedMs, heldBytes, nodeMemoryBytes);
  }

  /** {@code mw × ms × held / node}, in µJ, exact and without overflow for any real park. */
  static long apportionedIdleUj(long mw, long ms, long heldBytes, long nodeBytes) {
    if (mw <= 0 || ms <= 0 || heldBytes <= 0 || nodeBytes <= 0) {
      return 0;
    }
    return java.math.BigInteger.valueOf(mw)
        .multiply(java.math.BigInteger.valueOf(ms))
        .multiply(java.math.BigInteger.valueOf(Math.min(heldBytes, nodeBytes)))
        .divide(java.math.BigInteger.valueOf(nodeBytes))
        .min(java.math.BigInteger.valueOf(Long.MAX_VALUE))
        .longValueExact();
  }

  /**
   * What the run's signed receipts say it consumed so far: CPU ms (compile included) and energy
   * (idle energy of parks and claims never counts against the budget, WIRE.md Q7).
   */
  static Consumed consumed(List<Envelope> records) {
    Consumed c = Consumed.NONE;
    for (Envelope e : records) {
      if (e.schema().filter(Receipt.SCHEMA::equals).isPresent()) {
        Receipt r = Receipt.fromCore(e.core());
        c = c.plus(r.cpuTimeMs(), r.totalUj());
      }
    }
    return c;
  }

  static State stateOf(Outcome o) {
    if (o instanceof Outcome.Completed) {
      return State.completed;
    }
    if (o instanceof Outcome.Terminated) {
      return State.terminated;
    }
    return State.failed;
  }

  /**
   * Asks a running run to park and waits (up to {@code timeoutMs}) until it has: its suspend
   * segment is then on disk.
   */
  public DurableRunTable.Run suspend(String runId, long timeoutMs) {
    requestPark(runId);
    DurableRunTable.Run after = await(runId, timeoutMs);
    if (after.state() == State.running) {
      String why = unstoredEnds.get(runId);
      throw why == null ? noBoundary(runId, timeoutMs) : endNotStored(runId, why);
    }
    return after;
  }

  /**
   * Asks a running run to park at its next boundary and returns at once (SuspendRun waits for the
   * park without a thread, in RunWaiters); refused when the run is not running.
   */
  public void requestPark(String runId) {
    DurableRunTable.Run r = require(runId);
    ParkSignal park = running.get(runId);
    if (park == null || r.state() != State.running) {
      throw new DurableRunException.Refused(
          "run " + runId + " is " + r.state() + ", not running: there is nothing to park");
    }
    clientParks.add(runId);
    park.request();
  }

  /** Why a suspend of {@code runId} ended without a park after {@code timeoutMs}. */
  public static DurableRunException.Refused noBoundary(String runId, long timeoutMs) {
    return new DurableRunException.Refused(
        "run "
            + runId
            + " reached no park boundary within "
            + timeoutMs
            + " ms (its guest must return from yield_point or between step calls); it keeps"
            + " running and parks at its next boundary");
  }

  /** Lets a resume accept grants an applied amendment put in force after the suspend. */
  public void acceptAmendments(AmendmentLedger amendments) {
    this.amendments = amendments;
  }

  /**
   * Stores {@code resumeEnv} and marks the run running, taking {@code suspendEnv}'s resumed-once
   * guard; false (nothing changed) when a resume of that suspend was stored before.
   */
  private boolean applyResume(String runId, Envelope resumeEnv, Envelope suspendEnv) {
    return table.apply(
        new Change(
            runId,
            List.of(new Segment(resumeEnv, "")),
            List.of(),
            State.running,
            "",
            Optional.of(suspendEnv.address())));
  }

  /**
   * Resumes, on the run's own thread, a run an amendment parked: a resume segment under the amended
   * grants (nothing was parked for long: no idle energy), then the next execute segment.
   */
  private void continueAmended(
      String runId,
      Admission.Admitted a,
      Optional<OfferedEnvironments.Offer> offer,
      Envelope suspendEnv,
      InstanceSnapshot snapshot,
      List<String> taint) {
    // Registered before the grants are read: an amendment arriving now tightens this signal.
    ParkSignal next = new ParkSignal();
    running.put(runId, next);
    threadSignal.set(next);
    DurableRunTable.Run run = require(runId);
    Grants amended = Grants.parse(run.grantsJson().getBytes(StandardCharsets.UTF_8));
    RunSegment suspend = RunSegment.fromCore(suspendEnv.core());
    Consumed before = consumed(table.records(runId));
    Envelope resumeEnv =
        sealer.resume(
            suspendEnv,
            suspend,
            amended.grantsId(),
            RecordSealer.budget(amended, before),
            0,
            idle.provenance(),
            System.currentTimeMillis());
    if (!applyResume(runId, resumeEnv, suspendEnv)) {
      return;
    }
    LOG.info(
        () -> "durable run " + runId + " continues under amended grants " + amended.grantsId());
    step(
        runId,
        a.withGrants(amended),
        offer,
        suspend.seq() + 2,
        resumeEnv.address(),
        Optional.of(snapshot),
        taint,
        before,
        next);
  }

  // Serializes the last step of imports: a run's carried JCP rows and its row go in together.
  private final Object importing = new Object();

  // Seals exports and decides which bundles are imported (issue 23).
  private volatile BundleTrust trust = BundleTrust.NONE;

  /** Seals exports with this node's key and imports only what {@code trust} accepts. */
  public void trustBundles(BundleTrust trust) {
    this.trust = trust;
  }

  /** The run's row. */
  public DurableRunTable.Run run(String runId) {
    return require(runId);
  }

  /** The run's JCP records (policy and child, checkpoints, amendments), as it would export them. */
  public List<Envelope> jcpRecords(String runId) {
    return amendments.records(runId);
  }

  /** The run's segment chain, in order. */
  public List<Envelope> chain(String runId) {
    return table.segments(runId).stream().map(Segment::envelope).toList();
  }

  /**
   * Holds the run to {@code newGrants} from now on (an accepted amendment): stored as the grants in
   * force, then swapped into the live run's Enforcer, between two of its host calls.
   */
  public synchronized void amend(String runId, Grants newGrants) {
    DurableRunTable.Run r = require(runId);
    if (r.state() != State.running && r.state() != State.parked) {
      throw new DurableRunException.Refused(
          "run " + runId + " is " + r.state() + ": only a running or parked run is amended");
    }
    Grants inForce = Grants.parse(r.grantsJson().getBytes(StandardCharsets.UTF_8));
    if (Attenuation.check(newGrants, inForce) instanceof Attenuation.Wider w) {
      throw new JcpRefusedException(
          "tighten_only", "wider than the grants in force at " + w.path() + ": " + w.reason());
    }
    table.setGrants(
        runId, CanonicalJson.canonicalString(newGrants.canonicalTree()), newGrants.grantsId());
    ParkSignal park = running.get(runId);
    if (park != null) {
      park.tighten(newGrants);
      // The segment running now ends at its next boundary, so the records name the grants each
      // part ran under (WIRE.md §2.11).
      splits.add(runId);
      park.request();
    }
  }

  /**
   * Puts an accepted amendment in force where the run's current segment ends: a parked run at once
   * (its resume names the new grants); a running one is asked to park, and at that boundary the new
   * grants are stored, {@code record} runs, and the run resumes under them on its own thread. A run
   * that reaches no boundary within {@code waitMs} is held to the new grants from its next host
   * call (inside the segment, which stays sealed under the grants it started with) and still parks
   * and resumes at its next boundary. A run that ends first is not amended.
   */
  public void amendAtBoundary(String runId, Grants newGrants, Runnable record, long waitMs) {
    DurableRunTable.Run r = require(runId);
    ParkSignal park = running.get(runId);
    if (r.state() != State.running || park == null) {
      amend(runId, newGrants);
      record.run();
      return;
    }
    if (Attenuation.check(newGrants, Grants.parse(r.grantsJson().getBytes(StandardCharsets.UTF_8)))
        instanceof Attenuation.Wider w) {
      throw new JcpRefusedException(
          "tighten_only", "wider than the grants in force at " + w.path() + ": " + w.reason());
    }
    PendingAmendment p =
        new PendingAmendment(newGrants, record, new java.util.concurrent.CompletableFuture<>());
    if (pending.putIfAbsent(runId, p) != null) {
      throw new DurableRunException.Refused(
          "run " + runId + ": another amendment is waiting for its boundary; retry");
    }
    park.request();
    try {
      p.applied().get(waitMs, TimeUnit.MILLISECONDS);
      return;
    } catch (java.util.concurrent.TimeoutException e) {
      if (pending.remove(runId, p)) {
        amend(runId, newGrants);
        record.run();
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DurableRunException.Refused("interrupted while amending run " + runId, e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw unwrap(e);
    }
    // The run took the amendment at its boundary (or ended) just as the wait ran out.
    try {
      p.applied().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DurableRunException.Refused("interrupted while amending run " + runId, e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw unwrap(e);
    }
  }

  private static RuntimeException unwrap(java.util.concurrent.ExecutionException e) {
    return e.getCause() instanceof RuntimeException re
        ? re
        : new IllegalStateException(e.getCause());
  }

  /** Parks every running run (a stopping daemon, {@code durable.park_on_stop}). */
  public int parkAll(long timeoutMs) {
    List<String> ids = new ArrayList<>(running.keySet());
    clientParks.addAll(ids);
    ids.forEach(id -> Optional.ofNullable(running.get(id)).ifPresent(ParkSignal::request));
    long deadline = deadlineAfter(timeoutMs);
    int parked = 0;
    for (String id : ids) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      DurableRunTable.Run r = await(id, Math.max(0, left));
      if (r.state() == State.parked) {
        parked++;
      }
    }
    return parked;
  }

  /**
   * {@code timeoutMs} from now on the clock that never steps (nanoTime, compared by difference): on
   * the wall clock, a clock stepped back held the caller that much longer. Saturated at 2^40 ms.
   */
  private static long deadlineAfter(long timeoutMs) {
    return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.min(timeoutMs, 1L << 40));
  }

  /** Waits until the run is no longer running, or {@code timeoutMs} passed; returns its row. */
  DurableRunTable.Run await(String runId, long timeoutMs) {
    long deadline = deadlineAfter(timeoutMs);
    synchronized (changed) {
      while (true) {
        DurableRunTable.Run r = table.run(runId).orElseThrow(() -> new RunNotFoundException(runId));
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (r.state() != State.running || left <= 0 || unstoredEnds.containsKey(runId)) {
          return r;
        }
        try {
          changed.wait(Math.min(left, 200));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return r;
        }
      }
    }
  }

  /**
   * Run {@code runId} as stored; a run that ended but whose end the store has not taken yet is
   * answered with why (UNAVAILABLE), not as running.
   */
  public DurableRunTable.Run require(String runId) {
    DurableRunTable.Run r = table.run(runId).orElseThrow(() -> new RunNotFoundException(runId));
    String why = unstoredEnds.get(runId);
    if (why != null && r.state() == State.running) {
      throw endNotStored(runId, why);
    }
    return r;
  }

  /** The unit's log across all its segments, in seq order. */
  public String log(String runId) {
    require(runId);
    StringBuilder sb = new StringBuilder();
    table.segments(runId).forEach(s -> sb.append(s.log()));
    return sb.toString();
  }

  // ================================================================ resume

  /**
   * Resumes a parked run in the environment {@code env} names ({@code ""}: none) with the grants in
   * force (or {@code offeredGrants}, which must not differ from them): every check of the issue,
   * then a signed resume segment, then the run continues on its own thread.
   */
  public Envelope resume(Caller caller, String runId, String env, String offeredGrants) {
    DurableRunTable.Run run = require(runId);
    if (run.exported()) {
      throw new DurableRunException.Refused(
          "run " + runId + " was exported to another node; it can only be resumed there");
    }
    if (run.state() == State.exporting) {
      throw new DurableRunException.Refused(
          "run "
              + runId
              + " is exporting: its bundle is not confirmed written; confirm the export, or take"
              + " it back with `sandboxctl runs reclaim "
              + runId
              + "` to resume it here");
    }
    if (run.state() != State.parked) {
      throw new DurableRunException.Refused(
          "run " + runId + " is " + run.state() + ", not parked: there is nothing to resume");
    }
    List<Segment> segs = table.segments(runId);
    List<Envelope> chain = segs.stream().map(Segment::envelope).toList();
    List<Envelope> records = table.records(runId);
    verifyChain(chain, records, DurableRunException.Refused::new);
    Envelope suspendEnv = chain.get(chain.size() - 1);
    RunSegment suspend = RunSegment.fromCore(suspendEnv.core());
    if (suspend.kind() != RunSegment.Kind.suspend) {
      throw new DurableRunException.Refused(
          "run " + runId + ": its last segment is " + suspend.kind() + ", not a suspend");
    }
    if (table.resumed(suspendEnv.address())) {
      throw new DurableRunException.Refused(
          "run "
              + runId
              + ": suspend "
              + suspendEnv.address()
              + " (seq "
              + suspend.seq()
              + ") was resumed already; a suspend is resumed at most once");
    }
    RunSegment.SnapshotRef ref = suspend.snapshot();
    // The environment offered must be the one frozen.
    Optional<OfferedEnvironments.Offer> offer = admission.offer(env);
    String offered = offer.map(OfferedEnvironments.Offer::address).orElse(NO_ENVIRONMENT);
    if (!offered.equals(ref.manifest())) {
      throw new DurableRunException.Refused(
          "environment: the offered manifest "
              + describeManifest(offered)
              + " differs from the suspended run's "
              + describeManifest(ref.manifest())
              + "; a run resumes only into the environment it was parked in");
    }
    // A run parked on another host resumes here only in a pinned environment: an unpinned image
    // (a tag, no digest) is no basis for a "same environment" claim across hosts (WIRE.md §2.7).
    if (offer.isPresent()
        && !suspend.hostId().equals(node.host().id())
        && !offer.get().manifest().pinned()) {
      throw new DurableRunException.Refused(
          "environment: "
              + describeManifest(offered)
              + " is not pinned by digest; a run parked on host "
              + suspend.hostId()
              + " resumes on another host only in a pinned environment");
    }
    // The grants: those in force, hashing to the snapshot's grants_id; an offered grant may not
    // be wider (and a tighter one needs an amendment, WIRE.md §2.11).
    Grants inForce = Grants.parse(run.grantsJson().getBytes(StandardCharsets.UTF_8));
    if (!inForce.grantsId().equals(ref.grantsId())
        && !amendments.amendedTo(runId, inForce.grantsId())) {
      throw new DurableRunException.Refused(
          "grants: the stored grants hash to "
              + inForce.grantsId()
              + ", the snapshot froze grants_id "
              + ref.grantsId());
    }
    if (!offeredGrants.isEmpty()) {
      Grants offeredG;
      try {
        offeredG = Grants.parse(offeredGrants.getBytes(StandardCharsets.UTF_8));
      } catch (RuntimeException e) {
        throw new AdmissionException("grants_json: " + e.getMessage(), e);
      }
      if (!offeredG.grantsId().equals(inForce.grantsId())) {
        Attenuation.Verdict v = Attenuation.check(offeredG, inForce);
        if (v instanceof Attenuation.Wider w) {
          throw new DurableRunException.Refused(
              "grants: the offered grant is wider than the one in force at "
                  + w.path()
                  + ": "
                  + w.reason());
        }
        throw new DurableRunException.Refused(
            "grants: the offered grant is tighter than the one in force; a run's grant is"
                + " tightened only through an amendment (WIRE.md 2.11), not on resume");
      }
    }
    // The module: the same address the receipts name and the snapshot was taken of.
    byte[] module = table.module(runId);
    String unit = Blake3.hex(module);
    if (!unit.equals(run.unit())) {
      throw new DurableRunException.Refused(
          "module: stored bytes hash to " + unit + ", the run's unit is " + run.unit());
    }
    InstanceSnapshot snapshot;
    try {
      snapshot = snapshots.load(ref.memory());
      snapshots.blobs(ref.fs());
    } catch (SnapshotException e) {
      throw new DurableRunException.Refused("snapshot: " + e.getMessage(), e);
    }
    if (!snapshot.module().equals(unit)) {
      throw new DurableRunException.Refused(
          "module: the snapshot is of module " + snapshot.module() + ", the run's is " + unit);
    }
    // A run under a minted child resumes only while the child holds (not released, unexpired).
    amendments.checkResume(runId);
    Admission.Admitted a = admission.admit(caller, module, run.grantsJson(), run.entry(), offer);
    try {
      long now = System.currentTimeMillis();
      long idleUj = parkIdleUj(run, suspend, snapshot, now);
      // The grants in force: the frozen ones, or an amendment's applied while parked.
      Consumed before = consumed(records);
      RunSegment.Budget budget = RecordSealer.budget(a.grants(), before);
      Envelope resumeEnv =
          sealer.resume(suspendEnv, suspend, a.grantsId(), budget, idleUj, idle.provenance(), now);
      Path root = storage.resolve(runId);
      deleteTree(root);
      try {
        snapshots.restoreTree(ref.fs(), root);
      } catch (SnapshotException e) {
        throw new DurableRunException.Refused("snapshot: " + e.getMessage(), e);
      }
      if (!applyResume(runId, resumeEnv, suspendEnv)) {
        throw new DurableRunException.Refused(
            "run " + runId + ": suspend " + suspendEnv.address() + " was resumed already");
      }
      launch(
          runId,
          a,
          park ->
              step(
                  runId,
                  a,
                  offer,
                  suspend.seq() + 2,
                  resumeEnv.address(),
                  Optional.of(snapshot),
                  ref.taint(),
                  before,
                  park));
      LOG.info(() -> "durable run " + runId + " resumed (idle " + idleUj + " uJ)");
      return resumeEnv;
    } catch (RuntimeException e) {
      if (!running.containsKey(runId)) {
        a.slot().close();
      }
      throw e;
    }
  }

  private static String describeManifest(String address) {
    return address.equals(NO_ENVIRONMENT) ? "(no environment)" : "b3:" + address;
  }

  /** Checks the chain in order and every record against it, under the keys that signed it. */
  private static void verifyChain(
      List<Envelope> chain,
      List<Envelope> records,
      java.util.function.Function<String, ? extends DurableRunException> fail) {
    if (chain.isEmpty()) {
      throw fail.apply("the run has no segments");
    }
    if (SegmentChain.verify(chain, Optional.empty()) instanceof SegmentChain.Verdict.Invalid inv) {
      throw fail.apply("segment chain: invalid at position " + inv.seq() + ": " + inv.reason());
    }
    Set<PublicKey> signers = new LinkedHashSet<>();
    chain.forEach(e -> signers.add(PublicKey.ofHex(e.publicKey(), "public_key")));
    EvidenceBundle.Verdict v = EvidenceBundle.verify(RunBundle.all(chain, records), signers);
    if (v instanceof EvidenceBundle.Verdict.Invalid inv) {
      throw fail.apply("records: invalid at " + inv.where() + ": " + inv.reason());
    }
  }

  // ================================================================ export, import

  /**
   * The bundle of a parked run; the run is then held exporting (not resumable here) until {@link
   * ExportHandoff} confirms the bundle written (moved) or takes it back (parked).
   */
  public byte[] export(String runId) {
    return export(runId, "");
  }

  /** As above, the bundle sealed for the node whose key is {@code destination} ("" for any). */
  public byte[] export(String runId, String destination) {
    DurableRunTable.Run run = require(runId);
    if (run.state() != State.parked || run.exported()) {
      throw new DurableRunException.Refused(
          "run "
              + runId
              + " is "
              + run.state()
              + (run.exported() ? " (exported already)" : "")
              + "; only a parked run can be exported");
    }
    List<Segment> segs = table.segments(runId);
    List<Envelope> chain = segs.stream().map(Segment::envelope).toList();
    List<Envelope> records = table.records(runId);
    verifyChain(chain, records, DurableRunException.Refused::new);
    RunSegment.SnapshotRef ref = RunSegment.fromCore(chain.get(chain.size() - 1).core()).snapshot();
    Map<String, byte[]> blobs = new LinkedHashMap<>();
    try {
      blobs.putAll(snapshots.blobs(ref.memory()));
      blobs.putAll(snapshots.blobs(ref.fs()));
    } catch (SnapshotException e) {
      throw new DurableRunException.Refused("snapshot: " + e.getMessage(), e);
    }
    byte[] bundle =
        trust
            .seal(
                new RunBundle(
                    runId,
                    table.module(runId),
                    run.grantsJson(),
                    run.entry(),
                    chain,
                    segs.stream().map(Segment::log).toList(),
                    records,
                    blobs,
                    // Amendments, and the mint and checkpoints they rest on, travel with the chain.
                    amendments.records(runId),
                    // Unsealed: the trust seals it for the destination.
                    Optional.empty()),
                destination)
            .toBytes();
    // Not moved yet: held exporting until the bundle is confirmed written (ExportHandoff).
    // The digest a confirm must name is recorded with the state: it survives a restart.
    if (!table
        .handoffs()
        .begin(
            runId,
            new io.sandboxd.daemon.store.ExportHandoffTable.Handoff(
                Blake3.hex(bundle),
                bundle.length,
                destination,
                System.currentTimeMillis(),
                Optional.empty()))) {
      throw new DurableRunException.Refused("run " + runId + " changed while being exported");
    }
    LOG.info(() -> "durable run " + runId + " exporting (" + bundle.length + " bytes)");
    return bundle;
  }

  /** Verifies a bundle completely, then stores the run parked; nothing is stored on a refusal. */
  public DurableRunTable.Run importBundle(byte[] bytes) {
    RunBundle b = RunBundle.parse(bytes);
    if (table.holds(b.runId())) {
      throw new DurableRunException.AlreadyHeld(b.runId());
    }
    if (b.logs().size() != b.segments().size()) {
      throw new DurableRunException.BadBundle(
          b.logs().size() + " logs for " + b.segments().size() + " segments");
    }
    verifyChain(b.segments(), b.records(), DurableRunException.BadBundle::new);
    List<RunSegment> segs = b.segments().stream().map(e -> RunSegment.fromCore(e.core())).toList();
    RunSegment last = segs.get(segs.size() - 1);
    if (!last.runId().equals(b.runId())) {
      throw new DurableRunException.BadBundle(
          "run_id " + b.runId() + " differs from its segments' " + last.runId());
    }
    if (last.kind() != RunSegment.Kind.suspend) {
      throw new DurableRunException.BadBundle(
          "its last segment is " + last.kind() + ": only a parked run can move");
    }
    String unit = Blake3.hex(b.module());
    List<Receipt> receipts = new ArrayList<>();
    for (Envelope e : b.records()) {
      if (e.schema().orElse("").equals(Receipt.SCHEMA)) {
        receipts.add(Receipt.fromCore(e.core()));
      }
    }
    if (receipts.isEmpty()) {
      throw new DurableRunException.BadBundle("it carries no receipts");
    }
    for (Receipt r : receipts) {
      if (!r.unit().equals(unit)) {
        throw new DurableRunException.BadBundle(
            "module: its bytes hash to " + unit + ", the run's receipts name unit " + r.unit());
      }
    }
    Grants grants;
    try {
      grants = Grants.parse(b.grantsJson().getBytes(StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      throw new DurableRunException.BadBundle("grants: " + e.getMessage(), e);
    }
    if (!last.grantsId().equals(last.snapshot().grantsId())) {
      throw new DurableRunException.BadBundle(
          "grants: the suspend is for "
              + last.grantsId()
              + ", its snapshot froze "
              + last.snapshot().grantsId());
    }
    // The grants in force are the chain's, or those its carried amendments put in force.
    BundleJcp.Checked jcp;
    if (b.jcp().isEmpty()) {
      if (!grants.grantsId().equals(last.grantsId())) {
        throw new DurableRunException.BadBundle(
            "jcp: none carried, yet the bundle's grants hash to "
                + grants.grantsId()
                + " and its chain is for "
                + last.grantsId()
                + " (only a carried amendment puts other grants in force)");
      }
      jcp = new BundleJcp.Checked(List.of(), List.of(), List.of());
    } else {
      jcp = BundleJcp.check(b.runId(), b.segments(), b.jcp(), grants);
    }
    for (Map.Entry<String, byte[]> e : b.blobs().entrySet()) {
      String actual = Blake3.hex(e.getValue());
      if (!actual.equals(e.getKey())) {
        throw new DurableRunException.BadBundle(
            "blob " + e.getKey() + ": its bytes hash to " + actual);
      }
    }
    // Completeness and shape, in a staging store: the node's own store is not touched yet.
    Path stage = staging.resolve("bundle-" + System.nanoTime());
    SnapshotStore staged = null;
    try {
      staged = SnapshotStore.open(stage);
      staged.putBlobs(b.blobs());
      InstanceSnapshot snap = staged.load(last.snapshot().memory());
      staged.blobs(last.snapshot().fs());
      if (!snap.module().equals(unit)) {
        throw new DurableRunException.BadBundle(
            "module: the snapshot is of module " + snap.module() + ", the bundle's is " + unit);
      }
    } catch (SnapshotException e) {
      throw new DurableRunException.BadBundle("snapshot: " + e.getMessage(), e);
    } finally {
      if (staged != null) {
        staged.close();
      }
      deleteTree(stage);
    }
    // Signed by whom, for whom, and every field as sealed (BundleTrust): after the checks above,
    // so damage is named as such, before anything reaches the node's own store.
    trust.check(b);
    sweep.lock().lock();
    try {
      room.admitImport(b.runId(), b.module(), b.blobs(), snapshots);
      snapshots.putBlobs(b.blobs());
      List<Segment> rows = new ArrayList<>();
      for (int i = 0; i < b.segments().size(); i++) {
        rows.add(new Segment(b.segments().get(i), b.logs().get(i)));
      }
      long now = System.currentTimeMillis();
      DurableRunTable.Run run =
          new DurableRunTable.Run(
              b.runId(),
              State.parked,
              segs.get(0).atMs(),
              now,
              unit,
              b.grantsJson(),
              grants.grantsId(),
              b.entry(),
              "",
              "",
              false,
              true);
      synchronized (importing) {
        if (table.holds(b.runId())) {
          throw new DurableRunException.AlreadyHeld(b.runId());
        }
        // JCP records first: a crash between leaves rows the next import of the run replaces,
        // never a run held without the amendments its grants rest on.
        amendments.carry(b.runId(), jcp);
        if (!table.insert(run, b.module(), rows, b.records(), SnapshotSweep.sizes(b.blobs()))) {
          throw new DurableRunException.AlreadyHeld(b.runId());
        }
      }
      LOG.info(() -> "durable run " + b.runId() + " imported (" + rows.size() + " segments)");
      return run;
    } finally {
      sweep.lock().unlock();
    }
  }

  private static void deleteTree(Path root) {
    try {
      io.sandboxd.executor.EnvironmentMounts.removeTree(root);
    } catch (IOException e) {
      throw new DurableRunException.Refused("cannot clear " + root + ": " + e.getMessage(), e);
    }
  }
}
