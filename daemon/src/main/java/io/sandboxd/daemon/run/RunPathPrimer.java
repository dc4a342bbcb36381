package io.sandboxd.daemon.run;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.UnitCompiler;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs one embedded unit through the run pipeline as the daemon starts to serve, and keeps nothing,
 * so that a client's first run does not wait while the pipeline's classes load and its code runs
 * for the first time (measured without it, that run took about a second longer than the next).
 *
 * <p>The unit is {@code examples/hello.wasm} under {@code examples/hello.grants.json} (it logs,
 * reads the clock and is denied a random number). A compiler of its own compiles it, so the node's
 * module cache never holds it; it runs on the node's executor with its storage in a directory of
 * its own, removed afterwards; it is sealed under an {@linkplain NodeIdentity#ephemeral() ephemeral
 * key}, so nothing it signs could pass for this node's record; and nothing reaches the store.
 */
public final class RunPathPrimer {
  private static final Logger LOG = Logger.getLogger(RunPathPrimer.class.getName());
  // Copies of examples/hello.wasm and its grants (RunPathPrimerTest holds them equal).
  static final String MODULE = "prime.wasm";
  static final String GRANTS = "prime.grants.json";

  private RunPathPrimer() {}

  /**
   * Primes on a daemon thread of its own, the unit's storage under {@code storageBase} (a directory
   * of the node's state: the JVM's temporary directory may be unusable under the service's
   * sandbox), and returns that thread. A failure is logged and otherwise ignored: a client's run
   * meets any real fault with its own answer.
   */
  public static Thread start(Executor executor, Set<DeviceClass> meterable, Path storageBase) {
    Thread t =
        new Thread(
            () -> {
              long t0 = System.nanoTime();
              try {
                RunRecord r = prime(executor, meterable, storageBase);
                LOG.info(
                    "run path primed in "
                        + (System.nanoTime() - t0) / 1_000_000
                        + " ms: one embedded unit admitted, run and sealed ("
                        + r.outcomeJson()
                        + "), nothing stored");
              } catch (RuntimeException e) {
                LOG.log(Level.INFO, "run path not primed: " + e, e);
              }
            },
            "sandboxd-prime");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /**
   * Admits, runs and seals the embedded unit on {@code executor}, its storage under {@code
   * storageBase}, which is removed before (what a crash left) and after; returns the record built,
   * which is stored nowhere.
   */
  static RunRecord prime(Executor executor, Set<DeviceClass> meterable, Path storageBase) {
    try {
      EnvironmentMounts.removeTree(storageBase);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try {
      RunSupervisor pipeline =
          new RunSupervisor(
              new Admission(new UnitCompiler(1), meterable),
              new Launch(executor, storageBase, OfferedEnvironments.none()),
              new RecordSealer(NodeIdentity.ephemeral()),
              new RunIds(),
              null);
      return pipeline.sealUnstored(
          Submission.of(
              resource(MODULE), new String(resource(GRANTS), StandardCharsets.UTF_8), "run"));
    } finally {
      try {
        EnvironmentMounts.removeTree(storageBase);
      } catch (IOException e) {
        LOG.log(Level.FINE, "primer's storage " + storageBase + " not removed", e);
      }
    }
  }

  static byte[] resource(String name) {
    try (InputStream in = RunPathPrimer.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource " + name + " missing from the daemon's jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
