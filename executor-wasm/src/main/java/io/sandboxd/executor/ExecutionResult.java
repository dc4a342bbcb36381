package io.sandboxd.executor;

import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * What one execution did: its outcome, what it consumed (CPU and wall time, peak memory, energy per
 * class), its log and its replay journal. Built with {@link #builder()} or {@link #declined}.
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
    SortedSet<String> taint,
    Optional<ReplaySource.Divergence> replayDivergence,
    Optional<Stdio> stdio,
    int exitStatus,
    boolean exited,
    Optional<InstanceSnapshot> parked) {

  /**
   * One output stream of a WASI command: the bytes kept, how many the unit wrote (more than kept
   * when the cap cut it), and whether it was kept at all (host.logging granted).
   */
  public record Output(byte[] bytes, long written, boolean kept) {
    public static final Output EMPTY = new Output(new byte[0], 0, true);

    public Output {
      bytes = bytes.clone();
    }

    @Override
    public byte[] bytes() {
      return bytes.clone();
    }

    /** The unit wrote more than was kept. */
    public boolean truncated() {
      return written > bytes.length;
    }
  }

  /** What a WASI command wrote to stdout and stderr; absent for a unit without WASI. */
  public record Stdio(Output stdout, Output stderr) {}

  /** Brokered I/O for the receipt, one part per capability that counts it. */
  public record IoCounts(Receipt.IoUse storage, Receipt.NetUse network, Inference inference) {
    public static final IoCounts NONE =
        new IoCounts(Receipt.IoUse.NONE, Receipt.NetUse.NONE, new Inference(0, DeviceClass.Cpu, 0));
  }

  /** Inference calls, the device class that served them, and the energy they drew there. */
  public record Inference(long calls, DeviceClass deviceClass, long uj) {}

  public ExecutionResult {
    taint = Collections.unmodifiableSortedSet(new TreeSet<>(taint));
    energy = Map.copyOf(energy);
    journal = List.copyOf(journal);
    journalBlobs = Map.copyOf(journalBlobs);
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * A run declined before it started (e.g. a device class the node cannot meter): nothing ran, so
   * every dispatchable class reads zero energy and the journal is empty.
   */
  public static ExecutionResult declined(
      String reason, Set<DeviceClass> classes, boolean clockGranted, long nowMs) {
    Map<DeviceClass, ClassEnergy> zero = new TreeMap<>();
    for (DeviceClass c : classes) {
      zero.put(c, new ClassEnergy(0, Provenance.Estimator, "none", 1, 0));
    }
    return builder()
        .outcome(new Outcome.Declined(reason))
        .wall(nowMs, 0)
        .consumed(0, 0, zero)
        .clock(clockGranted, Executor.CLOCK_CONSTANT_MS)
        .build();
  }

  /** Gathers a result by name; what is not set is zero or empty. */
  public static final class Builder {
    private Outcome outcome;
    private long cpuTimeNanos;
    private long wallNanos;
    private long startedMs;
    private long endedMs;
    private long memoryPeakBytes;
    private Map<DeviceClass, ClassEnergy> energy = Map.of();
    private String log = "";
    private List<JournalEntry> journal = List.of();
    private Map<String, byte[]> journalBlobs = Map.of();
    private String journalRoot = Journal.EMPTY_ROOT;
    private boolean clockGranted;
    private long clockConstantMs = Executor.CLOCK_CONSTANT_MS;
    private long hostCalls;
    private IoCounts io = IoCounts.NONE;
    private SortedSet<String> taint = new TreeSet<>();
    private Optional<ReplaySource.Divergence> replayDivergence = Optional.empty();
    private Optional<Stdio> stdio = Optional.empty();
    private int exitStatus;
    private boolean exited;
    private Optional<InstanceSnapshot> parked = Optional.empty();

    private Builder() {}

    /**
     * The run parked at a boundary: what was frozen. Its outcome is then {@code Completed} (the
     * entry returned normally); a parked result is told apart by this, not by the outcome.
     */
    public Builder parked(InstanceSnapshot snapshot) {
      this.parked = Optional.of(snapshot);
      return this;
    }

    /** What a WASI command wrote (absent for a unit without WASI). */
    public Builder stdio(Optional<Stdio> stdio) {
      this.stdio = stdio;
      return this;
    }

    /**
     * The guest's exit status: what it passed to WASI proc_exit ({@code exited}), else what its
     * entry returned (0 for none).
     */
    public Builder exit(int status, boolean exited) {
      this.exitStatus = status;
      this.exited = exited;
      return this;
    }

    public Builder outcome(Outcome outcome) {
      this.outcome = outcome;
      return this;
    }

    /** Start time and wall time; the end is the start plus the wall time. */
    public Builder wall(long startedMs, long wallNanos) {
      this.startedMs = startedMs;
      this.wallNanos = wallNanos;
      this.endedMs = startedMs + TimeUnit.NANOSECONDS.toMillis(wallNanos);
      return this;
    }

    /** CPU time, peak memory and energy per class: what the run consumed. */
    public Builder consumed(
        long cpuTimeNanos, long memoryPeakBytes, Map<DeviceClass, ClassEnergy> energy) {
      this.cpuTimeNanos = cpuTimeNanos;
      this.memoryPeakBytes = memoryPeakBytes;
      this.energy = energy;
      return this;
    }

    public Builder log(String log) {
      this.log = log;
      return this;
    }

    public Builder journal(List<JournalEntry> entries, Map<String, byte[]> blobs, String root) {
      this.journal = entries;
      this.journalBlobs = blobs;
      this.journalRoot = root;
      return this;
    }

    /** Whether the clock was granted, and the constant the unit saw if not. */
    public Builder clock(boolean granted, long constantMs) {
      this.clockGranted = granted;
      this.clockConstantMs = constantMs;
      return this;
    }

    public Builder hostCalls(long hostCalls) {
      this.hostCalls = hostCalls;
      return this;
    }

    public Builder io(IoCounts io) {
      this.io = io;
      return this;
    }

    public Builder taint(SortedSet<String> taint) {
      this.taint = taint;
      return this;
    }

    public Builder replayDivergence(Optional<ReplaySource.Divergence> replayDivergence) {
      this.replayDivergence = replayDivergence;
      return this;
    }

    public ExecutionResult build() {
      return new ExecutionResult(
          Objects.requireNonNull(outcome, "outcome"),
          cpuTimeNanos,
          wallNanos,
          startedMs,
          endedMs,
          memoryPeakBytes,
          energy,
          log,
          journal,
          journalBlobs,
          journalRoot,
          clockGranted,
          clockConstantMs,
          hostCalls,
          io,
          taint,
          replayDivergence,
          stdio,
          exitStatus,
          exited,
          parked);
    }
  }
}
