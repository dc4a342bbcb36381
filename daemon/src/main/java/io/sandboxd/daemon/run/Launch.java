package io.sandboxd.daemon.run;

import io.sandboxd.executor.Consumed;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.InstanceSnapshot;
import io.sandboxd.executor.ParkSignal;
import io.sandboxd.executor.ReplaySource;
import io.sandboxd.executor.UnitEnvironment;
import io.sandboxd.executor.UnitIo;
import io.sandboxd.executor.UnitRequest;
import io.sandboxd.warmpool.Claim;
import io.sandboxd.warmpool.PoolKey;
import io.sandboxd.warmpool.WarmPools;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * Starts an admitted run: claims a warm instance when a pool holds one (or instantiates it fresh),
 * binds the offered environment's variables and mounts, and executes it to its outcome. A
 * submission, a replay and every segment of a durable run (its first, and each resume) start here.
 */
public final class Launch {
  /** What executing gave, and the warm claim it ran on ({@link Claim#cold()} when none). */
  record Result(ExecutionResult execution, Claim claim) {}

  /**
   * What one segment of a durable run brings to its launch: the run's own storage root, the signal
   * that parks it, the taint and consumption earlier segments carried, and the snapshot it resumes
   * (empty for the first segment).
   */
  public record Segment(
      Path storageRoot,
      ParkSignal park,
      List<String> taint,
      Consumed before,
      Optional<InstanceSnapshot> resume) {
    public Segment {
      taint = List.copyOf(taint);
    }
  }

  private final Executor executor;
  private final Path storageBase;
  private final OfferedEnvironments environments;
  // Warm instances, when the node keeps pools; null runs every unit cold.
  private volatile WarmPools pools;

  /**
   * Launches on {@code executor}; a submitted unit's storage lives under {@code storageBase/<unit
   * address>}, its environment is one of {@code environments}.
   */
  public Launch(Executor executor, Path storageBase, OfferedEnvironments environments) {
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
    UnitRequest req = request(runId, a).withIo(run.io());
    if (run.environment().isEmpty()) {
      Claim claim = claim(a, runId);
      return new Result(executor.execute(req, claim.instance().orElse(null)), claim);
    }
    // A pool holds instances of no environment: a run in one always starts cold.
    return new Result(
        inEnvironment(req, run.environment().get(), runId, executor::execute), Claim.cold());
  }

  /**
   * Executes one segment of durable run {@code runId} in {@code environment} until its entry ends
   * or it parks at a boundary: always cold (a resumed segment restores its snapshot), and its
   * budgets are the run's, not the segment's, so a resumed one gets what earlier ones left.
   */
  public ExecutionResult segment(
      String runId,
      Admission.Admitted a,
      Optional<OfferedEnvironments.Offer> environment,
      Segment s) {
    UnitRequest req =
        new UnitRequest(runId, a.unit(), a.entry(), a.grants())
            .withStorageRoot(s.storageRoot())
            .withPark(s.park())
            .withTaint(s.taint());
    if (s.resume().isPresent()) {
      req = req.withResume(s.resume().get());
    }
    Function<UnitRequest, ExecutionResult> run = r -> executor.execute(r, s.before());
    return environment.isEmpty()
        ? run.apply(req)
        : inEnvironment(req, environment.get(), runId, run);
  }

  /**
   * Re-executes recorded run {@code runId} from {@code source}, its journal: always cold, its
   * environment's mounts named but not prepared (a replay reads nothing from them).
   */
  ExecutionResult replay(
      String runId,
      Admission.Admitted a,
      Optional<OfferedEnvironments.Offer> environment,
      UnitIo io,
      ReplaySource source) {
    UnitRequest req = request(runId, a).withIo(io);
    if (environment.isPresent()) {
      UnitEnvironment unitEnv = environment.get().unit();
      req =
          req.withEnv(unitEnv.containerEnv())
              .withMounts(environments.mounts().named(unitEnv, runId));
    }
    return executor.execute(req.withReplay(source));
  }

  /** A submitted unit's request: its storage is its module's, under the base. */
  private UnitRequest request(String runId, Admission.Admitted a) {
    return new UnitRequest(runId, a.unit(), a.entry(), a.grants())
        .withStorageRoot(storageBase.resolve(a.unit().address()));
  }

  /** Runs {@code req} with {@code env}'s variables bound and its mounts prepared while it runs. */
  private ExecutionResult inEnvironment(
      UnitRequest req,
      OfferedEnvironments.Offer env,
      String runId,
      Function<UnitRequest, ExecutionResult> run) {
    UnitEnvironment unitEnv = env.unit();
    try (EnvironmentMounts.Prepared dirs = environments.mounts().prepare(unitEnv, runId)) {
      return run.apply(req.withEnv(unitEnv.containerEnv()).withMounts(dirs.dirs()));
    }
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
