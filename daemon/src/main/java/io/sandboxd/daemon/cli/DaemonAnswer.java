package io.sandboxd.daemon.cli;

import io.sandboxd.daemon.DaemonClient;

/** A command that prints what the daemon answers and exits 0 ({@link DaemonCommand}). */
abstract class DaemonAnswer extends DaemonCommand {
  /** Asks the daemon; returns the text the command prints. */
  abstract String answer(DaemonClient c) throws Exception;

  @Override
  final int ask(DaemonClient c) throws Exception {
    System.out.print(answer(c));
    return 0;
  }
}
