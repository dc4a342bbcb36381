package io.sandboxd.daemon.durable;

import io.sandboxd.daemon.run.InputTooLargeException;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.SnapshotStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Whether the node's store has room for an imported run (issue 23 item 6): the run store's file and
 * WAL plus the snapshot store's blobs, and what the import adds (its module and the snapshot blobs
 * not already held), must stay within {@code store.max_bytes}; otherwise the import is refused,
 * naming the limit, before anything is written.
 */
public final class StoreRoom {
  /** No limit (embedding and unit tests). */
  static final StoreRoom UNLIMITED = new StoreRoom(null, null, Long.MAX_VALUE);

  private final RunStore store;
  private final Path snapshotDir;
  private final long maxBytes;

  public StoreRoom(RunStore store, Path snapshotDir, long maxBytes) {
    this.store = store;
    this.snapshotDir = snapshotDir;
    this.maxBytes = maxBytes;
  }

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
    long runStore = store.sizeBytes();
    long snapshots = directoryBytes(snapshotDir);
    long after = runStore + snapshots + adds;
    if (after > maxBytes) {
      throw new InputTooLargeException(
          "store.max_bytes: importing run "
              + runId
              + " adds "
              + adds
              + " bytes (module and snapshot blobs not yet held) to the "
              + (runStore + snapshots)
              + " the store holds (run store "
              + runStore
              + ", snapshots "
              + snapshots
              + "), over store.max_bytes "
              + maxBytes
              + "; nothing imported");
    }
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
