package io.sandboxd.config;

import java.util.EnumSet;
import java.util.Set;

/**
 * What a node-policy rule lets its callers do over the socket (issue 23): every RPC opts in to one
 * of these, and a call whose caller's rule lacks it is refused. Spelled in sandboxd.json as the
 * lowercase {@link #key}.
 */
public enum Permission {
  /** Submit units (single-step or detached). */
  SUBMIT("submit"),
  /** Read, replay, suspend, resume, wait on and export the runs the caller owns. */
  OWN_RUNS("own_runs"),
  /** Act on any run, whoever owns it (an operator). */
  ANY_RUN("any_run"),
  /** Import a run bundle (the run then belongs to the importer). */
  IMPORT("import"),
  /** Export a run the caller may act on, taking it off this node. */
  EXPORT("export"),
  /** Put modules into the node's store by address. */
  MODULES("modules"),
  /** Read the node's store and logs: verify, checkpoints, proofs, fleet aggregates. */
  STORE("store"),
  /** Read the node's status, meters, pools, environments and module list. */
  STATUS("status"),
  /** JCP: hold standing parents, add mint policies, release parents, amend runs. */
  JCP_ISSUER("jcp_issuer"),
  /** JCP: submit under a minted child grant. */
  JCP_HOLDER("jcp_holder"),
  /** JCP: deliver mint events and checkpoint runs. */
  JCP_AGENT("jcp_agent");

  private final String key;

  Permission(String key) {
    this.key = key;
  }

  /** The spelling in sandboxd.json and in refusals. */
  public String key() {
    return key;
  }

  /** The permission spelled {@code key}, or null. */
  public static Permission of(String key) {
    for (Permission p : values()) {
      if (p.key.equals(key)) {
        return p;
      }
    }
    return null;
  }

  /** What a rule without {@code permissions} allows: submit, act on own runs, read status. */
  public static Set<Permission> defaults() {
    return EnumSet.of(SUBMIT, OWN_RUNS, STATUS);
  }

  /** Everything: the modes' rules for root and the daemon's own user. */
  public static Set<Permission> all() {
    return EnumSet.allOf(Permission.class);
  }
}
