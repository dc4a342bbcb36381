package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.HostService;
import java.util.function.LongSupplier;

/**
 * The run's clock: what the guest reads as the time. Without {@code host.clock} every reading (the
 * clock imports and file times alike) is the normalized constant, never an error and never the wall
 * clock (WIRE.md §3.2, ABI §7.5).
 */
final class RunClock {
  private final Enforcer enforcer;
  private final LongSupplier wallNanos;
  private final long constantMs;

  RunClock(Enforcer enforcer, LongSupplier wallNanos, long constantMs) {
    this.enforcer = enforcer;
    this.wallNanos = wallNanos;
    this.constantMs = constantMs;
  }

  boolean granted() {
    return enforcer.mayHost(HostService.CLOCK).allowed();
  }

  long constantMs() {
    return constantMs;
  }

  /** The wall clock in ns since the epoch (only ever shown when the clock is granted). */
  long wallNanos() {
    return wallNanos.getAsLong();
  }

  /**
   * One journaled clock reading as {@code call}: {@code live} when granted, else the constant, both
   * with status {@code ok} (the ABI's or WASI's success code).
   */
  HostAnswer read(RunContext run, JsonNode request, int ok, LongSupplier live) {
    return run.journaledIfAllowed(
        enforcer.mayHost(HostService.CLOCK),
        d -> new HostAnswer(d.name(), ok, SandboxImports.le64(constantNanos())),
        "clock_now",
        request,
        () -> new HostAnswer("Allow", ok, SandboxImports.le64(live.getAsLong())),
        null);
  }

  /** A time the host found (e.g. a file's mtime) as the guest may see it. */
  long shown(long actualNanos) {
    return granted() ? actualNanos : constantNanos();
  }

  private long constantNanos() {
    return constantMs * 1_000_000L;
  }
}
