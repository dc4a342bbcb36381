package io.sandboxd.daemon.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The `sandboxctl` entry point: offline tools for records and a client of the daemon. */
@Command(
    name = "sandboxctl",
    mixinStandardHelpOptions = true,
    version = "sandboxctl 0.1.0",
    description = "Canonicalize, address, sign and verify records; submit and inspect runs.",
    subcommands = {
      CanonCommand.class,
      AddressCommand.class,
      KeygenCommand.class,
      SignCommand.class,
      VerifyCommand.class,
      RunCommand.class,
      RunsCommand.class,
      ReplayCommand.class,
      MetersCommand.class,
      GrantsCommand.class,
      EnforceCommand.class
    })
public final class Sandboxctl implements Runnable {
  /** Exit status for input that cannot be used at all. */
  public static final int UNUSABLE = 2;

  @Override
  public void run() {
    CommandLine.usage(this, System.err);
  }

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /** The configured command line (bad usage exits 2, like unusable input). */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new Sandboxctl());
    cl.setExitCodeExceptionMapper(e -> UNUSABLE);
    cl.setParameterExceptionHandler(
        (ex, args) -> {
          ex.getCommandLine().getErr().println("sandboxctl: " + ex.getMessage());
          return UNUSABLE;
        });
    return cl;
  }
}
