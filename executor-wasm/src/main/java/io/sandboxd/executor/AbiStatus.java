package io.sandboxd.executor;

/** The status codes every `sandbox` import returns (ABI.md). */
public final class AbiStatus {
  public static final int OK = 0;
  public static final int DENIED = -1;
  public static final int TAINTED = -2;
  public static final int NOT_FOUND = -3;
  public static final int TOO_SMALL = -4;
  public static final int FAULT = -5;
  public static final int INVALID = -6;
  public static final int RATE = -7;
  public static final int UNAVAILABLE = -8;
  // A request, or the response to it, is over the node's size cap (egress and infer bodies).
  public static final int TOO_LARGE = -9;

  /** The write would take the module past the node's storage or kv quota. */
  public static final int QUOTA = -10;

  public static final int PARK = 1;

  private AbiStatus() {}
}
