package io.sandboxd.metering;

import java.io.IOException;

/** The node's busy CPU time, summed over all CPUs: the denominator of the Kepler share. */
@FunctionalInterface
public interface NodeCpuTime {
  /** Busy (non-idle) CPU time of the whole node since boot, in ns; never decreases. */
  long busyNs() throws IOException;
}
