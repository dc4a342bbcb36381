package io.sandboxd.executor;

import com.dylibso.chicory.runtime.ChicoryInterruptedException;
import com.dylibso.chicory.runtime.ExportFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wasm.ChicoryException;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.ComputeGrant;
import io.sandboxd.enforcer.Enforcer;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs units on Chicory, each on a platform thread (virtual threads cannot be preempted) with a
 * unit's stack: the caller's own when it is a {@link UnitThread} holding one of its {@link
 * InPlaceSeats} (two for each of the {@code maxConcurrent} slots, 32 at least), else one of the
 * executor's; at most {@code maxConcurrent} at once. Budgets are hard: a {@link Watchdog} samples
 * each unit's CPU time and energy and interrupts it within a millisecond of a CPU breach; memory is
 * capped at the smallest of the module's, the grant's and the node's limits.
 */
public final class Executor implements AutoCloseable {
  /** The normalized clock a unit sees when the clock is not granted (WIRE.md §3.2). */
  public static final long CLOCK_CONSTANT_MS = 0;

  /**
   * The export of a step-wise unit (ABI.md): called until it returns {@link #STEP_DONE}; between
   * two calls that returned {@link #STEP_MORE} the run parks when its park was requested.
   */
  public static final String STEP_ENTRY = "step";

  /** Unit threads that may run units in place, for each unit that may run at once. */
  static final int SEATS_A_SLOT = 2;

  /** Unit threads that may run units in place, however few units may run at once. */
  static final int MIN_SEATS = 32;

  public static final int STEP_DONE = 0;
  public static final int STEP_MORE = 1;

  // Runs the units of callers that are not unit threads themselves.
  private final ThreadPoolExecutor guests;
  // A unit holds a slot while it runs, wherever it runs: the node's bound on units at once.
  private final Semaphore slots;
  // The unit threads that may run a unit in place: two a slot, and at least MIN_SEATS, so at most
  // that many threads and the pool's ever hold a unit's stack, however many handler threads there
  // are. The daemon's handler threads take calls in turn, 22 of them at 16 clients on 2 cores; a
  // unit handed to the pool there cost a fifth of the throughput (benchmarks/README.md).
  private final InPlaceSeats seats;
  private final AtomicInteger waiting = new AtomicInteger();
  // Past this many units waiting for a slot a submission is refused, not queued for ever.
  private final int maxWaiting;
  private final Watchdog watchdog = new Watchdog("unit-watchdog");
  private volatile boolean closed;
  private final EnergyModel energyModel;
  private final long maxWallNanos;
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private final SecureRandom random = new SecureRandom();

  private final HostServices services;

  /**
   * Whether every unit thread is taken or units wait for one: background work (the warm-pool
   * refill) backs off then rather than compete with runs for the cores.
   */
  public boolean saturated() {
    return slots.availablePermits() == 0 || slots.hasQueuedThreads();
  }

  /** The unit threads that may run units in place, for {@code maxConcurrent} units at once. */
  static int seats(int maxConcurrent) {
    return Math.max(MIN_SEATS, SEATS_A_SLOT * maxConcurrent);
  }

  /** Unit threads that hold a seat to run units in place now. */
  int seated() {
    return seats.taken();
  }

  /** Units waiting for a slot now. */
  int waiting() {
    return waiting.get();
  }

  public Executor(int maxConcurrent, EnergyModel energyModel, long maxWallMillis) {
    this(maxConcurrent, energyModel, maxWallMillis, HostServices.none());
  }

  public Executor(
      int maxConcurrent, EnergyModel energyModel, long maxWallMillis, HostServices services) {
    this.services = services;
    // Probes exec confinement once and ends exec trees a crashed daemon left running.
    ProcessTree.cgroupParent();
    PidsCgroupV1.parent();
    // Unbounded queue: a task is queued only by a caller holding a slot, so never more than the
    // threads can take.
    this.guests =
        new ThreadPoolExecutor(
            maxConcurrent,
            maxConcurrent,
            30,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            UnitThread.factory("unit-"));
    this.guests.allowCoreThreadTimeOut(true);
    this.slots = new Semaphore(maxConcurrent, true);
    this.seats = new InPlaceSeats(seats(maxConcurrent));
    this.maxWaiting = Math.max(16, maxConcurrent * 64);
    this.energyModel = energyModel;
    this.maxWallNanos = TimeUnit.MILLISECONDS.toNanos(maxWallMillis);
    if (!threads.isThreadCpuTimeSupported()) {
      throw new IllegalStateException("this JVM cannot measure per-thread CPU time");
    }
    threads.setThreadCpuTimeEnabled(true);
  }

  /** The dispatchable classes of a grant: Cpu always, plus every granted device. */
  public static Set<DeviceClass> dispatchableClasses(ComputeGrant compute) {
    Set<DeviceClass> classes = EnumSet.of(DeviceClass.Cpu);
    classes.addAll(compute.devices());
    return classes;
  }

  /** Executes the request to its end (completed, failed or terminated) and reports what it used. */
  public ExecutionResult execute(UnitRequest req) {
    return execute(req, null, Consumed.NONE);
  }

  /**
   * The memory limits a run of {@code unit} under {@code compute} gets on this node: a prepared
   * instance serves the run only when it was made with the same.
   */
  public InstanceShape shape(CompiledUnit unit, ComputeGrant compute) {
    return new InstanceShape(
        memoryLimitPages(unit, compute, services.maxUnitMemoryBytes()),
        memoryCapBytes(compute, services.maxUnitMemoryBytes()));
  }

  /**
   * The memory limits of a run of {@code unit} whose grant asks for no less than the node's cap.
   */
  public InstanceShape nodeShape(CompiledUnit unit) {
    long cap = services.maxUnitMemoryBytes();
    long available = cap - unit.footprint().staticBytes();
    long pages = Math.min(unit.declaredMaxPages(), Math.max(0, available) / Memory.PAGE_SIZE);
    return new InstanceShape((int) Math.min(pages, Memory.RUNTIME_MAX_PAGES), cap);
  }

  /**
   * As {@link #execute(UnitRequest)}, running the unit on {@code warm} (an instance made in advance
   * and never run, of the same unit and shape) when given; the instance is used up by this run.
   */
  public ExecutionResult execute(UnitRequest req, PreparedInstance warm) {
    return execute(req, warm, Consumed.NONE);
  }

  /**
   * As {@link #execute(UnitRequest)} for a segment of a run that already consumed {@code before}:
   * the CPU and energy budgets it runs under are what the grant has left after that, so a run
   * parked and resumed N times still gets its grant once. A run with nothing left is stopped at the
   * watchdog's first tick.
   */
  public ExecutionResult execute(UnitRequest req, Consumed before) {
    return execute(req, null, before);
  }

  private ExecutionResult execute(UnitRequest req, PreparedInstance warm, Consumed before) {
    if (warm != null
        && (!warm.unit().address().equals(req.unit().address())
            || !warm.shape().equals(shape(req.unit(), req.grants().compute()))
            || !warm.use())) {
      throw new IllegalArgumentException(
          "a prepared instance serves one run of its own unit and shape");
    }
    if (req.resume().isPresent() && !req.resume().get().module().equals(req.unit().address())) {
      throw new SnapshotException.Mismatch(
          "snapshot "
              + req.resume().get().address()
              + " is of module "
              + req.resume().get().module()
              + ", not of module "
              + req.unit().address());
    }
    ComputeGrant granted = req.grants().compute();
    ComputeGrant compute =
        before.equals(Consumed.NONE)
            ? granted
            : new ComputeGrant(
                granted.devices(),
                Math.max(0, granted.energyBudgetUj() - before.energyUj()),
                Math.max(0, granted.cpuTimeMs() - before.cpuTimeMs()),
                granted.memoryBytes());
    Set<DeviceClass> classes = dispatchableClasses(compute);
    Enforcer enforcer = new Enforcer(req.grants(), services.execDenylist());
    req.park().ifPresent(p -> p.attach(enforcer));
    Optional<StorageRoot> storage;
    try {
      // A replay answers every storage input from the journal: it never creates or reads the root.
      storage =
          req.storageRoot().isEmpty()
              ? Optional.empty()
              : req.replay().isPresent()
                  ? Optional.of(StorageRoot.forReplay(req.storageRoot().get()))
                  : Optional.of(
                      StorageRoot.open(
                          req.storageRoot().get(),
                          services.storageQuotaBytes(),
                          services.reserve()));
    } catch (IOException e) {
      // The node's own storage failed: a host error, not the unit's fault.
      throw new java.io.UncheckedIOException(
          "storage root " + req.storageRoot().get() + ": " + e.getMessage(), e);
    }
    RunContext ctx =
        new RunContext(
            enforcer,
            Executor::wallNanos,
            CLOCK_CONSTANT_MS,
            random,
            services,
            storage,
            req.replay(),
            req.unit().address());
    List<RunStorage.MountRoot> mounts = openMounts(req, storage);
    ctx.storage.mounts(mounts);
    req.park().ifPresent(ctx::parkOn);
    // A resumed run's taint from before its park: taint only grows.
    ctx.taint.add(req.taint());

    long startedMs = System.currentTimeMillis();
    long t0 = System.nanoTime();
    GuestTask task = new GuestTask(req, ctx, shape(req.unit(), compute), warm);
    EnergyModel.Session meter = energyModel.begin(req.runId(), task::cpuSoFar, classes);
    int waitedFor = takeSlot();
    if (waitedFor >= 0) {
      meter.end();
      storage.ifPresent(StorageRoot::close);
      mounts.forEach(m -> m.root().close());
      throw new ExecutorBusyException(
          closed
              ? "node busy: the executor is closed"
              : "node busy: " + waitedFor + " units already wait for a thread",
          null);
    }
    Watchdog.Verdict verdict;
    try {
      verdict = run(task, compute, meter);
    } finally {
      slots.release();
    }
    storage.ifPresent(StorageRoot::close);
    mounts.forEach(m -> m.root().close());

    long wall = System.nanoTime() - t0;
    long cpu = task.cpuNanos();
    Map<DeviceClass, ClassEnergy> energy = meter.end();
    Outcome outcome = decide(task, verdict, cpu, energy, compute);
    ExecutionResult.Builder result = ctx.report(ExecutionResult.builder());
    Instance parked = task.parked;
    task.parked = null;
    if (parked != null && outcome instanceof Outcome.Completed) {
      // Captured here, off the guest thread: no guest frame is live, and the unit's CPU budget
      // does not pay for the snapshot.
      try {
        result.parked(
            InstanceSnapshot.capture(parked, req.unit().address(), req.resume().orElse(null)));
      } catch (SnapshotException e) {
        outcome = new Outcome.Failed("cannot park: " + e.getMessage());
      }
    }
    return result
        .outcome(outcome)
        .wall(startedMs, wall)
        .consumed(cpu, task.memoryPeakBytes(), energy)
        .replayDivergence(req.replay().map(ReplaySource::divergence))
        .stdio(task.stdio)
        .exit(task.exitCode, task.exited)
        .build();
  }

  /**
   * The environment's directories, each with a quota ledger like the storage root's (a replay
   * opens, creates and reads none of them). A unit without a storage root gets no preopens at all.
   */
  private List<RunStorage.MountRoot> openMounts(UnitRequest req, Optional<StorageRoot> storage) {
    List<RunStorage.MountRoot> out = new java.util.ArrayList<>();
    if (storage.isEmpty()) {
      return out;
    }
    try {
      for (MountedDir m : req.mounts()) {
        StorageRoot root =
            req.replay().isPresent()
                ? StorageRoot.forReplay(m.host())
                : StorageRoot.open(m.host(), services.storageQuotaBytes(), services.reserve());
        out.add(new RunStorage.MountRoot(m.rel(), root));
      }
    } catch (IOException e) {
      out.forEach(m -> m.root().close());
      storage.get().close();
      throw new java.io.UncheckedIOException("mount " + e.getMessage(), e);
    }
    return out;
  }

  private static long wallNanos() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /**
   * Pages the unit may use: the smallest of its declared maximum, the grant's memory_bytes and the
   * node's cap (unit memory lives on the daemon's heap, so the node must bound it).
   */
  static int memoryLimitPages(CompiledUnit unit, ComputeGrant compute, long nodeCapBytes) {
    // Tables and globals live on the same heap and count against the same cap.
    long available = memoryCapBytes(compute, nodeCapBytes) - unit.footprint().staticBytes();
    long grantPages = Math.max(0, available) / Memory.PAGE_SIZE;
    long limit = Math.min(unit.declaredMaxPages(), grantPages);
    return (int) Math.min(limit, Memory.RUNTIME_MAX_PAGES);
  }

  /** Heap bytes a unit's instance may hold: the smaller of the grant's and the node's cap. */
  static long memoryCapBytes(ComputeGrant compute, long nodeCapBytes) {
    return Math.min(compute.memoryBytes(), nodeCapBytes);
  }

  /**
   * Takes a slot for a unit, waiting while {@code maxConcurrent} units run; returns -1 once taken,
   * else (refused: too many wait already, or the executor is closed) how many units wait.
   */
  private int takeSlot() {
    if (closed) {
      return 0;
    }
    if (!slots.tryAcquire()) {
      int ahead = waiting.getAndIncrement();
      if (ahead >= maxWaiting) {
        waiting.decrementAndGet();
        return ahead;
      }
      try {
        slots.acquireUninterruptibly();
      } finally {
        waiting.decrementAndGet();
      }
    }
    if (closed) {
      slots.release();
      return 0;
    }
    return -1;
  }

  /**
   * Runs the task under the watchdog, holding a slot: on this thread when it is a unit thread with
   * a seat, else on one of the executor's, waiting for its end.
   */
  private Watchdog.Verdict run(GuestTask task, ComputeGrant compute, EnergyModel.Session meter) {
    Watchdog.Watch watch =
        watchdog.watch(
            task,
            saturatingMillisToNanos(compute.cpuTimeMs()),
            compute.energyBudgetUj(),
            meter,
            maxWallNanos);
    if (watch == null) {
      task.failure = "the daemon shut down before the unit started";
      return Watchdog.Verdict.NONE;
    }
    Watchdog.Verdict verdict;
    try {
      if (UnitThread.seatedIn(seats)) {
        task.call();
        if (task.interruptedByCaller()) {
          // Not the watchdog's stop: whoever interrupted this thread still has to see it.
          Thread.currentThread().interrupt();
        }
      } else {
        runOnPool(task);
      }
    } finally {
      verdict = watchdog.end(watch);
    }
    return verdict;
  }

  /** Hands the task to a pool thread and waits for it to end (or the executor to close). */
  private void runOnPool(GuestTask task) {
    Future<Integer> future;
    try {
      future = guests.submit(task);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      task.failure = "the daemon shut down before the unit started";
      return;
    }
    boolean interrupted = false;
    try {
      while (true) {
        try {
          if (task.done.await(Watchdog.MAX_TICK_NANOS, TimeUnit.NANOSECONDS)) {
            return;
          }
        } catch (InterruptedException e) {
          // The caller is stopped, so its unit is: the caller still waits for the unit's end, for
          // an outcome read before the guest ended would say Completed of a run cut short.
          interrupted = true;
          task.stop();
          continue;
        }
        if (future.isCancelled()) {
          // The executor closed before the guest started.
          task.failure = "the daemon shut down before the unit started";
          return;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static long saturatingMillisToNanos(long ms) {
    return ms > Long.MAX_VALUE / 1_000_000L ? Long.MAX_VALUE : ms * 1_000_000L;
  }

  static long totalUj(Map<DeviceClass, ClassEnergy> energy) {
    long t = 0;
    for (ClassEnergy r : energy.values()) {
      t = Math.addExact(t, r.uj());
    }
    return t;
  }

  private static Outcome decide(
      GuestTask task,
      Watchdog.Verdict verdict,
      long cpuNanos,
      Map<DeviceClass, ClassEnergy> energy,
      ComputeGrant compute) {
    if (verdict.breach() != null) {
      return new Outcome.Terminated(verdict.breach());
    }
    // Budgets are hard even when the guest finished between two watchdog ticks.
    if (cpuNanos > saturatingMillisToNanos(compute.cpuTimeMs())) {
      return new Outcome.Terminated(Outcome.Breach.CpuTime);
    }
    if (totalUj(energy) > compute.energyBudgetUj()) {
      return new Outcome.Terminated(Outcome.Breach.EnergyBudget);
    }
    if (task.memoryBreach != null) {
      return new Outcome.Terminated(Outcome.Breach.Memory);
    }
    if (verdict.wallLimitHit()) {
      return new Outcome.Failed("wall-clock limit of the daemon exceeded");
    }
    if (task.failure != null) {
      return new Outcome.Failed(task.failure);
    }
    if (task.exitCode != 0) {
      // proc_exit takes a u32: 4294967295 is not -1.
      return new Outcome.Failed(
          task.exited
              ? "exit status " + Integer.toUnsignedString(task.exitCode)
              : "entry returned " + task.exitCode);
    }
    return new Outcome.Completed();
  }

  @Override
  public void close() {
    closed = true;
    // Stops the units running in place; shutdownNow interrupts those on the pool's threads.
    watchdog.close();
    for (Runnable never : guests.shutdownNow()) {
      if (never instanceof Future<?> f) {
        f.cancel(false);
      }
    }
  }

  /** The guest side of one execution, run on a unit thread. */
  private final class GuestTask implements java.util.concurrent.Callable<Integer>, Watchdog.Guest {
    private final UnitRequest req;
    private final RunContext ctx;
    private final InstanceShape shape;
    private final PreparedInstance warm;
    private final AtomicReference<Thread> thread = new AtomicReference<>();
    final java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    private volatile long cpuNanos;
    volatile long cpuStart;
    private volatile long memoryPeakBytes;
    // Set when the watchdog or the executor's close stopped the guest.
    private volatile boolean stopped;
    // Whether the thread's interrupt flag was set as the guest ended.
    private volatile boolean endedInterrupted;
    volatile String memoryBreach;
    volatile String failure;
    volatile int exitCode;
    // The guest ended through WASI proc_exit rather than by returning from its entry.
    volatile boolean exited;
    // What a WASI guest wrote; set on the guest thread before `done` is counted down.
    volatile Optional<ExecutionResult.Stdio> stdio = Optional.empty();
    // The instance, when the run parked at a boundary; captured by the caller after the task.
    volatile Instance parked;

    GuestTask(UnitRequest req, RunContext ctx, InstanceShape shape, PreparedInstance warm) {
      this.req = req;
      this.ctx = ctx;
      this.shape = shape;
      this.warm = warm;
    }

    @Override
    public boolean running() {
      return thread.get() != null;
    }

    /** Whether something other than the watchdog or the executor's close interrupted the guest. */
    boolean interruptedByCaller() {
      return !stopped && (endedInterrupted || "interrupted".equals(failure));
    }

    /** The guest thread's CPU time plus that of every process its exec calls started. */
    long cpuNanos() {
      return cpuNanos + ctx.process.cpuNanos();
    }

    /** CPU time of this task so far (exec children included): live while it runs, final after. */
    @Override
    public long cpuSoFar() {
      Thread t = thread.get();
      if (t == null) {
        return cpuNanos();
      }
      long now = threads.getThreadCpuTime(t.getId()) - cpuStart;
      return Math.max(now, 0) + ctx.process.cpuNanos();
    }

    long memoryPeakBytes() {
      return memoryPeakBytes;
    }

    /** Interrupts the guest; under the task's lock so a reused thread is never hit. */
    @Override
    public synchronized void stop() {
      stopped = true;
      Thread t = thread.get();
      if (t != null) {
        t.interrupt();
      }
    }

    private static int status(long[] ret) {
      return ret == null || ret.length == 0 ? 0 : (int) ret[0];
    }

    private synchronized void detach() {
      thread.set(null);
    }

    @Override
    public Integer call() {
      Thread me = Thread.currentThread();
      long cpu0 = threads.getCurrentThreadCpuTime();
      cpuStart = cpu0;
      thread.set(me);
      Instance instance = null;
      WasiRun wasi = null;
      RunBinding binding = null;
      try {
        if (stopped) {
          // Stopped before it had a thread to interrupt (its caller was, while it waited for one).
          failure = "interrupted";
          return -1;
        }
        CompiledUnit unit = req.unit();
        // Instantiated unbound (in advance, for a warm instance), then bound to this run.
        PreparedInstance prepared;
        // A fresh run is bound before instantiation, so that its start function (if any) runs
        // here, metered, with the run's imports. A warm instance never had one (not poolable), and
        // a resumed run binds after its snapshot is restored, as before.
        boolean bindFirst = warm == null && req.resume().isEmpty();
        if (bindFirst && WasiImports.imports(unit.module())) {
          wasi = WasiRun.open(ctx, req.io().argv(unit.address()), req.env(), req.io());
        }
        WasiRun early = wasi;
        try {
          prepared =
              warm != null
                  ? warm
                  : bindFirst
                      ? PreparedInstance.prepare(unit, shape, b -> b.bind(ctx, early))
                      : PreparedInstance.prepare(unit, shape);
        } catch (PreparedInstance.MemoryBreachException e) {
          memoryBreach = e.getMessage();
          return -1;
        }
        instance = prepared.instance();
        binding = prepared.binding();
        if (req.resume().isPresent()) {
          try {
            req.resume().get().restore(instance, unit.address());
          } catch (SnapshotException.Mismatch e) {
            // The module matched (checked before the run): what does not fit are the limits.
            memoryBreach = e.getMessage();
            return -1;
          }
        }
        // The run's WASI state (descriptors, argv, env, stdio, preopens) is made at bind time too.
        if (!bindFirst) {
          wasi =
              prepared.usesWasi()
                  ? WasiRun.open(ctx, req.io().argv(unit.address()), req.env(), req.io())
                  : null;
          binding.bind(ctx, wasi);
        }
        ExportFunction entry = instance.export(req.entry());
        if (req.entry().equals(STEP_ENTRY)) {
          int r;
          do {
            r = status(entry.apply());
            if (r == STEP_MORE && ctx.parkAtStepBoundary()) {
              parked = instance;
              exitCode = 0;
              return exitCode;
            }
          } while (r == STEP_MORE);
          exitCode = r;
          return exitCode;
        }
        exitCode = status(entry.apply());
        if (exitCode == AbiStatus.PARK && ctx.parkAnswered()) {
          // The guest returned PARK after yield_point answered it: parked, not failed.
          parked = instance;
          exitCode = 0;
        }
        return exitCode;
      } catch (ChicoryInterruptedException e) {
        failure = "interrupted";
        return -1;
      } catch (StackOverflowError e) {
        failure = "call stack exhausted";
        return -1;
      } catch (OutOfMemoryError e) {
        memoryBreach = "the daemon's heap could not hold the unit's memory";
        return -1;
      } catch (com.dylibso.chicory.wasi.WasiExitException e) {
        exited = true;
        exitCode = e.exitCode();
        return exitCode;
      } catch (Journal.FullException e) {
        failure = e.getMessage();
        return -1;
      } catch (ChicoryException e) {
        if (e.getCause() instanceof Journal.FullException full) {
          failure = full.getMessage();
          return -1;
        }
        failure = "trap: " + e.getMessage();
        return -1;
      } catch (RuntimeException e) {
        failure = "host error: " + e;
        return -1;
      } finally {
        if (binding != null) {
          binding.release();
        }
        if (wasi != null) {
          wasi.close();
          stdio = Optional.of(wasi.stdio());
        }
        if (instance != null && instance.memory() != null) {
          memoryPeakBytes = (long) instance.memory().pages() * Memory.PAGE_SIZE;
        }
        cpuNanos = threads.getCurrentThreadCpuTime() - cpu0;
        detach();
        // The thread runs other units (and, in place, its caller's code) after this one: never
        // hand a set interrupt flag on; run() gives a caller's own interrupt back.
        endedInterrupted = Thread.interrupted();
        done.countDown();
      }
    }
  }
}
