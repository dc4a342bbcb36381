package io.sandboxd.executor;

import io.sandboxd.attest.Receipt;
import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.StoragePath;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The run's storage: its root (absent when the unit has none), the grant's I/O rate ceiling, and
 * the read and write counts that become the receipt's {@code io}.
 */
final class RunStorage {
  private final Optional<StorageRoot> root;
  private List<MountRoot> mounts = List.of();
  private final IoCeiling ceiling;
  private final AtomicLong readOps = new AtomicLong();
  private final AtomicLong readBytes = new AtomicLong();
  private final AtomicLong writeBytes = new AtomicLong();

  RunStorage(Enforcer enforcer, Optional<StorageRoot> root) {
    this.root = root;
    this.ceiling = new IoCeiling(enforcer);
  }

  Optional<StorageRoot> root() {
    return root;
  }

  /** An environment's directory as a run holds it: its target without the "/", its live root. */
  record MountRoot(String rel, StorageRoot root) {}

  /** The environment's mounts; set once, before the guest starts. */
  void mounts(List<MountRoot> m) {
    this.mounts = List.copyOf(m);
  }

  List<MountRoot> mounts() {
    return mounts;
  }

  /** The file {@code p} names under the root; empty without a root or outside it. */
  Optional<Path> resolve(StoragePath p) {
    return root.flatMap(r -> r.resolve(p));
  }

  /** The root's directory; only called once a path resolved, so a root exists. */
  Path dir() {
    return root.orElseThrow().root();
  }

  StorageLedger ledger() {
    return root.orElseThrow().ledger();
  }

  /** Whether one more operation reading {@code bytes} keeps within the grant's I/O ceilings. */
  boolean admit(long bytes) {
    return ceiling.admit(bytes);
  }

  void countRead(long bytes) {
    readOps.incrementAndGet();
    readBytes.addAndGet(bytes);
  }

  void countWrite(long bytes) {
    writeBytes.addAndGet(bytes);
  }

  /** This run's part of the receipt. */
  Receipt.IoUse use() {
    return new Receipt.IoUse(readOps.get(), readBytes.get(), writeBytes.get());
  }
}
