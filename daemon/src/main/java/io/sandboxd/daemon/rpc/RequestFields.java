package io.sandboxd.daemon.rpc;

import io.sandboxd.daemon.run.AdmissionException;

/**
 * Range checks for a request's numeric fields, applied before a handler uses them: protobuf's
 * unsigned fields arrive in Java as signed values, so a {@code uint32} above 2^31 reads negative
 * and a {@code uint64} above 2^63 too. A value out of range is refused naming the field.
 */
final class RequestFields {
  /** The most rows a list call answers with (runs, evictions), whatever the client asks. */
  static final int MAX_ROWS = 10_000;

  private RequestFields() {}

  /**
   * A {@code uint32} count: {@code fallback} when 0, else the value when at most {@code max}.
   *
   * @throws AdmissionException naming {@code field} when the value is above {@code max}
   */
  static int count(String field, int wire, int fallback, int max) {
    long v = Integer.toUnsignedLong(wire);
    if (v == 0) {
      return fallback;
    }
    if (v > max) {
      throw new AdmissionException(field + ": " + v + " is out of range (at most " + max + ")");
    }
    return (int) v;
  }

  /**
   * A {@code uint64} within {@code [0, max]}, 0 included.
   *
   * @throws AdmissionException naming {@code field} when the value is above {@code max}
   */
  static long upTo(String field, long wire, long max) {
    if (Long.compareUnsigned(wire, max) > 0) {
      throw new AdmissionException(
          field + ": " + Long.toUnsignedString(wire) + " is out of range (at most " + max + ")");
    }
    return wire;
  }
}
