package io.sandboxd.daemon.cli;

/** A command that only groups its subcommands: run alone, it prints its usage on stderr. */
abstract class CommandGroup implements Runnable {
  @Override
  public void run() {
    picocli.CommandLine.usage(this, System.err);
  }
}
