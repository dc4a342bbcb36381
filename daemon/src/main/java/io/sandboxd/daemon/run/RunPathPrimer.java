package io.sandboxd.daemon.run;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.daemon.NodeIdentity;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitThread;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs one embedded unit through the run pipeline as the daemon starts to serve, and keeps nothing,
 * so that a client's first run does not wait while the pipeline's classes load and its code runs
 * for the first time (measured without it, that run took about a second longer than the next); then
 * runs it again while no client's run is in flight, up to a budget, so that the JIT compiles the
 * path on its runs rather than on the first clients'.
 *
 * <p>The unit is {@code examples/hello.wasm} under {@code examples/hello.grants.json} (it logs,
 * reads the clock and is denied a random number). A compiler of its own compiles it, so the node's
 * module cache never holds it; it runs on the node's executor with its storage in a directory of
 * its own, removed afterwards; it is sealed under an {@linkplain
 * NodeIdentity#ephemeral(Ed25519Engine) ephemeral key} that signs through the node's engine (the
 * code the JIT is to warm), so nothing it signs could pass for this node's record; and nothing
 * reaches the store.
 */
public final class RunPathPrimer {
  private static final Logger LOG = Logger.getLogger(RunPathPrimer.class.getName());
  // Copies of examples/hello.wasm and its grants (RunPathPrimerTest holds them equal).
  static final String MODULE = "prime.wasm";
  static final String GRANTS = "prime.grants.json";

  /** The most runs one prime makes, and the most wall time it takes, while no client runs. */
  static final int MAX_RUNS = 1_000;

  static final long BUDGET_MS = 2_000;

  /** What a prime did: the runs it made, and the record the last one built (stored nowhere). */
  record Primed(int runs, RunRecord last) {}

  private RunPathPrimer() {}

  /**
   * Primes on a daemon thread of its own, the unit's storage under {@code storageBase} (a directory
   * of the node's state: the JVM's temporary directory may be unusable under the service's
   * sandbox), giving way as soon as {@code clientsRun} says a client's run is in flight; returns
   * that thread. A failure is logged and otherwise ignored: a client's run meets any real fault
   * with its own answer.
   */
  public static Thread start(
      Executor executor,
      Ed25519Engine engine,
      Set<DeviceClass> meterable,
      Path storageBase,
      BooleanSupplier clientsRun) {
    // A unit thread, as the handlers' are: its runs go the way a client's go, in place.
    Thread t =
        UnitThread.factory("sandboxd-prime-")
            .newThread(() -> primeAndLog(executor, engine, meterable, storageBase, clientsRun));
    t.start();
    return t;
  }

  private static void primeAndLog(
      Executor executor,
      Ed25519Engine engine,
      Set<DeviceClass> meterable,
      Path storageBase,
      BooleanSupplier clientsRun) {
    long t0 = System.nanoTime();
    try {
      Primed p = prime(executor, engine, meterable, storageBase, MAX_RUNS, BUDGET_MS, clientsRun);
      LOG.info(
          "run path primed in "
              + (System.nanoTime() - t0) / 1_000_000
              + " ms: "
              + p.runs()
              + " run(s) of an embedded unit admitted, run and sealed (the last "
              + p.last().outcomeJson()
              + "), nothing stored");
    } catch (RuntimeException e) {
      // Also what a stop while priming ends in (the executor shut under it): one line, the trace
      // only for whoever asks for it.
      LOG.info("run path not primed: " + e);
      LOG.log(Level.FINE, "run path not primed", e);
    }
  }

  /**
   * Admits, runs and seals the embedded unit on {@code executor}, its storage under {@code
   * storageBase}, which is removed before (what a crash left) and after: once, then again while
   * fewer than {@code maxRuns} ran, {@code budgetMs} has not passed and {@code stop} says no.
   */
  static Primed prime(
      Executor executor,
      Ed25519Engine engine,
      Set<DeviceClass> meterable,
      Path storageBase,
      int maxRuns,
      long budgetMs,
      BooleanSupplier stop) {
    long deadline = System.nanoTime() + budgetMs * 1_000_000;
    try {
      EnvironmentMounts.removeTree(storageBase);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // Its own compiler, closed afterwards: its thread does not linger for its idle minute.
    try (UnitCompiler compiler = new UnitCompiler(1)) {
      RunSupervisor pipeline =
          new RunSupervisor(
              new Admission(compiler, meterable),
              new Launch(executor, storageBase, OfferedEnvironments.none()),
              new RecordSealer(NodeIdentity.ephemeral(engine)),
              new RunIds(),
              null);
      Submission s =
          Submission.of(
              resource(MODULE), new String(resource(GRANTS), StandardCharsets.UTF_8), "run");
      RunRecord last = pipeline.sealUnstored(s);
      int runs = 1;
      // The runs after the first bring the path's code to the JIT's thresholds before a client's
      // runs have to, on a node still idle; the first client's run stops them.
      while (runs < maxRuns && System.nanoTime() < deadline && !stop.getAsBoolean()) {
        last = pipeline.sealUnstored(s);
        runs++;
      }
      return new Primed(runs, last);
    } finally {
      try {
        EnvironmentMounts.removeTree(storageBase);
      } catch (IOException e) {
        LOG.log(Level.FINE, "primer's storage " + storageBase + " not removed", e);
      }
    }
  }

  /**
   * {@code RunPathPrimer DIR}: writes the primer's unit and grants into DIR ({@value #MODULE},
   * {@value #GRANTS}) and prints DIR. build-start-cache submits them through a training daemon's
   * socket, so that a JVM that keeps method profiles (an AOT cache, JDK 25 and later) learns the
   * whole path a client's run takes, gRPC and the store included.
   */
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: RunPathPrimer DIR");
      System.exit(2);
    }
    Path dir = Files.createDirectories(Path.of(args[0]));
    Files.write(dir.resolve(MODULE), resource(MODULE));
    Files.write(dir.resolve(GRANTS), resource(GRANTS));
    System.out.println(dir);
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
