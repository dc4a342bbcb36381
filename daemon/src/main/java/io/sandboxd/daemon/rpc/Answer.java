package io.sandboxd.daemon.rpc;

import io.grpc.stub.StreamObserver;
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
   * logged with their cause; a client's mistake is not.
   */
  static void fail(String call, StreamObserver<?> out, RuntimeException e) {
    ErrorStatus.Row row = ErrorStatus.rowOf(e);
    if (row == null || row.severe()) {
      LOG.log(Level.SEVERE, call + " failed: " + e.getMessage(), e);
    }
    out.onError(ErrorStatus.of(e).asRuntimeException());
  }
}
