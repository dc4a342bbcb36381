package io.sandboxd.daemon;

import io.grpc.Status;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.daemon.store.TamperedRunException;
import io.sandboxd.executor.ExecutorBusyException;
import io.sandboxd.executor.UnitException;
import java.util.List;

/**
 * The one table from the daemon's exception kinds to gRPC status codes: every handler answers
 * failures through {@link #of}, so a kind means the same code whichever call raised it.
 */
final class ErrorStatus {
  /** One row: exceptions of {@code kind} answer {@code code}; {@code severe} ones are logged. */
  record Row(Class<? extends Throwable> kind, Status.Code code, boolean severe) {}

  /** First match wins: subclasses before their parents. */
  static final List<Row> TABLE =
      List.of(
          new Row(AdmissionException.class, Status.Code.INVALID_ARGUMENT, false),
          new Row(UnitException.class, Status.Code.INVALID_ARGUMENT, false),
          new Row(RunNotFoundException.class, Status.Code.NOT_FOUND, false),
          new Row(ReplayRefusedException.class, Status.Code.FAILED_PRECONDITION, false),
          new Row(ExecutorBusyException.class, Status.Code.RESOURCE_EXHAUSTED, false),
          new Row(TamperedRunException.class, Status.Code.DATA_LOSS, true),
          // Stopping: nothing ran; the client may retry once the daemon is back.
          new Row(DrainingException.class, Status.Code.UNAVAILABLE, false),
          // The store could not read or write: nothing was acknowledged; the client may retry.
          new Row(StoreException.class, Status.Code.UNAVAILABLE, true));

  private ErrorStatus() {}

  /** The row for {@code e}, or null when it is not a kind the daemon expects (a bug: INTERNAL). */
  static Row rowOf(Throwable e) {
    for (Row r : TABLE) {
      if (r.kind().isInstance(e)) {
        return r;
      }
    }
    return null;
  }

  /** The status a client receives for {@code e}, described by its message. */
  static Status of(Throwable e) {
    Row r = rowOf(e);
    if (r == null) {
      return Status.INTERNAL.withDescription(e.toString());
    }
    return Status.fromCode(r.code()).withDescription(e.getMessage());
  }
}
