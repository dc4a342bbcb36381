package io.sandboxd.daemon.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Checks the whole run store in the background, on its own read-only connection (a snapshot that
 * never holds up appends): once after start-up, and again on demand. A clean pass seals a
 * checkpoint at what it covered; between passes it seals the runs appended since the last
 * checkpoint once there are {@link #SEAL_EVERY} of them, so the next start-up has little to check
 * whatever the store holds. Damage is logged, remembered (the runs are listed as tampered) and
 * reported through {@link #state()}.
 */
public final class StoreVerifier implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(StoreVerifier.class.getName());

  /** Unverified runs that make the verifier check and seal them. */
  static final long SEAL_EVERY = 1024;

  /**
   * Runs one pass over new runs checks at most (give or take a head's step): a verifier behind the
   * load seals step by step, each step against a head this process signed there, instead of in one
   * pass that grows with the lag and is lost whole when the daemon stops before it ends.
   */
  static final long MAX_PASS = 8 * StoreLedger.HEAD_STEP;

  private static final long POLL_MS = 2_000;

  /** Where verification stands. */
  public enum Phase {
    PENDING,
    RUNNING,
    VERIFIED,
    DAMAGED,
    FAILED
  }

  /**
   * One pass's state: its phase, how many runs it checked of how many, the damage it found, when it
   * ran (epoch ms, 0 until it did) and why it failed (empty unless FAILED).
   */
  public record State(
      Phase phase,
      long checkedRuns,
      long totalRuns,
      List<StoreDamage> damage,
      long startedMs,
      long finishedMs,
      String failure) {
    static final State PENDING = new State(Phase.PENDING, 0, 0, List.of(), 0, 0, "");
  }

  /** Runs one read transaction checks before it ends (so no snapshot pins the WAL for long). */
  static final long SLICE_RUNS = 64;

  private final RunStore store;
  private final Consumer<State> listener;
  private final Cadence cadence;
  private final CpuShare background;
  private final AtomicReference<State> state = new AtomicReference<>(State.PENDING);
  private final Object passLock = new Object();
  private volatile boolean closed;
  // On-demand checks waiting for the pass lock: a throttled background pass gives way to them (it
  // would otherwise keep an operator waiting for as long as its CPU share stretches it).
  private final AtomicInteger demanded = new AtomicInteger();
  // System.nanoTime() by which an unthrottled pass must end (sealBeforeStop's budget); 0: none.
  private volatile long stopBy;
  private Thread thread;

  /** A verifier of {@code store}; {@code listener} hears each finished pass (for metrics). */
  public StoreVerifier(RunStore store, Consumer<State> listener) {
    this(store, listener, io.sandboxd.config.DaemonConfig.Store.DEFAULT_VERIFY_CPU_PERCENT);
  }

  /**
   * As above, the background passes held to {@code cpuPercent} of one core (an on-demand check runs
   * at full speed: an operator waits for it).
   */
  public StoreVerifier(RunStore store, Consumer<State> listener, int cpuPercent) {
    this(store, listener, new CpuShare(cpuPercent));
  }

  /**
   * As above, the background passes held to {@code background} (its share under load, and the
   * larger one it may allow while the node is idle).
   */
  public StoreVerifier(RunStore store, Consumer<State> listener, CpuShare background) {
    this(store, listener, new Cadence(SEAL_EVERY, MAX_PASS, POLL_MS), background);
  }

  StoreVerifier(RunStore store, Consumer<State> listener, long sealEvery, long pollMs) {
    this(store, listener, sealEvery, pollMs, 100);
  }

  StoreVerifier(
      RunStore store, Consumer<State> listener, long sealEvery, long pollMs, int cpuPercent) {
    this(store, listener, new Cadence(sealEvery, MAX_PASS, pollMs), cpuPercent);
  }

  StoreVerifier(RunStore store, Consumer<State> listener, Cadence cadence, int cpuPercent) {
    this(store, listener, cadence, new CpuShare(cpuPercent));
  }

  StoreVerifier(RunStore store, Consumer<State> listener, Cadence cadence, CpuShare background) {
    this.store = store;
    this.listener = listener;
    this.cadence = cadence;
    this.background = background;
  }

  /**
   * When passes over new runs come: once {@code sealEvery} runs lie past the checkpoint (looked at
   * every {@code pollMs}), each over at most {@code maxPass} runs.
   */
  record Cadence(long sealEvery, long maxPass, long pollMs) {}

  /** The background passes' CPU so far and the wall time they took, for the cap's metric. */
  public CpuShare.Use backgroundUse() {
    return background.use();
  }

  /** Starts the background thread: a full pass now, then sealing new runs as they accumulate. */
  public synchronized void start() {
    thread = new Thread(this::loop, "sandboxd-store-verifier");
    thread.setDaemon(true);
    thread.setPriority(Thread.MIN_PRIORITY);
    thread.start();
  }

  public State state() {
    return state.get();
  }

  /**
   * The full check, now, in the caller's thread, at full speed; returns its state. One pass runs at
   * a time: a throttled background pass in progress gives way at once (the check covers everything
   * it would have), another on-demand pass is waited for.
   */
  public State verifyNow() {
    demanded.incrementAndGet();
    synchronized (passLock) {
      demanded.decrementAndGet();
      return fullPass(true);
    }
  }

  /**
   * Checks and seals the runs appended since the checkpoint, in the caller's thread at full speed,
   * as a stop's last step (after the drain, before the store closes): the next start-up then has
   * none of them to check before it serves, as a database's shutdown checkpoint spares its next
   * start a replay. A sealed run means what it always means (WIRE.md §2.8; the runs' records
   * checked as {@link StoreAudit.Depth#SIGNED_HERE}). It goes in steps of at most {@link #MAX_PASS}
   * runs and gives up once {@code budgetMs} have passed, the steps sealed by then kept; damage is
   * reported as a background pass reports it and ends the sealing. Returns the runs it sealed.
   */
  public long sealBeforeStop(long budgetMs) {
    if (budgetMs <= 0) {
      return 0;
    }
    demanded.incrementAndGet();
    synchronized (passLock) {
      demanded.decrementAndGet();
      long before = sealedRuns();
      stopBy = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(budgetMs);
      try {
        // Step by step (each pass at most maxPass runs): what is sealed stays sealed if the time
        // runs out in a later step.
        while (!stopNow() && sealNewRuns(1, false)) {
          // the next step
        }
      } finally {
        stopBy = 0;
      }
      return sealedRuns() - before;
    }
  }

  /** One step of {@link #sealBeforeStop} without a budget: whether it sealed (for tests). */
  boolean sealStep() {
    synchronized (passLock) {
      return sealNewRuns(1, false);
    }
  }

  /** Whether an unthrottled pass should end now: the daemon is closing or its budget is spent. */
  private boolean stopNow() {
    long by = stopBy;
    return closed || (by != 0 && System.nanoTime() - by > 0);
  }

  /** Whether a throttled pass should end now: the daemon is closing or a check is demanded. */
  private boolean giveWay() {
    return closed || demanded.get() > 0;
  }

  private void loop() {
    try {
      synchronized (passLock) {
        fullPass(false);
      }
      // A pass that sealed may have left another sealEvery runs behind it (they came while it ran
      // at its share): the next starts at once. The share holds across passes, each paced to it;
      // sleeping a poll between them held the verifier to about half its cap under steady load.
      boolean sealed = false;
      while (!closed) {
        if (!sealed) {
          TimeUnit.MILLISECONDS.sleep(cadence.pollMs());
        }
        synchronized (passLock) {
          sealed = !closed && sealNewRuns(cadence.sealEvery(), true);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      LOG.log(Level.SEVERE, "run store: background verification stopped: " + e.getMessage(), e);
    }
  }

  /**
   * One full pass; a clean one seals a checkpoint at what it covered when {@code sealAlways} (on
   * demand), else only once {@link Cadence#sealEvery} runs lie past the current checkpoint, so that
   * a start-up's runs stay for the next start-up to check as before.
   */
  private State fullPass(boolean sealAlways) {
    long started = System.currentTimeMillis();
    State running = new State(Phase.RUNNING, 0, 0, List.of(), started, 0, "");
    state.set(running);
    State done;
    try (Connection reader = store.openReader()) {
      long[] checked = {0};
      StoreAudit.Result r =
          pass(
              reader,
              StoreAudit.Start.GENESIS,
              !sealAlways,
              pos -> {
                if ((++checked[0] & 1023) == 0) {
                  state.set(new State(Phase.RUNNING, checked[0], 0, List.of(), started, 0, ""));
                }
              },
              !sealAlways,
              null,
              StoreAudit.Depth.FULL);
      long finished = System.currentTimeMillis();
      store.remember(r.damage(), true);
      if (r.clean()) {
        long sealed = sealedRuns();
        if (sealAlways || r.ledgerSize() - sealed >= cadence.sealEvery()) {
          store.seal(r.ledgerSize(), r.chain());
        }
        done =
            new State(
                Phase.VERIFIED, r.checked(), r.ledgerSize(), List.of(), started, finished, "");
        LOG.info(
            "run store: background verification: all "
                + r.ledgerSize()
                + " runs verify ("
                + (finished - started)
                + " ms); checkpoint at "
                + sealedRuns());
      } else {
        done =
            new State(
                Phase.DAMAGED, r.checked(), r.ledgerSize(), r.damage(), started, finished, "");
        StringBuilder msg =
            new StringBuilder(
                "run store: background verification found damage the node did not sign:");
        for (StoreDamage d : r.damage()) {
          msg.append("\n  ").append(d);
        }
        LOG.severe(msg.append("\ndamaged runs are listed as Tampered").toString());
      }
    } catch (PassStopped e) {
      String why = closed ? "stopped" : "gave way to an on-demand check";
      done = new State(Phase.PENDING, 0, 0, List.of(), started, 0, why);
    } catch (SQLException | RuntimeException e) {
      done =
          new State(
              Phase.FAILED, 0, 0, List.of(), started, System.currentTimeMillis(), e.toString());
      LOG.log(Level.SEVERE, "run store: background verification failed: " + e, e);
    }
    state.set(done);
    listener.accept(done);
    return done;
  }

  private long sealedRuns() {
    try {
      return store.checkpoint().map(cp -> cp.runs()).orElse(0L);
    } catch (StoreException e) {
      return 0;
    }
  }

  /**
   * Checks and seals the runs appended since the checkpoint, once there are {@code atLeast} of them
   * (at least one). The same check start-up makes, so it need not wait for the full pass: at a
   * background share of a core a full pass over a big store takes hours, and every run appended
   * meanwhile would be left for the next start-up to check. Returns whether it sealed.
   */
  private boolean sealNewRuns(long atLeast, boolean throttled) {
    State s = state.get();
    if (s.phase() == Phase.DAMAGED || s.phase() == Phase.FAILED) {
      return false; // damage stays reported until a clean full pass (`sandboxctl store verify`)
    }
    StoreAudit.Start from;
    try {
      from =
          store
              .checkpoint()
              .map(cp -> new StoreAudit.Start(cp.runs(), cp.chain()))
              .orElse(StoreAudit.Start.GENESIS);
    } catch (StoreException e) {
      return false;
    }
    if (store.headRuns() - from.position() < Math.max(1, atLeast)) {
      return false;
    }
    try (Connection reader = store.openReader()) {
      // Up to the head signed when the pass begins, not the ledger's end as it grows: runs keep
      // coming while a throttled pass runs, and one that chased the end would never seal any.
      Optional<StoreAudit.Bound> latest = StoreAudit.bound(reader);
      reader.rollback();
      // Far behind: a step up to a head this process signed at most maxPass runs on (asked after
      // the read above, for no more runs than the committed head it saw: see signedHeadAtMost).
      Optional<StoreAudit.Bound> bound = latest;
      if (latest.isPresent() && latest.get().runs() - from.position() > cadence.maxPass()) {
        long position = from.position();
        bound =
            store
                .signedHeadAtMost(position + cadence.maxPass())
                .filter(b -> b.runs() > position && b.runs() <= latest.get().runs())
                .or(() -> latest);
      }
      StoreAudit.Result r;
      try {
        // The runs since the checkpoint were stored by this process moments ago (or checked at
        // its start-up): records it signed itself are taken as it wrote them (StoreAudit.Depth).
        r =
            pass(
                reader,
                from,
                throttled,
                pos -> {},
                false,
                bound.orElse(null),
                StoreAudit.Depth.SIGNED_HERE);
      } catch (PassStopped e) {
        return false; // closing, or an on-demand check takes over: it covers these runs too
      }
      if (r.clean()) {
        store.seal(r.ledgerSize(), r.chain());
        return true;
      } else {
        store.remember(r.damage(), false);
        State damaged =
            new State(
                Phase.DAMAGED,
                r.checked(),
                r.ledgerSize(),
                r.damage(),
                System.currentTimeMillis(),
                System.currentTimeMillis(),
                "");
        state.set(damaged);
        listener.accept(damaged);
        LOG.severe("run store: damage in runs appended since the checkpoint: " + r.damage());
      }
    } catch (SQLException e) {
      LOG.warning("run store: cannot check new runs: " + e.getMessage());
    }
    return false;
  }

  /**
   * An audit from {@code from}, slice by slice, each slice in its own read transaction on {@code
   * reader}; the whole-store check runs in the last slice's. {@code throttled} holds it to the
   * background share of a core; {@code depth} is how its runs' records are checked. With {@code
   * sealMeanwhile} (the background full pass) the runs appended since the checkpoint are checked
   * and sealed between slices, every poll interval, while this pass has found no damage. With a
   * {@code bound} (null: none) it checks the runs before the bound's head and that head ({@link
   * StoreAudit#bounded}) instead of the whole store as it is at the end.
   */
  private StoreAudit.Result pass(
      Connection reader,
      StoreAudit.Start from,
      boolean throttled,
      java.util.function.LongConsumer progress,
      boolean sealMeanwhile,
      StoreAudit.Bound bound,
      StoreAudit.Depth depth)
      throws SQLException {
    List<StoreDamage> runDamage = new java.util.ArrayList<>();
    StoreAudit.Start at = from;
    long sealedAt = System.nanoTime();
    CpuShare.Session pace = throttled ? background.begin() : null;
    // One set of prepared statements for the whole pass: they outlive each slice's transaction.
    try (Statements q = new Statements(reader)) {
      while (true) {
        StoreAudit.Slice slice =
            StoreAudit.slice(
                q,
                store.signer(),
                at,
                bound == null ? Long.MAX_VALUE : bound.runs(),
                SLICE_RUNS,
                pos -> {
                  progress.accept(pos);
                  if (throttled ? giveWay() : stopNow()) {
                    throw new PassStopped();
                  }
                },
                null,
                depth);
        runDamage.addAll(slice.damage());
        at = slice.next();
        if (slice.end()) {
          StoreAudit.Result r =
              bound == null
                  ? StoreAudit.wholeStore(reader, store.signer(), from, at, runDamage)
                  : StoreAudit.bounded(reader, store.signer(), from, at, bound, runDamage);
          reader.rollback();
          // The last slice is paced too: a pass of one slice (every pass over the runs since the
          // checkpoint, at a modest load) would otherwise never be held to the share at all. A
          // check demanded meanwhile cuts the sleep short but keeps the result: the pass is done.
          if (pace != null) {
            try {
              pace.pace(this::giveWay);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new PassStopped();
            }
          }
          return r;
        }
        reader.rollback();
        if (sealMeanwhile
            && runDamage.isEmpty()
            && System.nanoTime() - sealedAt >= TimeUnit.MILLISECONDS.toNanos(cadence.pollMs())) {
          // Unthrottled itself: this pass's pacing counts its CPU (the same thread's).
          sealNewRuns(cadence.sealEvery(), false);
          sealedAt = System.nanoTime();
        }
        paceOrStop(pace);
      }
    } finally {
      if (pace != null) {
        pace.close();
      }
    }
  }

  /**
   * Sleeps off a throttled pass's CPU debt ({@code pace} null: unthrottled, no sleep), ending the
   * pass instead when it must give way.
   */
  private void paceOrStop(CpuShare.Session pace) {
    if (pace == null) {
      return;
    }
    try {
      if (!pace.pace(this::giveWay)) {
        throw new PassStopped();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new PassStopped();
    }
  }

  /** Thrown from the progress hook to end a pass when the daemon closes. */
  private static final class PassStopped extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PassStopped() {
      super(null, null, false, false);
    }
  }

  @Override
  public void close() {
    closed = true;
    Thread t;
    synchronized (this) {
      t = thread;
    }
    if (t != null) {
      t.interrupt();
      try {
        t.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
