package io.sandboxd.executor;

import com.dylibso.chicory.wasm.ChicoryException;

/**
 * The run an instance's host functions serve: empty when the instance is made, bound to a run's
 * context (and, for a WASI module, the run's {@link WasiRun}) when the run claims the instance,
 * released when the run ends. A host call while unbound traps, so an instance waiting in a pool can
 * never act for no run or for the wrong one.
 */
final class RunBinding {
  /** What one bound run hands the instance. */
  private record Bound(RunContext context, WasiRun wasi) {}

  // Written by the claiming thread, read by the guest's thread on every host call.
  private volatile Bound bound;

  /** Binds the instance to one run; an instance serves one run at a time. */
  void bind(RunContext ctx) {
    bind(ctx, null);
  }

  /**
   * Binds the instance to one run and its WASI state ({@code wasi} may be null for a module that
   * imports no WASI); an instance serves one run at a time.
   */
  void bind(RunContext ctx, WasiRun wasi) {
    if (ctx == null) {
      throw new IllegalArgumentException("bind: no run context");
    }
    synchronized (this) {
      if (bound != null) {
        throw new IllegalStateException("bind: the instance already serves another run");
      }
      bound = new Bound(ctx, wasi);
    }
  }

  /** Releases the run: later host calls trap until the next bind. */
  void release() {
    bound = null;
  }

  boolean bound() {
    return bound != null;
  }

  /** The bound run's context; a trap when none is bound. */
  RunContext context() {
    Bound b = bound;
    if (b == null) {
      throw new UnboundException();
    }
    return b.context();
  }

  /** The bound run's WASI state; a trap when none is bound or the run brought none. */
  WasiRun wasi() {
    Bound b = bound;
    if (b == null || b.wasi() == null) {
      throw new UnboundException();
    }
    return b.wasi();
  }

  /** A host function was called on an instance no run has claimed. */
  static final class UnboundException extends ChicoryException {
    private static final long serialVersionUID = 1L;

    UnboundException() {
      super("host function called with no run bound to this instance");
    }
  }
}
