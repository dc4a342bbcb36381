package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.RunTaint;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * What the host functions of one run see. Its core is shared by every call: the Enforcer and taint,
 * the journal (or the record it replays), the log and the call count. Each capability is a part
 * that owns its state and its counters for the receipt: {@link #clock}, {@link #random}, {@link
 * #storage}, {@link #network}, {@link #process} and {@link #kv}.
 */
final class RunContext {
  /** Captured log bytes per run; past this the log is cut with a marker. */
  static final int MAX_LOG_BYTES = 64 * 1024;

  final Enforcer enforcer;
  final Journal journal;
  final RunTaint taint = new RunTaint();
  final HostServices services;
  final Optional<ReplaySource> replay;

  final RunClock clock;
  final RunRandom random;
  final RunStorage storage;
  final RunNetwork network;
  final RunProcess process;
  final RunKv kv;

  // One growing buffer: a line costs one small copy and leaves no object behind to collect.
  private byte[] logBuffer = new byte[1024];
  private int logBytes;
  private boolean logTruncated;
  private long hostCalls;

  // The run's park request (null: never parked) and whether yield_point answered PARK.
  private ParkSignal park;
  private boolean parkAnswered;

  RunContext(
      Enforcer enforcer,
      LongSupplier clockNanos,
      long clockConstantMs,
      SecureRandom random,
      HostServices services,
      Optional<StorageRoot> storage,
      Optional<ReplaySource> replay,
      String unitAddress) {
    this.enforcer = enforcer;
    this.services = services;
    this.replay = replay;
    this.journal = new Journal(services.journalLimits());
    this.clock = new RunClock(enforcer, clockNanos, clockConstantMs);
    this.random = new RunRandom(enforcer, random);
    this.storage = new RunStorage(enforcer, storage);
    this.network = new RunNetwork(services.inferenceClass());
    this.process = new RunProcess(services.execSearchPath(), storage.map(StorageRoot::root));
    this.kv = new RunKv(services.kv(), unitAddress, services.kvQuotaBytes());
  }

  /** What the run left for its result: the core's log, journal and calls, each part's counts. */
  ExecutionResult.Builder report(ExecutionResult.Builder result) {
    return result
        .log(log())
        .journal(journal.entries(), journal.blobs(), journal.root())
        .clock(clock.granted(), clock.constantMs())
        .hostCalls(hostCalls)
        .io(new ExecutionResult.IoCounts(storage.use(), network.use(), network.inference()))
        .taint(taint.labels());
  }

  boolean replaying() {
    return replay.isPresent();
  }

  /**
   * One journaled input: live, the answer comes from {@code live} and is recorded; in a replay it
   * comes from the record (which must name the same call and request) and the world is not asked.
   */
  HostAnswer journaled(String call, JsonNode request, Supplier<HostAnswer> live) {
    return journaled(call, request, live, null);
  }

  /**
   * As above, and an allowed read from {@code source} taints the run per the flow grant (in a
   * replay too, so the replayed taint, and with it every later decision, is the same).
   */
  HostAnswer journaled(
      String call, JsonNode request, Supplier<HostAnswer> live, FlowSource source) {
    countCall();
    HostAnswer answer = replay.isPresent() ? replay.get().next(call, request) : live.get();
    if (source != null && answer.decision().equals("Allow") && answer.status() == AbiStatus.OK) {
      taint.add(enforcer.taints(source));
    }
    journal.record(call, request, answer.toBytes(), answer.decision(), taint.labels());
    return answer;
  }

  /**
   * A journaled WASI storage call: a successful answer taints the run with {@code reads}, the
   * labels of the paths the call read (asked only after {@code live} ran). A replay never rebuilds
   * the guest's descriptors (it answers every descriptor call from the record), so it cannot tell
   * which path a descriptor names; it takes the taint the record carries after the entry, which
   * journal_root binds, so every later decision is the one the live run made.
   */
  HostAnswer journaledReads(
      String call, JsonNode request, Supplier<HostAnswer> live, Supplier<Set<String>> reads) {
    countCall();
    HostAnswer answer;
    if (replay.isPresent()) {
      answer = replay.get().next(call, request);
      taint.add(replay.get().lastTaintAfter());
    } else {
      answer = live.get();
      if (answer.decision().equals("Allow") && answer.status() == AbiStatus.OK) {
        taint.add(reads.get());
      }
    }
    journal.record(call, request, answer.toBytes(), answer.decision(), taint.labels());
    return answer;
  }

  /**
   * A journaled input whose grant is decided first. A refusal by the grant is not journaled: it
   * follows from the grants (bound by grants_id) and the run's taint (which follows from the
   * journal), so a replay recomputes it, and a flood of denied calls adds nothing to the store.
   * Only an allowed call reaches {@code live} and the journal.
   */
  HostAnswer journaledIfAllowed(
      Decision grant,
      Function<Decision, HostAnswer> refusal,
      String call,
      JsonNode request,
      Supplier<HostAnswer> live,
      FlowSource source) {
    if (grant.allowed()) {
      return journaled(call, request, live, source);
    }
    countCall();
    HostAnswer answer = refusal.apply(grant);
    if (replay.isPresent() && replay.get().nextIs(call, request, answer.decision())) {
      // A journal recorded when refusals were still journaled: follow it, so its root matches.
      HostAnswer recorded = replay.get().next(call, request);
      journal.record(call, request, recorded.toBytes(), recorded.decision(), taint.labels());
      return recorded;
    }
    return answer;
  }

  /**
   * Appends one log line. Host functions run on the unit's own thread and the log is read after it
   * ended (the watchdog's latch orders the two), so no lock is taken on this hot path.
   */
  void appendLog(byte[] utf8) {
    if (logTruncated) {
      return;
    }
    if (logBytes + utf8.length + 1 > MAX_LOG_BYTES) {
      byte[] marker =
          ("[log truncated at " + MAX_LOG_BYTES + " bytes]\n").getBytes(StandardCharsets.UTF_8);
      appendRaw(marker);
      logTruncated = true;
      return;
    }
    appendRaw(utf8);
    appendRaw(NEWLINE);
  }

  boolean logTruncated() {
    return logTruncated;
  }

  private static final byte[] NEWLINE = {'\n'};

  private void appendRaw(byte[] bytes) {
    if (logBytes + bytes.length > logBuffer.length) {
      logBuffer =
          java.util.Arrays.copyOf(
              logBuffer, Math.max(logBuffer.length * 2, logBytes + bytes.length));
    }
    System.arraycopy(bytes, 0, logBuffer, logBytes, bytes.length);
    logBytes += bytes.length;
  }

  String log() {
    return new String(logBuffer, 0, logBytes, StandardCharsets.UTF_8);
  }

  /** Makes the run parkable by {@code signal}; set before the guest runs. */
  void parkOn(ParkSignal signal) {
    this.park = signal;
  }

  /**
   * The answer of {@code yield_point}: PARK once the run's park is requested, else OK. Journaled
   * like every input, so a replay answers what the live run answered.
   */
  int yieldPoint() {
    int status =
        journaled(
                "yield_point",
                CanonicalJson.mapper().createObjectNode(),
                () ->
                    park != null && park.requested()
                        ? new HostAnswer("Allow", AbiStatus.PARK, new byte[0])
                        : HostAnswer.allow(new byte[0]))
            .status();
    if (status == AbiStatus.PARK) {
      parkAnswered = true;
    }
    return status;
  }

  /** Whether {@code yield_point} answered PARK during this run. */
  boolean parkAnswered() {
    return parkAnswered;
  }

  /**
   * At a boundary between two {@code step} calls: whether the supervisor parks the run here. Only a
   * park is journaled (as a {@code park} entry), so a replay parks at the same boundary.
   */
  boolean parkAtStepBoundary() {
    JsonNode none = CanonicalJson.mapper().createObjectNode();
    boolean parks =
        replay.isPresent()
            ? replay.get().nextIs(STEP_PARK, none, "Allow")
            : park != null && park.requested();
    if (parks) {
      journaled(STEP_PARK, none, () -> new HostAnswer("Allow", AbiStatus.PARK, new byte[0]));
    }
    return parks;
  }

  /** The journal's name for the supervisor parking a run between two {@code step} calls. */
  static final String STEP_PARK = "park";

  /** Counts one host call (any import, any outcome). */
  void countCall() {
    hostCalls++;
  }

  /** A call refused before its grant was asked: counted all the same, answered {@code status}. */
  int counted(int status) {
    countCall();
    return status;
  }

  long hostCalls() {
    return hostCalls;
  }
}
