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
import java.util.function.Consumer;

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

  /**
   * A live run that starts from a fresh instance, never parked: no storage root, environment,
   * replay, WASI arguments or stdin (the default output caps) or mounts, and no taint.
   */
  public UnitRequest(String runId, CompiledUnit unit, String entry, Grants grants) {
    this(
        runId,
        unit,
        entry,
        grants,
        Optional.empty(),
        Map.of(),
        Optional.empty(),
        UnitIo.NONE,
        List.of(),
        Optional.empty(),
        Optional.empty(),
        new TreeSet<>());
  }

  /**
   * The request run in an environment's directories, each preopened at its target beside the
   * storage root (WASI guests with a storage root only) and brokered by the same storage globs.
   */
  public UnitRequest withMounts(List<MountedDir> dirs) {
    return copy(c -> c.mounts = dirs);
  }

  public UnitRequest withStorageRoot(Path root) {
    return copy(c -> c.storageRoot = Optional.of(root));
  }

  public UnitRequest withEnv(Map<String, String> environment) {
    return copy(c -> c.env = environment);
  }

  public UnitRequest withReplay(ReplaySource source) {
    return copy(c -> c.replay = Optional.of(source));
  }

  /** The same request giving a WASI command {@code io}'s argv and stdin, under its caps. */
  public UnitRequest withIo(UnitIo unitIo) {
    return copy(c -> c.io = unitIo);
  }

  /**
   * The same request, parkable: when {@code signal} is requested the run parks at its next boundary
   * and its result carries the snapshot ({@link ExecutionResult#parked()}).
   */
  public UnitRequest withPark(ParkSignal signal) {
    return copy(c -> c.park = Optional.of(signal));
  }

  /**
   * The same request resuming a parked run: {@code snapshot} (of this request's unit) is restored
   * into a fresh instance before the entry is called again.
   */
  public UnitRequest withResume(InstanceSnapshot snapshot) {
    return copy(c -> c.resume = Optional.of(snapshot));
  }

  /**
   * The same request starting with {@code labels} as its run's taint: a resumed run goes on with
   * the taint it had when it was parked, so a park never launders it (WIRE.md §2.6).
   */
  public UnitRequest withTaint(Collection<String> labels) {
    return copy(c -> c.taint = new TreeSet<>(labels));
  }

  /** This request with what {@code change} sets on a copy of its fields. */
  private UnitRequest copy(Consumer<Copy> change) {
    Copy c = new Copy(this);
    change.accept(c);
    return new UnitRequest(
        c.runId,
        c.unit,
        c.entry,
        c.grants,
        c.storageRoot,
        c.env,
        c.replay,
        c.io,
        c.mounts,
        c.park,
        c.resume,
        c.taint);
  }

  /** A request's fields while one of them is changed (the record's own are final). */
  private static final class Copy {
    final String runId;
    final CompiledUnit unit;
    final String entry;
    final Grants grants;
    Optional<Path> storageRoot;
    Map<String, String> env;
    Optional<ReplaySource> replay;
    UnitIo io;
    List<MountedDir> mounts;
    Optional<ParkSignal> park;
    Optional<InstanceSnapshot> resume;
    SortedSet<String> taint;

    Copy(UnitRequest r) {
      runId = r.runId;
      unit = r.unit;
      entry = r.entry;
      grants = r.grants;
      storageRoot = r.storageRoot;
      env = r.env;
      replay = r.replay;
      io = r.io;
      mounts = r.mounts;
      park = r.park;
      resume = r.resume;
      taint = r.taint;
    }
  }
}
