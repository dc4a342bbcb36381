package io.sandboxd.executor;

/**
 * Where the node hears of a host call that failed on its own side (a full disk, a kv store that
 * cannot write): the unit is answered UNAVAILABLE and learns no more, so the operator must.
 */
@FunctionalInterface
public interface HostFaults {
  /** {@code call} (the import's name) failed for {@code cause}; said on the unit's thread. */
  void failed(String call, Exception cause);

  /** For a host with no log to tell (tests, tools): the unit's answer is all that is said. */
  HostFaults UNHEARD = (call, cause) -> {};
}
