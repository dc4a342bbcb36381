package io.sandboxd.daemon.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** A command that only groups its subcommands: run alone, it prints its usage on stderr. */
abstract class CommandGroup implements Runnable {
  // The spec picocli built for this command inside sandboxctl's tree: its usage names the parent
  // ("sandboxctl grants") and the inherited -h/-V, which a CommandLine made from `this` would not.
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.err);
  }
}
