package io.sandboxd.daemon.cli;

import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;

/**
 * A command that asks the daemon: the {@code --socket} option, and its work done with a connected
 * client, a failed call named on stderr under the command's own name ({@link DaemonSocket}).
 */
abstract class DaemonCommand implements Callable<Integer> {
  @Mixin DaemonSocket daemon;

  /** The command's work with a connected client; returns its exit status. */
  abstract int ask(DaemonClient c) throws Exception;

  /** The exit status of a failed call: unusable (2), unless the command tells refusals apart. */
  int exitOf(StatusRuntimeException e) {
    return Sandboxctl.UNUSABLE;
  }

  /**
   * Why the command's arguments are unusable, found before the daemon is asked; empty when they are
   * usable.
   */
  Optional<String> unusable() {
    return Optional.empty();
  }

  /** {@code why}, as {@link #unusable} answers it, when any of {@code values} is negative. */
  static Optional<String> unusableIfNegative(String why, long... values) {
    return Arrays.stream(values).anyMatch(v -> v < 0) ? Optional.of(why) : Optional.empty();
  }

  @Override
  public Integer call() throws Exception {
    Optional<String> why = unusable();
    if (why.isPresent()) {
      return Sandboxctl.unusable(daemon.command(), why.get());
    }
    return daemon.call(daemon.command(), this::ask, this::exitOf);
  }
}
