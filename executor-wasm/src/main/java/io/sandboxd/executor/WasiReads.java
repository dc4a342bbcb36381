package io.sandboxd.executor;

import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.StoragePath;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The storage paths one WASI call read from, as the origin labels they add to the run's taint
 * (WIRE.md §3.3). A WASI guest reaches the same files as {@code storage_read} does, so a read
 * through {@code path_open}/{@code fd_read} must taint exactly as that read would; otherwise a
 * module importing both namespaces could launder untrusted bytes into {@code sandbox.egress}.
 * Filled while one call runs on the guest's thread and drained by the journal wrapper after it.
 */
final class WasiReads {
  private final List<String> paths = new ArrayList<>();

  /** Notes that the running call read (data, a listing, metadata or a link) at {@code rel}. */
  void read(String rel) {
    if (rel != null && !rel.isEmpty()) {
      paths.add(rel);
    }
  }

  /** Forgets what an earlier call noted (one that failed or was not journaled). */
  void clear() {
    paths.clear();
  }

  /** The labels the noted paths add under {@code enforcer}'s flow grant; then forgets them. */
  Set<String> drain(Enforcer enforcer) {
    Set<String> labels = new TreeSet<>();
    for (String rel : paths) {
      StoragePath p;
      try {
        p = StoragePath.parse(rel);
      } catch (RuntimeException e) {
        // The broker only hands out normalized paths; one that is not names no glob either.
        continue;
      }
      labels.addAll(enforcer.taints(new FlowSource.StorageRead(p)));
    }
    paths.clear();
    return labels;
  }
}
