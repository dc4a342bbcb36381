package io.sandboxd.metering;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * A unit's energy so far (or in total, once ended), one reading per class it was granted plus Cpu.
 *
 * @param readings keyed by class, iterated in declaration order
 * @param samples sampling passes that fell inside the run
 */
public record RunEnergy(String runId, Map<DeviceClass, EnergyReading> readings, long samples) {
  public RunEnergy {
    readings = Collections.unmodifiableMap(new EnumMap<>(readings));
  }

  /** Sum over classes: the figure compared against the grant's {@code energy_budget_uj}. */
  public long totalUj() {
    long total = 0;
    for (EnergyReading r : readings.values()) {
      total = Math.addExact(total, r.uj());
    }
    return total;
  }

  /** The worst provenance over the classes (jouleclaw rule: worst, not best). */
  public Provenance provenance() {
    Provenance worst = Provenance.HwShunt;
    for (EnergyReading r : readings.values()) {
      worst = Provenance.worst(worst, r.provenance());
    }
    return worst;
  }

  /** Whether the energy budget is breached: strictly more than the budget (WIRE.md §2.1). */
  public boolean exceeds(long energyBudgetUj) {
    return totalUj() > energyBudgetUj;
  }
}
