package io.sandboxd.executor;

import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import java.util.List;
import java.util.Map;

/**
 * What one execution did: its outcome, what it consumed (CPU and wall time, peak memory, energy per
 * class), its log and its replay journal.
 */
public record ExecutionResult(
    Outcome outcome,
    long cpuTimeNanos,
    long wallNanos,
    long startedMs,
    long endedMs,
    long memoryPeakBytes,
    Map<DeviceClass, ClassEnergy> energy,
    String log,
    List<JournalEntry> journal,
    Map<String, byte[]> journalBlobs,
    String journalRoot,
    boolean clockGranted,
    long clockConstantMs,
    long hostCalls,
    IoCounts io,
    java.util.SortedSet<String> taint,
    java.util.Optional<ReplaySource.Divergence> replayDivergence) {

  /** Brokered I/O for the receipt. */
  public record IoCounts(
      long readOps,
      long readBytes,
      long writeBytes,
      long egressBytes,
      long ingressBytes,
      long inferenceCalls,
      DeviceClass inferenceClass,
      long inferenceUj) {
    public static final IoCounts NONE = new IoCounts(0, 0, 0, 0, 0, 0, DeviceClass.Cpu, 0);
  }

  public ExecutionResult {
    taint = java.util.Collections.unmodifiableSortedSet(new java.util.TreeSet<>(taint));
    energy = Map.copyOf(energy);
    journal = List.copyOf(journal);
    journalBlobs = Map.copyOf(journalBlobs);
  }
}
