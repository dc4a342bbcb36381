package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.JsonReader;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * Device classes a unit may dispatch to (Cpu is implicit and never inserted, Q4) and its hard
 * budgets in µJ, ms and bytes.
 */
public record ComputeGrant(
    Set<DeviceClass> devices, long energyBudgetUj, long cpuTimeMs, long memoryBytes) {

  private static final Set<String> FIELDS =
      Set.of("devices", "energy_budget_uj", "cpu_time_ms", "memory_bytes");

  public ComputeGrant {
    EnumSet<DeviceClass> copy = EnumSet.noneOf(DeviceClass.class);
    copy.addAll(devices);
    devices = Collections.unmodifiableSet(copy);
    requireRange("energy_budget_uj", energyBudgetUj);
    requireRange("cpu_time_ms", cpuTimeMs);
    requireRange("memory_bytes", memoryBytes);
  }

  private static void requireRange(String field, long v) {
    if (v < 0 || v > JsonReader.MAX_U64) {
      throw new IllegalArgumentException(field + " " + v + " outside [0, 2^53-1]");
    }
  }

  /** No devices beyond Cpu, zero budgets. */
  public static ComputeGrant empty() {
    return new ComputeGrant(Set.of(), 0, 0, 0);
  }

  static ComputeGrant parse(JsonNode node, String path) {
    JsonReader f = JsonReader.of(node, path, FIELDS, GrantsException.FAULT);
    Set<DeviceClass> devices = EnumSet.noneOf(DeviceClass.class);
    devices.addAll(f.list("devices", GrantsException.element(DeviceClass::fromJson)));
    return new ComputeGrant(
        devices, f.u64("energy_budget_uj", 0), f.u64("cpu_time_ms", 0), f.u64("memory_bytes", 0));
  }

  ObjectNode toJson() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    // EnumSet iterates in declaration order
    Grants.putTexts(o, "devices", devices, DeviceClass::jsonName);
    o.put("energy_budget_uj", energyBudgetUj);
    o.put("cpu_time_ms", cpuTimeMs);
    o.put("memory_bytes", memoryBytes);
    return o;
  }
}
