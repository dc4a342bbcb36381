package io.sandboxd.daemon.run;

import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.UnitEnvironment;
import io.sandboxd.executor.UnitRequest;
import io.sandboxd.warmpool.Claim;
import io.sandboxd.warmpool.PoolKey;
import io.sandboxd.warmpool.WarmPools;
import java.nio.file.Path;

/**
 * Starts an admitted run: claims a warm instance when a pool holds one (or instantiates it fresh),
 * binds the offered environment's variables and mounts, and executes it to its outcome.
 */
final class Launch {
  /** What executing gave, and the warm claim it ran on ({@link Claim#cold()} when none). */
  record Result(ExecutionResult execution, Claim claim) {}

  private final Executor executor;
  private final Path storageBase;
  private final OfferedEnvironments environments;
  // Warm instances, when the node keeps pools; null runs every unit cold.
  private volatile WarmPools pools;

  Launch(Executor executor, Path storageBase, OfferedEnvironments environments) {
    this.executor = executor;
    this.storageBase = storageBase;
    this.environments = environments;
  }

  void usePools(WarmPools p) {
    pools = p;
  }

  /** Executes {@code run} as run {@code runId}; its storage is its module's, under the base. */
  Result execute(String runId, AdmittedRun run) {
    Admission.Admitted a = run.admitted();
    UnitRequest req =
        new UnitRequest(runId, a.unit(), a.entry(), a.grants())
            .withStorageRoot(storageBase.resolve(a.unit().address()))
            .withIo(run.io());
    if (run.environment().isEmpty()) {
      Claim claim = claim(a, runId);
      return new Result(executor.execute(req, claim.instance().orElse(null)), claim);
    }
    // A pool holds instances of no environment: a run in one always starts cold.
    UnitEnvironment unitEnv = run.environment().get().unit();
    try (EnvironmentMounts.Prepared dirs = environments.mounts().prepare(unitEnv, runId)) {
      return new Result(
          executor.execute(req.withEnv(unitEnv.containerEnv()).withMounts(dirs.dirs())),
          Claim.cold());
    }
  }

  /**
   * Re-executes recorded run {@code runId} from {@code source}, its journal: always cold, its
   * environment's mounts named but not prepared (a replay reads nothing from them).
   */
  ExecutionResult replay(
      String runId,
      Admission.Admitted a,
      java.util.Optional<OfferedEnvironments.Offer> environment,
      io.sandboxd.executor.UnitIo io,
      io.sandboxd.executor.ReplaySource source) {
    UnitRequest req =
        new UnitRequest(runId, a.unit(), a.entry(), a.grants())
            .withStorageRoot(storageBase.resolve(a.unit().address()))
            .withIo(io);
    if (environment.isPresent()) {
      UnitEnvironment unitEnv = environment.get().unit();
      req =
          req.withEnv(unitEnv.containerEnv())
              .withMounts(environments.mounts().named(unitEnv, runId));
    }
    return executor.execute(req.withReplay(source));
  }

  /** A warm instance for the run when a pool holds one of its module, tier and limits. */
  private Claim claim(Admission.Admitted a, String runId) {
    WarmPools p = pools;
    if (p == null) {
      return Claim.cold();
    }
    return p.claim(
        PoolKey.s2(a.unit().address()),
        a.unit(),
        executor.shape(a.unit(), a.grants().compute()),
        runId);
  }
}
