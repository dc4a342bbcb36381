package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Shares measured energy out to running units (the Kepler model). Every pass samples all meters and
 * the node's busy CPU time; each active unit gets the CPU energy of the interval in proportion to
 * its own CPU time over the node's, and the whole energy of the accelerator devices it holds (split
 * evenly if, unusually, several units hold one). Passes run at each run's start and end and
 * periodically in between, also when nothing runs, so no counter can wrap unseen.
 *
 * <p>A CPU share is an apportionment of a package counter and is therefore never labelled {@code
 * HwShunt}: at best {@code ModelBased}. Integer arithmetic throughout; each share is floored,
 * losing under 1 µJ per class per pass.
 */
public final class Attribution implements AutoCloseable {
  private final List<Meter> meters;
  private final List<MeterDomain> domains;
  private final int[] meterOfDomain;
  private final NodeCpuTime node;
  private final LongSupplier clock;
  private final long intervalNs;
  private final long cpuIdleBaselineMw;

  private final long[] last;
  private final boolean[] lastReset;
  private final boolean[] baselined;
  private long lastNodeBusy;
  private boolean nodeKnown;
  private long lastAt;
  private long passes;
  private long failedReads;
  private String lastFailure = "";

  private final Map<String, MeteredRun> active = new LinkedHashMap<>();
  private ScheduledExecutorService scheduler;
  private ScheduledFuture<?> periodic;

  /**
   * Takes a baseline sample of every meter; call {@link #startSampling()} for periodic passes.
   *
   * @param intervalNs the period of {@link #startSampling()}
   * @param cpuIdleBaselineMw node CPU draw at idle, subtracted from measured CPU energy before it
   *     is shared (0: share everything)
   */
  public Attribution(
      List<Meter> meters,
      NodeCpuTime node,
      LongSupplier clock,
      long intervalNs,
      long cpuIdleBaselineMw) {
    if (intervalNs <= 0) {
      throw new IllegalArgumentException("intervalNs must be > 0: " + intervalNs);
    }
    if (cpuIdleBaselineMw < 0) {
      throw new IllegalArgumentException("cpuIdleBaselineMw must be >= 0: " + cpuIdleBaselineMw);
    }
    this.meters = List.copyOf(meters);
    List<MeterDomain> flat = new ArrayList<>();
    List<Integer> owner = new ArrayList<>();
    for (int m = 0; m < this.meters.size(); m++) {
      for (MeterDomain d : this.meters.get(m).domains()) {
        flat.add(d);
        owner.add(m);
      }
    }
    this.domains = List.copyOf(flat);
    this.meterOfDomain = owner.stream().mapToInt(Integer::intValue).toArray();
    this.node = node;
    this.clock = clock;
    this.intervalNs = intervalNs;
    this.cpuIdleBaselineMw = cpuIdleBaselineMw;
    this.last = new long[domains.size()];
    this.lastReset = new boolean[domains.size()];
    this.baselined = new boolean[this.meters.size()];
    synchronized (this) {
      samplePass();
    }
  }

  /** Attribution over discovered meters, configured and sampling periodically. */
  public static Attribution start(DiscoveredMeters discovered, MeteringConfig config) {
    Attribution a =
        new Attribution(
            discovered.meters(),
            discovered.nodeCpuTime(),
            System::nanoTime,
            config.samplingIntervalNs(),
            config.cpuIdleBaselineMw());
    a.startSampling();
    return a;
  }

  /** Starts periodic passes on a daemon thread. */
  public synchronized void startSampling() {
    if (scheduler != null) {
      return;
    }
    scheduler =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sandboxd-energy-sampler");
              t.setDaemon(true);
              return t;
            });
    periodic =
        scheduler.scheduleAtFixedRate(
            this::periodicPass, intervalNs, intervalNs, TimeUnit.NANOSECONDS);
  }

  private void periodicPass() {
    try {
      samplePass();
    } catch (RuntimeException e) {
      // a periodic pass must never kill the sampler; the failure is kept for the listing and log
      synchronized (this) {
        failedReads++;
        lastFailure = String.valueOf(e);
      }
    }
  }

  /** The period of the sampler, ns. */
  public long intervalNs() {
    return intervalNs;
  }

  /** Passes taken since construction. */
  public synchronized long passes() {
    return passes;
  }

  /** Meter or CPU-time reads that failed, and the latest failure's message. */
  public synchronized String failures() {
    return failedReads + (failedReads == 0 ? "" : " (last: " + lastFailure + ")");
  }

  /** Starts attributing to a CPU-only unit; see {@link #begin(UnitSpec)}. */
  public MeteredRun begin(String runId, LongSupplier cpuTimeNs) {
    return begin(UnitSpec.cpuOnly(runId, cpuTimeNs));
  }

  /**
   * Starts attributing to a unit: takes a pass so that nothing before the start is charged to it.
   *
   * @throws IllegalArgumentException when a granted class or device cannot be metered here
   *     (admission should have refused the grant) or the run id is already active
   */
  public synchronized MeteredRun begin(UnitSpec spec) {
    if (active.containsKey(spec.runId())) {
      throw new IllegalArgumentException("run " + spec.runId() + " is already being metered");
    }
    Map<DeviceClass, int[]> serving = new EnumMap<>(DeviceClass.class);
    for (DeviceClass c : spec.classes()) {
      serving.put(c, servingDomains(c, spec.devices()));
    }
    for (String device : spec.devices()) {
      MeterDomain found = null;
      for (MeterDomain d : domains) {
        if (d.role() == DomainRole.Device && d.id().equals(device)) {
          found = d;
        }
      }
      if (found == null) {
        throw new IllegalArgumentException("device " + device + " is not metered on this node");
      }
      if (!spec.classes().contains(found.energyClass())) {
        // its energy would be charged but reported under no class: refuse rather than lose it
        throw new IllegalArgumentException(
            "device " + device + " is of class " + found.energyClass() + ", which was not granted");
      }
    }
    samplePass();
    MeteredRun run = new MeteredRun(this, spec, serving, spec.cpuTimeNs().getAsLong());
    active.put(spec.runId(), run);
    return run;
  }

  private int[] servingDomains(DeviceClass c, Set<String> devices) {
    List<Integer> own = new ArrayList<>();
    List<Integer> any = new ArrayList<>();
    for (int i = 0; i < domains.size(); i++) {
      MeterDomain d = domains.get(i);
      if (d.energyClass() != c || !d.role().additive()) {
        continue;
      }
      any.add(i);
      if (d.role() != DomainRole.Device || devices.contains(d.id())) {
        own.add(i);
      }
    }
    if (any.isEmpty()) {
      throw new IllegalArgumentException(
          "class " + c + " cannot be metered on this node, so it is not grantable (rule 2)");
    }
    // a unit holding no device of the class still reports it (0 µJ), labelled like the node's
    // meters
    List<Integer> chosen = own.isEmpty() ? any : own;
    return chosen.stream().mapToInt(Integer::intValue).toArray();
  }

  /** Takes one sampling pass now and charges the interval since the last one to active units. */
  public synchronized void samplePass() {
    long now = clock.getAsLong();
    int n = domains.size();
    long[] delta = new long[n];
    boolean[] newReset = new boolean[n];
    boolean[] failed = new boolean[meters.size()];
    int base = 0;
    for (int m = 0; m < meters.size(); m++) {
      Meter meter = meters.get(m);
      int size = meter.domains().size();
      try {
        MeterSample s = meter.sample();
        for (int k = 0; k < size; k++) {
          DomainCount count = s.counts().get(k);
          int i = base + k;
          if (baselined[m]) {
            delta[i] = Math.max(0, count.cumulativeUj() - last[i]);
            newReset[i] = count.reset() && !lastReset[i];
          }
          last[i] = count.cumulativeUj();
          lastReset[i] = count.reset();
        }
        baselined[m] = true;
      } catch (MeterException | RuntimeException e) {
        // the counter keeps counting: its energy is charged at the next good pass
        failed[m] = true;
        failedReads++;
        lastFailure = e.getMessage();
      }
      base += size;
    }

    long nodeDelta = 0;
    boolean nodeFailed = false;
    try {
      long busy = node.busyNs();
      if (nodeKnown) {
        nodeDelta = Math.max(0, busy - lastNodeBusy);
      }
      lastNodeBusy = Math.max(lastNodeBusy, busy);
      nodeKnown = true;
    } catch (IOException | RuntimeException e) {
      nodeFailed = true;
      failedReads++;
      lastFailure = "node CPU time: " + e.getMessage();
    }
    long dt = passes == 0 ? 0 : Math.max(0, now - lastAt);
    lastAt = now;
    passes++;

    if (!active.isEmpty()) {
      charge(delta, newReset, failed, nodeDelta, nodeFailed, dt);
    }
  }

  private void charge(
      long[] delta,
      boolean[] newReset,
      boolean[] failed,
      long nodeDelta,
      boolean nodeFailed,
      long dt) {
    List<MeteredRun> runs = new ArrayList<>(active.values());
    long[] unitDelta = new long[runs.size()];
    long unitSum = 0;
    for (int r = 0; r < runs.size(); r++) {
      unitDelta[r] = runs.get(r).advanceCpu();
      unitSum = Math.addExact(unitSum, unitDelta[r]);
    }
    // /proc/stat moves in 10 ms ticks and may lag the units' own clocks: never let shares exceed 1
    long denominator = Math.max(nodeDelta, unitSum);

    long cpuMeasured = 0;
    long cpuEstimated = 0;
    for (int i = 0; i < domains.size(); i++) {
      MeterDomain d = domains.get(i);
      if (d.energyClass() == DeviceClass.Cpu && d.role().additive()) {
        if (d.provenance() == Provenance.Estimator) {
          cpuEstimated += delta[i];
        } else {
          cpuMeasured += delta[i];
        }
      }
    }
    long idle =
        CounterArithmetic.mulDiv(cpuIdleBaselineMw, dt, PowerIntegral.MILLIWATT_NANOS_PER_UJ);
    long cpuPool = Math.max(0, cpuMeasured - idle) + cpuEstimated;
    for (int r = 0; r < runs.size(); r++) {
      if (denominator > 0) {
        runs.get(r)
            .add(DeviceClass.Cpu, CounterArithmetic.mulDiv(cpuPool, unitDelta[r], denominator));
      }
    }

    for (int i = 0; i < domains.size(); i++) {
      MeterDomain d = domains.get(i);
      if (d.role() == DomainRole.Device) {
        List<MeteredRun> holders = new ArrayList<>();
        for (MeteredRun run : runs) {
          if (run.spec().devices().contains(d.id())) {
            holders.add(run);
          }
        }
        for (MeteredRun run : holders) {
          run.add(d.energyClass(), delta[i] / holders.size());
          if (holders.size() > 1) {
            run.markShared(d.energyClass());
          }
        }
      } else if (d.role() == DomainRole.Estimate && d.energyClass() != DeviceClass.Cpu) {
        // an estimated device draw is per holder: each unit granted the class is charged in full
        for (MeteredRun run : runs) {
          if (run.spec().classes().contains(d.energyClass())) {
            run.add(d.energyClass(), delta[i]);
          }
        }
      }
    }

    for (MeteredRun run : runs) {
      for (Map.Entry<DeviceClass, int[]> e : run.serving().entrySet()) {
        for (int i : e.getValue()) {
          if (newReset[i]) {
            run.markReset(e.getKey());
          }
          if (failed[meterOfDomain[i]] || (e.getKey() == DeviceClass.Cpu && nodeFailed)) {
            run.markGap(e.getKey());
          }
        }
      }
      run.countPass();
    }
  }

  /** The reading of a run as of the last pass. */
  synchronized RunEnergy current(MeteredRun run) {
    return snapshot(run);
  }

  /** Takes a final pass, stops charging the run and returns its energy. */
  synchronized RunEnergy end(MeteredRun run) {
    if (active.get(run.spec().runId()) == run) {
      samplePass();
      active.remove(run.spec().runId());
      run.finish(snapshot(run));
    }
    return run.finalEnergy();
  }

  private RunEnergy snapshot(MeteredRun run) {
    Map<DeviceClass, EnergyReading> readings = new EnumMap<>(DeviceClass.class);
    for (Map.Entry<DeviceClass, int[]> e : run.serving().entrySet()) {
      DeviceClass c = e.getKey();
      Provenance provenance = Provenance.HwShunt;
      long resolution = 1;
      long window = 0;
      Set<String> sources = new LinkedHashSet<>();
      for (int i : e.getValue()) {
        MeterDomain d = domains.get(i);
        provenance = Provenance.worst(provenance, d.provenance());
        resolution = Math.max(resolution, d.resolutionUj());
        window = Math.max(window, d.minWindowNs());
        sources.add(d.source());
      }
      if (c == DeviceClass.Cpu || run.shared(c)) {
        // a share of a package (or of a shared device) is an apportionment, never a shunt reading
        provenance = Provenance.worst(provenance, Provenance.ModelBased);
      }
      readings.put(
          c,
          new EnergyReading(
              c,
              run.uj(c),
              provenance,
              resolution,
              window,
              String.join("+", sources),
              run.reset(c),
              run.gap(c)));
    }
    return new RunEnergy(run.spec().runId(), readings, run.passes());
  }

  /**
   * Samples now and returns the cumulative energy (µJ since the meters were opened) of every
   * additive counter of {@code energyClass}, or -1 when this node cannot meter it. Two readings
   * bracket a window, e.g. an `infer` call, whose energy is charged to the class that served it.
   */
  public synchronized long cumulativeUj(DeviceClass energyClass) {
    samplePass();
    long sum = 0;
    boolean any = false;
    for (int i = 0; i < domains.size(); i++) {
      MeterDomain d = domains.get(i);
      if (d.energyClass() == energyClass && d.role().additive()) {
        sum = Math.addExact(sum, last[i]);
        any = true;
      }
    }
    return any ? sum : -1;
  }

  /** Runs currently being charged. */
  public synchronized Set<String> activeRuns() {
    return Set.copyOf(active.keySet());
  }

  /** Stops the periodic sampler; the meters belong to whoever opened them. */
  @Override
  public void close() {
    ScheduledExecutorService s;
    synchronized (this) {
      s = scheduler;
      scheduler = null;
      if (periodic != null) {
        periodic.cancel(false);
      }
    }
    if (s != null) {
      s.shutdownNow();
    }
  }
}
