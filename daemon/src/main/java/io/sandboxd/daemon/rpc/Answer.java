package io.sandboxd.daemon.rpc;

import io.grpc.stub.StreamObserver;
import io.sandboxd.daemon.ReportPace;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * How every handler of both services answers: its reply and completion, or the status {@link
 * ErrorStatus} gives its failure. The one place a handler's exception becomes a gRPC status (the
 * caller was authorized before, once, by {@link RpcAuthorization}).
 */
final class Answer {
  private static final Logger LOG = Logger.getLogger(Answer.class.getName());
  // One pace for each kind of failure that is logged (unexpected ones under Throwable): one kind
  // repeating is not allowed to hide the first of another.
  private static final Map<Class<?>, ReportPace> PACES = new ConcurrentHashMap<>();

  private Answer() {}

  /** Runs {@code body} and sends its reply, or fails the call with what it threw. */
  static <T> void reply(String call, StreamObserver<T> out, Supplier<T> body) {
    T reply;
    try {
      reply = body.get();
    } catch (RuntimeException e) {
      fail(call, out, e);
      return;
    }
    out.onNext(reply);
    out.onCompleted();
  }

  /**
   * Fails the call with the status of {@code e}. Unexpected failures (INTERNAL) and the store's are
   * logged with their cause, at a pace (a full disk fails every run, and the log would fill the
   * disk's neighbours at the rate runs come); a client's mistake is not logged.
   */
  static void fail(String call, StreamObserver<?> out, RuntimeException e) {
    ErrorStatus.Row row = ErrorStatus.rowOf(e);
    if (row == null || row.severe()) {
      PACES
          .computeIfAbsent(row == null ? Throwable.class : row.kind(), k -> new ReportPace())
          .log(LOG, Level.SEVERE, call + " failed: " + e.getMessage(), e);
    }
    out.onError(ErrorStatus.of(e).asRuntimeException());
  }
}
