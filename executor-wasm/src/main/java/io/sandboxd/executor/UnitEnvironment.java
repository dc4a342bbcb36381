package io.sandboxd.executor;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * What a unit's run needs of a declared environment (WIRE.md §2.7, Q18): the name the node offers
 * it under, its manifest address, {@code container_env} (the WASI environment) and its mounts as
 * (source, target, kind), each preopened at its target.
 */
public record UnitEnvironment(
    String name, String address, Map<String, String> containerEnv, List<Mount> mounts) {
  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");

  /** How a mount's directory is made (the manifest's {@code kind}). */
  public enum Kind {
    /** A host directory the node's configuration allows binding. */
    bind,
    /** A named directory under the state directory that persists across runs. */
    volume,
    /** A fresh directory, removed after the run. */
    tmpfs
  }

  /** One mount as the manifest core has it. */
  public record Mount(String source, String target, Kind kind) {
    public Mount {
      checkTarget(target);
      if (source == null || source.indexOf('\0') >= 0) {
        throw new IllegalArgumentException("mount " + target + ": bad source");
      }
    }
  }

  public UnitEnvironment {
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("environment name is empty");
    }
    if (address == null || !HEX64.matcher(address).matches()) {
      throw new IllegalArgumentException(
          "environment " + name + ": address must be 64 lowercase hex");
    }
    containerEnv = java.util.Collections.unmodifiableMap(new TreeMap<>(containerEnv));
    for (Map.Entry<String, String> e : containerEnv.entrySet()) {
      String k = e.getKey();
      if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0) {
        throw new IllegalArgumentException(
            "environment " + name + ": container_env name \"" + k + "\" is not a variable name");
      }
      if (e.getValue().indexOf('\0') >= 0) {
        throw new IllegalArgumentException(
            "environment " + name + ": container_env." + k + " holds a NUL byte");
      }
    }
    mounts = List.copyOf(mounts);
    Set<String> targets = new HashSet<>();
    for (Mount m : mounts) {
      if (!targets.add(m.target())) {
        throw new IllegalArgumentException("environment " + name + ": two mounts at " + m.target());
      }
    }
  }

  /**
   * A mount target is an absolute guest path other than "/" with no empty, "." or ".." segment: the
   * broker joins it to the storage root's namespace lexically, so it must be in normal form.
   */
  static void checkTarget(String target) {
    if (target == null || !target.startsWith("/") || target.length() < 2) {
      throw new IllegalArgumentException(
          "mount target " + target + ": must be an absolute path below /");
    }
    for (String seg : target.substring(1).split("/", -1)) {
      if (seg.isEmpty() || seg.equals(".") || seg.equals("..") || seg.indexOf('\0') >= 0) {
        throw new IllegalArgumentException(
            "mount target " + target + ": not a normal path (empty, \".\" or \"..\" segment)");
      }
    }
  }
}
