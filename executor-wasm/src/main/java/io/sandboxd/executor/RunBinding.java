package io.sandboxd.executor;

import com.dylibso.chicory.wasm.ChicoryException;

/**
 * The run an instance's host functions serve: empty when the instance is made, bound to a run's
 * context when the run claims the instance, released when the run ends. A host call while unbound
 * traps, so an instance waiting in a pool can never act for no run or for the wrong one.
 */
final class RunBinding {
  // Written by the claiming thread, read by the guest's thread on every host call.
  private volatile RunContext context;

  /** Binds the instance to one run; an instance serves one run at a time. */
  void bind(RunContext ctx) {
    if (ctx == null) {
      throw new IllegalArgumentException("bind: no run context");
    }
    synchronized (this) {
      if (context != null) {
        throw new IllegalStateException("bind: the instance already serves another run");
      }
      context = ctx;
    }
  }

  /** Releases the run: later host calls trap until the next bind. */
  void release() {
    context = null;
  }

  boolean bound() {
    return context != null;
  }

  /** The bound run's context; a trap when none is bound. */
  RunContext context() {
    RunContext ctx = context;
    if (ctx == null) {
      throw new UnboundException();
    }
    return ctx;
  }

  /** A host function was called on an instance no run has claimed. */
  static final class UnboundException extends ChicoryException {
    private static final long serialVersionUID = 1L;

    UnboundException() {
      super("host function called with no run bound to this instance");
    }
  }
}
