package io.sandboxd.daemon.rpc;

import io.grpc.Status;
import io.sandboxd.daemon.durable.DurableRunException;
import io.sandboxd.daemon.jcp.JcpRefusedException;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.DrainingException;
import io.sandboxd.daemon.run.EnvironmentNotOfferedException;
import io.sandboxd.daemon.run.InputTooLargeException;
import io.sandboxd.daemon.run.OutputUnavailableException;
import io.sandboxd.daemon.run.PolicyDeniedException;
import io.sandboxd.daemon.run.PolicyLimitException;
import io.sandboxd.daemon.run.ReplayRefusedException;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.daemon.store.TamperedRunException;
import io.sandboxd.executor.ExecutorBusyException;
import io.sandboxd.executor.ModuleStoreException;
import io.sandboxd.executor.UnitException;
import java.util.List;

/**
 * The one table from the daemon's exception kinds to gRPC status codes: every handler answers
 * failures through {@link #of}, so a kind means the same code whichever call raised it.
 */
public final class ErrorStatus {
  /** One row: exceptions of {@code kind} answer {@code code}; {@code severe} ones are logged. */
  record Row(Class<? extends Throwable> kind, Status.Code code, boolean severe) {}

  /** First match wins: subclasses before their parents. */
  static final List<Row> TABLE =
      List.of(
          new Row(AdmissionException.class, Status.Code.INVALID_ARGUMENT, false),
          new Row(PolicyDeniedException.class, Status.Code.PERMISSION_DENIED, false),
          new Row(PolicyLimitException.class, Status.Code.RESOURCE_EXHAUSTED, false),
          new Row(UnitException.class, Status.Code.INVALID_ARGUMENT, false),
          new Row(RunNotFoundException.class, Status.Code.NOT_FOUND, false),
          // JCP (WIRE.md §2.11): a bound reached, then any other rule, then an unknown policy.
          new Row(JcpRefusedException.Exhausted.class, Status.Code.RESOURCE_EXHAUSTED, false),
          new Row(JcpRefusedException.class, Status.Code.PERMISSION_DENIED, false),
          new Row(JcpRefusedException.NotFound.class, Status.Code.NOT_FOUND, false),
          new Row(EnvironmentNotOfferedException.class, Status.Code.NOT_FOUND, false),
          // A mount the node allowed at start cannot be made now (e.g. a bind source removed).
          new Row(
              io.sandboxd.executor.MountException.class, Status.Code.FAILED_PRECONDITION, false),
          new Row(ReplayRefusedException.class, Status.Code.FAILED_PRECONDITION, false),
          new Row(DurableRunException.Refused.class, Status.Code.FAILED_PRECONDITION, false),
          new Row(DurableRunException.AlreadyHeld.class, Status.Code.ALREADY_EXISTS, false),
          new Row(DurableRunException.BadBundle.class, Status.Code.INVALID_ARGUMENT, false),
          new Row(ExecutorBusyException.class, Status.Code.RESOURCE_EXHAUSTED, false),
          new Row(InputTooLargeException.class, Status.Code.RESOURCE_EXHAUSTED, false),
          new Row(OutputUnavailableException.class, Status.Code.FAILED_PRECONDITION, false),
          new Row(TamperedRunException.class, Status.Code.DATA_LOSS, true),
          new Row(
              io.sandboxd.daemon.store.LogInputException.class,
              Status.Code.INVALID_ARGUMENT,
              false),
          new Row(
              io.sandboxd.daemon.store.LogNotFoundException.class, Status.Code.NOT_FOUND, false),
          new Row(ModuleStoreException.NotFound.class, Status.Code.NOT_FOUND, false),
          new Row(ModuleStoreException.BadAddress.class, Status.Code.INVALID_ARGUMENT, false),
          new Row(ModuleStoreException.Limit.class, Status.Code.RESOURCE_EXHAUSTED, false),
          new Row(ModuleStoreException.Damaged.class, Status.Code.DATA_LOSS, true),
          new Row(ModuleStoreException.class, Status.Code.UNAVAILABLE, true),
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

  /**
   * The status a client receives for {@code e}, described by its message cut to a bounded size (an
   * echoed input never makes a description too large for the client's trailers).
   */
  public static Status of(Throwable e) {
    Row r = rowOf(e);
    if (r == null) {
      return Status.INTERNAL.withDescription(BoundedDescription.of(e.toString()));
    }
    return Status.fromCode(r.code()).withDescription(BoundedDescription.of(e.getMessage()));
  }
}
