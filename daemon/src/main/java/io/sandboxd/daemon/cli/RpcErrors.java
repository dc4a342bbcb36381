package io.sandboxd.daemon.cli;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;

/** Turns a gRPC failure into one line a person can act on. */
final class RpcErrors {
  private RpcErrors() {}

  static String describe(StatusRuntimeException e, Path socket) {
    Status s = e.getStatus();
    if (s.getCode() == Status.Code.UNAVAILABLE && s.getDescription() == null) {
      return "no daemon answers on " + socket + " (start one with: bin/sandboxd serve --dev)";
    }
    if (s.getCode() == Status.Code.UNAVAILABLE
        && s.getCause() != null
        && s.getDescription() != null
        && s.getDescription().contains("io exception")) {
      return "no daemon answers on " + socket + " (" + s.getCause().getMessage() + ")";
    }
    return s.getCode() + ": " + (s.getDescription() == null ? "" : s.getDescription());
  }
}
