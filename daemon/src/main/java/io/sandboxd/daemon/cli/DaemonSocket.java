package io.sandboxd.daemon.cli;

import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.DaemonPaths;
import java.nio.file.Path;
import java.util.function.ToIntFunction;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

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

  @Spec(Spec.Target.MIXEE)
  CommandSpec mixee;

  /** Work done with a connected client; returns the command's exit status. */
  @FunctionalInterface
  interface Call {
    int apply(DaemonClient client) throws Exception;
  }

  /** Work done with a connected client; returns the text the command prints. */
  @FunctionalInterface
  interface Text {
    String apply(DaemonClient client) throws Exception;
  }

  /** The name a failed call of the command mixing this in starts with: "runs list", say. */
  String command() {
    return mixee.qualifiedName(" ").substring(mixee.root().name().length() + 1);
  }

  /** The socket named, or the default one. */
  Path path() {
    return socket != null ? socket : DaemonPaths.defaultClientSocket();
  }

  /**
   * Runs {@code call} on a client of the daemon; a failed RPC prints {@code sandboxctl COMMAND:}
   * and what went wrong, and exits as {@code exit} says; an unreadable input file exits {@link
   * Sandboxctl#UNUSABLE}.
   */
  int call(String command, Call call, ToIntFunction<StatusRuntimeException> exit) throws Exception {
    try (DaemonClient c = new DaemonClient(path())) {
      return call.apply(c);
    } catch (StatusRuntimeException e) {
      complain(command, e);
      return exit.applyAsInt(e);
    } catch (Input.Unreadable e) {
      return Sandboxctl.unusable(command, e.getMessage());
    }
  }

  /**
   * Prints what {@code text} returns (exit 0), as {@link #call} calls the daemon; a failed RPC
   * exits {@link Sandboxctl#UNUSABLE}.
   */
  int print(String command, Text text) throws Exception {
    return call(
        command,
        c -> {
          System.out.print(text.apply(c));
          return 0;
        },
        e -> Sandboxctl.UNUSABLE);
  }

  /** The one line a failed RPC of {@code command} prints on stderr. */
  void complain(String command, StatusRuntimeException e) {
    System.err.println("sandboxctl " + command + ": " + RpcErrors.describe(e, path()));
  }
}
