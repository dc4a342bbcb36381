package io.sandboxd.daemon;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.enforcer.Acceptance;
import io.sandboxd.enforcer.GrantAcceptance;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import io.sandboxd.enforcer.HostProfile;
import io.sandboxd.enforcer.SecretBindings;
import io.sandboxd.enforcer.Tier;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether a submission may run here: refuses malformed input with an error naming the
 * field, and declines (with a signed record) grants this node cannot honour: a device class it
 * cannot meter (rule 2) or a tier floor above S2. A grant that sends a node secret anywhere the
 * node's configuration did not bind it to is refused outright.
 */
public final class Admission {
  private final UnitCompiler compiler;
  private final HostProfile host;
  private final SecretBindings secrets;

  /**
   * Admission on a node that runs units at S2 and can meter {@code meterable}. A WASM unit can only
   * be confined to CPU work, so a class is grantable when it is metered (Cpu always is, at worst by
   * the labelled estimate).
   */
  public Admission(UnitCompiler compiler, Set<DeviceClass> meterable) {
    this(compiler, meterable, SecretBindings.none());
  }

  /** As above, on a node whose secrets may go only where {@code secrets} binds them. */
  public Admission(UnitCompiler compiler, Set<DeviceClass> meterable, SecretBindings secrets) {
    this.compiler = compiler;
    this.secrets = secrets;
    java.util.EnumSet<DeviceClass> m = java.util.EnumSet.of(DeviceClass.Cpu);
    m.addAll(meterable);
    this.host = new HostProfile(Tier.S2, java.util.EnumSet.allOf(DeviceClass.class), m);
  }

  /**
   * An admitted submission: parsed grants, a compiled unit, and the CPU time compiling it took for
   * this submission (0 when the node had it compiled already), which this run pays for.
   */
  public record Admitted(
      Grants grants, CompiledUnit unit, String entry, byte[] module, long compileCpuNanos) {}

  public Admitted admit(byte[] module, String grantsJson, String entry) {
    Grants grants;
    try {
      grants = Grants.parse(grantsJson.getBytes(StandardCharsets.UTF_8));
      secrets.check(grants.network());
    } catch (GrantsException | io.sandboxd.attest.AttestException e) {
      throw new AdmissionException("grants: " + e.getMessage(), e);
    }
    UnitCompiler.Compilation compiled;
    try {
      compiled = compiler.compileMetered(module);
    } catch (UnitException ex) {
      throw new AdmissionException(ex.getMessage(), ex);
    }
    CompiledUnit unit = compiled.unit();
    String chosen = defaultEntry(unit, entry);
    try {
      // The one place the entry is checked: the executor trusts what admission let through.
      UnitCompiler.checkEntry(unit, chosen);
    } catch (UnitException ex) {
      throw new AdmissionException(ex.getMessage(), ex);
    }
    return new Admitted(grants, unit, chosen, module, compiled.cpuNanos());
  }

  /** The entry to call: the one asked for, else `run` (our ABI), else `_start` (a WASI command). */
  static String defaultEntry(CompiledUnit unit, String entry) {
    if (entry != null && !entry.isEmpty()) {
      return entry;
    }
    List<String> exports = UnitCompiler.exportNames(unit);
    return exports.contains("_start") && !exports.contains("run") ? "_start" : "run";
  }

  /** Why this node declines the grant (rule 2, tier floors), or empty when it can run it. */
  public Optional<String> declineReason(Grants grants) {
    Acceptance a = GrantAcceptance.decide(grants, host);
    return a instanceof Acceptance.Declined d ? Optional.of(d.reason()) : Optional.empty();
  }
}
