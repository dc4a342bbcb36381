package io.sandboxd.executor;

import java.util.Optional;

/**
 * The run's view of the node's kv store: the store, and the owner its bytes are counted against.
 */
final class RunKv {
  private final Optional<KvStore> store;
  private final String owner;
  private final long quotaBytes;

  RunKv(Optional<KvStore> store, String owner, long quotaBytes) {
    this.store = store;
    this.owner = owner;
    this.quotaBytes = quotaBytes;
  }

  Optional<KvStore> store() {
    return store;
  }

  /** The unit's address: its kv bytes count against its quota. */
  String owner() {
    return owner;
  }

  long quotaBytes() {
    return quotaBytes;
  }
}
