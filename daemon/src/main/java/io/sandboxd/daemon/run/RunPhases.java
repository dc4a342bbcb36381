package io.sandboxd.daemon.run;

/**
 * Hears how long each phase of a submitted run took on its handler thread: where a run's latency
 * goes (a slow disk shows in {@link Phase#STORE}, a heavy unit in {@link Phase#LAUNCH}).
 */
@FunctionalInterface
public interface RunPhases {
  /** The phases of a submitted run, in the order it passes them. */
  enum Phase {
    /** Every admission check, the module found or compiled. */
    ADMIT,
    /** A warm claim or an instantiation, and the execution. Absent for a declined run. */
    LAUNCH,
    /** The receipt, attestation, segment and claim built and signed. */
    SEAL,
    /** Waiting for the group commit that holds the run, fsync included. */
    STORE
  }

  /** Listens to nothing. */
  RunPhases NONE = (phase, nanos) -> {};

  void timed(Phase phase, long nanos);
}
