package io.sandboxd.daemon.durable;

import io.sandboxd.daemon.rpc.ErrorStatus;

/**
 * A durable-run request refused with its reason (issue 12): each subclass is one kind, mapped to
 * one gRPC code in {@link ErrorStatus}.
 */
public class DurableRunException extends RuntimeException {
  public DurableRunException(String message) {
    super(message);
  }

  public DurableRunException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * The run is not in a state that allows it (not parked, exported, resumed already, a chain or
   * snapshot that does not check, an environment or grant that does not match):
   * FAILED_PRECONDITION.
   */
  public static final class Refused extends DurableRunException {
    public Refused(String message) {
      super(message);
    }

    public Refused(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** An import of a run this node already holds: ALREADY_EXISTS. */
  public static final class AlreadyHeld extends DurableRunException {
    public AlreadyHeld(String runId) {
      super("run " + runId + " is already held by this node; nothing was imported");
    }
  }

  /** A bundle that is malformed or does not verify: INVALID_ARGUMENT, nothing stored. */
  public static final class BadBundle extends DurableRunException {
    public BadBundle(String message) {
      super("bundle refused, nothing imported: " + message);
    }

    public BadBundle(String message, Throwable cause) {
      super("bundle refused, nothing imported: " + message, cause);
    }
  }
}
