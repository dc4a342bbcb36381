package io.sandboxd.executor;

/**
 * Where the node hears what its units cannot tell it: a host call that failed on the node's side (a
 * full disk, a kv store that cannot write), or a write refused to keep the disk's reserve. The unit
 * gets only a status, so the operator must hear the rest.
 */
@FunctionalInterface
public interface HostFaults {
  /**
   * {@code call} (the import, or the store refused) and what happened; said on the unit's thread.
   */
  void told(String call, String what);

  /** For a host with no log to tell (tests, tools): the unit's answer is all that is said. */
  HostFaults UNHEARD = (call, what) -> {};
}
