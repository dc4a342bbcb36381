package io.sandboxd.executor;

import java.nio.file.Path;

/**
 * One directory of a run's environment: the guest path it is preopened at ({@code /data}) and the
 * host directory behind it.
 */
public record MountedDir(String target, Path host) {
  public MountedDir {
    UnitEnvironment.checkTarget(target);
    if (!host.isAbsolute()) {
      throw new IllegalArgumentException(target + ": host directory " + host + " is not absolute");
    }
  }

  /** The target as a storage path: without the leading "/", as the globs see it. */
  String rel() {
    return target.substring(1);
  }
}
