package io.sandboxd.executor;

import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.EnergyReading;
import io.sandboxd.metering.MeteredRun;
import io.sandboxd.metering.RunEnergy;
import io.sandboxd.metering.UnitSpec;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * How a unit's energy is measured while it runs: a session per run, read during the run (for the
 * energy budget) and at its end (for the receipt), one entry per dispatchable class.
 */
public interface EnergyModel {
  /** Starts metering a run whose CPU time so far is {@code cpuNanos}. */
  Session begin(String runId, LongSupplier cpuNanos, Set<DeviceClass> classes);

  /** One run's meter. */
  interface Session {
    /** Energy so far (may lag by one meter window). */
    Map<DeviceClass, ClassEnergy> current();

    /** Final energy; call once, at the end of the run. */
    Map<DeviceClass, ClassEnergy> end();
  }

  /**
   * A power-model estimate from CPU time alone, always labelled {@link Provenance#Estimator}: µJ =
   * mW × ns / 10^6. Non-CPU classes read 0 (a WASM unit does not drive them).
   */
  static EnergyModel estimate(long cpuMilliwatts) {
    return (runId, cpuNanos, classes) ->
        new Session() {
          @Override
          public Map<DeviceClass, ClassEnergy> current() {
            Map<DeviceClass, ClassEnergy> out = new TreeMap<>();
            long ns = Math.max(0, cpuNanos.getAsLong());
            for (DeviceClass c : classes) {
              long uj =
                  c == DeviceClass.Cpu ? Math.multiplyExact(cpuMilliwatts, ns) / 1_000_000L : 0;
              out.put(c, new ClassEnergy(uj, Provenance.Estimator, "estimator", 1, 1_000_000));
            }
            return out;
          }

          @Override
          public Map<DeviceClass, ClassEnergy> end() {
            return current();
          }
        };
  }

  /** Energy attributed from the node's meters by CPU-time share (the metering module). */
  static EnergyModel attributed(Attribution attribution) {
    return (runId, cpuNanos, classes) -> {
      MeteredRun run =
          attribution.begin(new UnitSpec(runId, cpuNanos, EnumSet.copyOf(classes), Set.of()));
      return new Session() {
        @Override
        public Map<DeviceClass, ClassEnergy> current() {
          return convert(run.current());
        }

        @Override
        public Map<DeviceClass, ClassEnergy> end() {
          return convert(run.end());
        }
      };
    };
  }

  private static Map<DeviceClass, ClassEnergy> convert(RunEnergy energy) {
    Map<DeviceClass, ClassEnergy> out = new TreeMap<>();
    for (Map.Entry<DeviceClass, EnergyReading> e : energy.readings().entrySet()) {
      out.put(e.getKey(), e.getValue().classEnergy());
    }
    return out;
  }
}
