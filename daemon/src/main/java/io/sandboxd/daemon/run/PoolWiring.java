package io.sandboxd.daemon.run;

import io.sandboxd.attest.Provenance;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.config.Pools;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.ModuleStore;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitException;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.warmpool.IdlePower;
import io.sandboxd.warmpool.MeteredIdlePower;
import io.sandboxd.warmpool.PoolClock;
import io.sandboxd.warmpool.PoolPolicy;
import io.sandboxd.warmpool.WarmPools;
import java.lang.management.ManagementFactory;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Makes the node's warm pools from its configuration: the idle draw from its meters (or the
 * estimate), eviction records sealed by the {@link RecordSealer} and stored, configured pools for
 * the modules the node holds (a warning and no pool for one it does not), and the refill thread
 * started.
 */
public final class PoolWiring {
  private static final Logger LOG = Logger.getLogger(PoolWiring.class.getName());

  private PoolWiring() {}

  public static WarmPools start(
      DaemonConfig config,
      DiscoveredMeters meters,
      Attribution attribution,
      RunStore store,
      ModuleStore modules,
      RecordSealer sealer,
      UnitCompiler compiler,
      Executor executor) {
    Pools p = config.pools();
    PoolPolicy policy =
        new PoolPolicy(
            p.configured().stream()
                .map(
                    m -> new PoolPolicy.Configured(m.module(), m.minIdle(), m.maxIdle(), m.ttlMs()))
                .toList(),
            new PoolPolicy.Adaptive(
                p.adaptive().submits(),
                p.adaptive().windowMs(),
                p.adaptive().minIdle(),
                p.adaptive().maxIdle(),
                p.adaptive().ttlMs(),
                p.adaptive().minWarmupUs()),
            p.maxIdleBytes(),
            nodeMemoryBytes(),
            p.tickMs());
    IdlePower idle = MeteredIdlePower.of(meters, attribution, p.idleEstimateMw());
    WarmPools pools =
        new WarmPools(
            policy,
            idle,
            config.metering().estimatorCpuMilliwatts(),
            Provenance.Estimator,
            records -> store.appendEvictions(sealer.evictions(records)),
            PoolClock.SYSTEM);
    for (String warning :
        pools.configure(address -> held(store, modules, compiler, address), executor::nodeShape)) {
      LOG.warning(warning);
    }
    pools.busyWhen(executor::saturated);
    pools.start();
    return pools;
  }

  /**
   * The compiled module at {@code address}, when the node holds its bytes: in the module store, or
   * as the module of a stored run.
   */
  private static Optional<CompiledUnit> held(
      RunStore store, ModuleStore modules, UnitCompiler compiler, String address) {
    Optional<byte[]> bytes =
        modules.holds(address) ? Optional.of(modules.get(address)) : store.module(address);
    if (bytes.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(compiler.compile(bytes.get()));
    } catch (UnitException e) {
      throw new IllegalStateException("does not compile: " + e.getMessage(), e);
    }
  }

  /** The node's physical memory, over which its idle draw is apportioned. */
  public static long nodeMemoryBytes() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      long total = os.getTotalMemorySize();
      if (total > 0) {
        return total;
      }
    }
    return Runtime.getRuntime().maxMemory();
  }
}
