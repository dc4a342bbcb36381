package io.sandboxd.executor;

import io.sandboxd.enforcer.Grants;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * One execution to perform: a compiled unit, its entry export, the grants in force, the unit's
 * storage root on the host, its environment, (for a replay) the recorded journal to follow, and
 * what a WASI command is given ({@link UnitIo}).
 */
public record UnitRequest(
    String runId,
    CompiledUnit unit,
    String entry,
    Grants grants,
    Optional<Path> storageRoot,
    Map<String, String> env,
    Optional<ReplaySource> replay,
    UnitIo io,
    List<MountedDir> mounts,
    Optional<ParkSignal> park,
    Optional<InstanceSnapshot> resume,
    SortedSet<String> taint) {

  public UnitRequest {
    env = Map.copyOf(env);
    mounts = List.copyOf(mounts);
    taint = Collections.unmodifiableSortedSet(new TreeSet<>(taint));
  }

  /** A request that is never parked and starts from a fresh instance. */
  public UnitRequest(
      String runId,
      CompiledUnit unit,
      String entry,
      Grants grants,
      Optional<Path> storageRoot,
      Map<String, String> env,
      Optional<ReplaySource> replay,
      UnitIo io,
      List<MountedDir> mounts) {
    this(
        runId,
        unit,
        entry,
        grants,
        storageRoot,
        env,
        replay,
        io,
        mounts,
        Optional.empty(),
        Optional.empty(),
        new TreeSet<>());
  }

  /**
   * A request whose WASI command gets no arguments or stdin and the default output caps, and no
   * environment mounts.
   */
  public UnitRequest(
      String runId,
      CompiledUnit unit,
      String entry,
      Grants grants,
      Optional<Path> storageRoot,
      Map<String, String> env,
      Optional<ReplaySource> replay) {
    this(runId, unit, entry, grants, storageRoot, env, replay, UnitIo.NONE, List.of());
  }

  /** A live run with no storage root and an empty environment. */
  public UnitRequest(String runId, CompiledUnit unit, String entry, Grants grants) {
    this(runId, unit, entry, grants, Optional.empty(), Map.of(), Optional.empty());
  }

  /**
   * The request run in an environment's directories, each preopened at its target beside the
   * storage root (WASI guests with a storage root only) and brokered by the same storage globs.
   */
  public UnitRequest withMounts(List<MountedDir> dirs) {
    return new UnitRequest(
        runId, unit, entry, grants, storageRoot, env, replay, io, dirs, park, resume, taint);
  }

  public UnitRequest withStorageRoot(Path root) {
    return new UnitRequest(
        runId,
        unit,
        entry,
        grants,
        Optional.of(root),
        env,
        replay,
        io,
        mounts,
        park,
        resume,
        taint);
  }

  public UnitRequest withEnv(Map<String, String> environment) {
    return new UnitRequest(
        runId,
        unit,
        entry,
        grants,
        storageRoot,
        environment,
        replay,
        io,
        mounts,
        park,
        resume,
        taint);
  }

  public UnitRequest withReplay(ReplaySource source) {
    return new UnitRequest(
        runId,
        unit,
        entry,
        grants,
        storageRoot,
        env,
        Optional.of(source),
        io,
        mounts,
        park,
        resume,
        taint);
  }

  /** The same request giving a WASI command {@code io}'s argv and stdin, under its caps. */
  public UnitRequest withIo(UnitIo unitIo) {
    return new UnitRequest(
        runId, unit, entry, grants, storageRoot, env, replay, unitIo, mounts, park, resume, taint);
  }

  /**
   * The same request, parkable: when {@code signal} is requested the run parks at its next boundary
   * and its result carries the snapshot ({@link ExecutionResult#parked()}).
   */
  public UnitRequest withPark(ParkSignal signal) {
    return new UnitRequest(
        runId,
        unit,
        entry,
        grants,
        storageRoot,
        env,
        replay,
        io,
        mounts,
        Optional.of(signal),
        resume,
        taint);
  }

  /**
   * The same request resuming a parked run: {@code snapshot} (of this request's unit) is restored
   * into a fresh instance before the entry is called again.
   */
  public UnitRequest withResume(InstanceSnapshot snapshot) {
    return new UnitRequest(
        runId,
        unit,
        entry,
        grants,
        storageRoot,
        env,
        replay,
        io,
        mounts,
        park,
        Optional.of(snapshot),
        taint);
  }

  /**
   * The same request starting with {@code labels} as its run's taint: a resumed run goes on with
   * the taint it had when it was parked, so a park never launders it (WIRE.md §2.6).
   */
  public UnitRequest withTaint(Collection<String> labels) {
    return new UnitRequest(
        runId,
        unit,
        entry,
        grants,
        storageRoot,
        env,
        replay,
        io,
        mounts,
        park,
        resume,
        new TreeSet<>(labels));
  }
}
