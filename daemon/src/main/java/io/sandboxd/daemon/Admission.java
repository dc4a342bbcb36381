package io.sandboxd.daemon;

import io.sandboxd.enforcer.DeviceClass;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether a submission may run here: refuses malformed input with an error naming the
 * field, and declines (with a signed record) grants this node cannot honour: a device class it
 * cannot meter (rule 2) or a tier floor above S2.
 */
public final class Admission {
  private final UnitCompiler compiler;
  private final Set<DeviceClass> meterable;

  public Admission(UnitCompiler compiler, Set<DeviceClass> meterable) {
    this.compiler = compiler;
    this.meterable = Set.copyOf(meterable);
  }

  /** An admitted submission: parsed grants and a compiled unit. */
  public record Admitted(Grants grants, CompiledUnit unit, String entry, byte[] module) {}

  public Admitted admit(byte[] module, String grantsJson, String entry) {
    Grants grants;
    try {
      grants = Grants.parse(grantsJson.getBytes(StandardCharsets.UTF_8));
    } catch (GrantsException | io.sandboxd.attest.AttestException e) {
      throw new AdmissionException("grants: " + e.getMessage(), e);
    }
    String e = entry == null || entry.isEmpty() ? "run" : entry;
    CompiledUnit unit;
    try {
      unit = compiler.compile(module);
    } catch (UnitException ex) {
      throw new AdmissionException(ex.getMessage(), ex);
    }
    return new Admitted(grants, unit, e, module);
  }

  /** Why this node declines the grant, or empty when it can run it. */
  public Optional<String> declineReason(Grants grants) {
    for (DeviceClass c : grants.compute().devices()) {
      if (c != DeviceClass.Cpu && !meterable.contains(c)) {
        return Optional.of(
            "device class " + c.name() + " is granted but this node cannot meter it (rule 2)");
      }
    }
    return Optional.empty();
  }
}
