package io.sandboxd.daemon.cli;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonPaths;
import java.nio.file.Path;
import java.util.Locale;

/** Turns a gRPC failure into one line a person can act on. */
final class RpcErrors {
  private RpcErrors() {}

  static String describe(StatusRuntimeException e, Path socket) {
    Status s = e.getStatus();
    String why = causes(s.getCause());
    boolean transport =
        s.getCause() != null
            || s.getDescription() == null
            || s.getDescription().contains("io exception");
    if (s.getCode() == Status.Code.UNAVAILABLE && transport) {
      String lower = why.toLowerCase(Locale.ROOT);
      if (lower.contains("permission denied") || lower.contains("access denied")) {
        return "permission denied on "
            + socket
            + (socket.equals(DaemonPaths.SYSTEM_SOCKET)
                ? ": join group sandboxd (sudo usermod -aG sandboxd $USER, then log in again)"
                : ": the socket is open to its owner and group only");
      }
      if (why.isEmpty()
          || lower.contains("no such file")
          || lower.contains("connection refused")
          || lower.contains("not a socket")) {
        return "no daemon at "
            + socket
            + ": is sandboxd running? (start one with: bin/sandboxd serve --dev, or pass --socket)";
      }
      return "cannot reach the daemon at " + socket + ": " + why;
    }
    String description = s.getDescription() == null ? "" : s.getDescription();
    return s.getCode()
        + ": "
        + (description.isEmpty()
            ? why
            : why.isEmpty() ? description : description + " (" + why + ")");
  }

  /** The messages of a cause chain, outermost first; never "null". */
  private static String causes(Throwable t) {
    StringBuilder sb = new StringBuilder();
    for (int depth = 0; t != null && depth < 8; t = t.getCause(), depth++) {
      String m = t.getMessage();
      if (m != null && !m.isBlank() && sb.indexOf(m) < 0) {
        sb.append(sb.length() == 0 ? "" : ": ").append(m.strip());
      }
    }
    return sb.toString();
  }
}
