package io.sandboxd.daemon.durable;

import io.sandboxd.attest.Outcome;
import io.sandboxd.daemon.run.InputTooLargeException;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.SnapshotStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Whether the node's store has room for an imported run or a park (issue 23 items 6 and 2): the run
 * store's file and WAL plus the snapshot store's blobs, and what the import or park adds (an
 * import's module, and the snapshot blobs not already held), must stay within {@code
 * store.max_bytes}; otherwise it is refused, naming the limit and the sizes, before anything is
 * written.
 */
public record StoreRoom(RunStore store, Path snapshotDir, long maxBytes) {
  /** No limit (embedding and unit tests). */
  static final StoreRoom UNLIMITED = new StoreRoom(null, null, Long.MAX_VALUE);

  /**
   * Refuses (RESOURCE_EXHAUSTED) an import of {@code module} and {@code blobs} that does not fit.
   */
  void admitImport(String runId, byte[] module, Map<String, byte[]> blobs, SnapshotStore held) {
    if (maxBytes == Long.MAX_VALUE) {
      return;
    }
    long adds = module.length;
    for (Map.Entry<String, byte[]> e : blobs.entrySet()) {
      if (!held.has(e.getKey())) {
        adds += e.getValue().length;
      }
    }
    Optional<String> over =
        overBy("importing run " + runId, adds, " (module and snapshot blobs not yet held)");
    if (over.isPresent()) {
      throw new InputTooLargeException(over.get() + "; nothing imported");
    }
  }

  /**
   * Why a park of {@code runId} that adds {@code adds} bytes of snapshot blobs does not fit, or
   * empty when it does.
   */
  Optional<String> parkRefusal(String runId, long adds) {
    if (maxBytes == Long.MAX_VALUE) {
      return Optional.empty();
    }
    return overBy("parking run " + runId, adds, " of snapshot blobs not yet held")
        .map(over -> over + "; nothing of the snapshot was written");
  }

  /**
   * How {@code doing} ({@code adds} bytes, {@code what}) would take the store over {@code
   * store.max_bytes}, naming the sizes; empty when it fits.
   */
  private Optional<String> overBy(String doing, long adds, String what) {
    long runStore = store.sizeBytes();
    long snapshots = directoryBytes(snapshotDir);
    if (runStore + snapshots + adds <= maxBytes) {
      return Optional.empty();
    }
    return Optional.of(
        "store.max_bytes: "
            + doing
            + " adds "
            + adds
            + " bytes"
            + what
            + " to the "
            + (runStore + snapshots)
            + " the store holds (run store "
            + runStore
            + ", snapshots "
            + snapshots
            + "), over store.max_bytes "
            + maxBytes);
  }

  /** {@code ran} ended instead of parked: failed, {@code why} its outcome, nothing frozen kept. */
  static ExecutionResult ended(ExecutionResult ran, String why) {
    return new ExecutionResult(
        new Outcome.Failed(why),
        ran.cpuTimeNanos(),
        ran.wallNanos(),
        ran.startedMs(),
        ran.endedMs(),
        ran.memoryPeakBytes(),
        ran.energy(),
        ran.log(),
        ran.journal(),
        ran.journalBlobs(),
        ran.journalRoot(),
        ran.clockGranted(),
        ran.clockConstantMs(),
        ran.hostCalls(),
        ran.io(),
        ran.taint(),
        ran.replayDivergence(),
        ran.stdio(),
        ran.exitStatus(),
        ran.exited(),
        Optional.empty());
  }

  private static long directoryBytes(Path dir) {
    if (dir == null || !Files.isDirectory(dir)) {
      return 0;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files.filter(Files::isRegularFile).mapToLong(StoreRoom::size).sum();
    } catch (IOException e) {
      throw new io.sandboxd.daemon.store.StoreException(
          "snapshots: cannot measure " + dir + ": " + e.getMessage(), e);
    }
  }

  private static long size(Path p) {
    try {
      return Files.size(p);
    } catch (IOException e) {
      return 0; // removed while measured
    }
  }
}
