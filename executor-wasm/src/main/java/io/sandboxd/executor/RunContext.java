package io.sandboxd.executor;

import io.sandboxd.enforcer.Enforcer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;

/** What the host functions of one run see: its Enforcer, journal, log and the node's clock. */
final class RunContext {
  /** Captured log bytes per run; past this the log is cut with a marker. */
  static final int MAX_LOG_BYTES = 64 * 1024;

  final Enforcer enforcer;
  final Journal journal = new Journal();
  final LongSupplier clockNanos;
  final long clockConstantMs;
  final SecureRandom random;
  private final StringBuilder log = new StringBuilder();
  private int logBytes;
  private boolean logTruncated;
  private long hostCalls;

  RunContext(
      Enforcer enforcer, LongSupplier clockNanos, long clockConstantMs, SecureRandom random) {
    this.enforcer = enforcer;
    this.clockNanos = clockNanos;
    this.clockConstantMs = clockConstantMs;
    this.random = random;
  }

  synchronized void appendLog(byte[] utf8) {
    hostCalls++;
    if (logTruncated) {
      return;
    }
    if (logBytes + utf8.length + 1 > MAX_LOG_BYTES) {
      log.append("[log truncated at ").append(MAX_LOG_BYTES).append(" bytes]\n");
      logTruncated = true;
      return;
    }
    log.append(new String(utf8, StandardCharsets.UTF_8)).append('\n');
    logBytes += utf8.length + 1;
  }

  synchronized String log() {
    return log.toString();
  }

  synchronized void countCall() {
    hostCalls++;
  }

  synchronized long hostCalls() {
    return hostCalls;
  }

  /** The run's taint so far, for journal entries; no flow grant means never tainted. */
  Set<String> taint() {
    return Set.copyOf(List.of());
  }
}
