package io.sandboxd.warmpool;

import java.util.Optional;

/**
 * What a pool holds instances of: a module address, the environment manifest address they were made
 * for (or none), and the tier they run at. A claim is served only by the pool with its exact key.
 */
public record PoolKey(String module, Optional<String> manifest, String tier) {
  public PoolKey {
    if (!module.matches("[0-9a-f]{64}")) {
      throw new IllegalArgumentException("pool module: expected 64 lowercase hex, got " + module);
    }
    manifest.ifPresent(
        m -> {
          if (!m.matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException("pool manifest: expected 64 lowercase hex");
          }
        });
  }

  /** A pool of {@code module} with no environment at tier S2 (what every sandboxd unit runs at). */
  public static PoolKey s2(String module) {
    return new PoolKey(module, Optional.empty(), "S2");
  }

  /** The pool's name in signed records: {@code <module>/<manifest or none>/<tier>}. */
  public String id() {
    return module + "/" + manifest.orElse("none") + "/" + tier;
  }
}
