package io.sandboxd.daemon.cli;

import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.DaemonPaths;
import java.nio.file.Path;
import java.util.function.ToIntFunction;
import picocli.CommandLine.Option;

/**
 * The {@code --socket} option every command that talks to the daemon mixes in, and the one place a
 * failed call becomes a line on stderr and an exit status: the CLI reaches the daemon only here.
 */
public final class DaemonSocket {
  @Option(
      names = "--socket",
      paramLabel = "PATH",
      description =
          "Daemon socket (default: $SANDBOXD_SOCKET, else the system socket if present, else"
              + " the dev state directory's).")
  Path socket;

  /** Work done with a connected client; returns the command's exit status. */
  @FunctionalInterface
  interface Call {
    int apply(DaemonClient client) throws Exception;
  }

  /** The socket named, or the default one. */
  Path path() {
    return socket != null ? socket : DaemonPaths.defaultClientSocket();
  }

  /**
   * Runs {@code call} on a client of the daemon; a failed RPC prints {@code sandboxctl COMMAND:}
   * and what went wrong, and exits {@link Sandboxctl#UNUSABLE}.
   */
  int call(String command, Call call) throws Exception {
    return call(command, call, e -> Sandboxctl.UNUSABLE);
  }

  /**
   * As {@link #call(String, Call)}, with the exit status of a failed RPC chosen by {@code exit}.
   */
  int call(String command, Call call, ToIntFunction<StatusRuntimeException> exit) throws Exception {
    Path sock = path();
    try (DaemonClient c = new DaemonClient(sock)) {
      return call.apply(c);
    } catch (StatusRuntimeException e) {
      System.err.println("sandboxctl " + command + ": " + RpcErrors.describe(e, sock));
      return exit.applyAsInt(e);
    }
  }
}
