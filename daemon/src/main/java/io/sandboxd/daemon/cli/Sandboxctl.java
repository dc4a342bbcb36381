package io.sandboxd.daemon.cli;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ScopeType;

/** The `sandboxctl` entry point: offline tools for records and a client of the daemon. */
@Command(
    name = "sandboxctl",
    mixinStandardHelpOptions = true,
    scope = ScopeType.INHERIT, // --help and --version on every subcommand, before required params
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
      EnforceCommand.class,
      ModulesCommand.class,
      PoolsCommand.class,
      EnvsCommand.class,
      ManifestCommand.class,
      BenchCommand.class,
      StatusCommand.class,
      StoreCommand.class,
      JcpCommand.class,
      LogCommand.class,
      FleetCommand.class,
      ReportCommand.class
    })
public final class Sandboxctl implements Runnable {
  /** Exit status for input that cannot be used at all. */
  public static final int UNUSABLE = 2;

  /**
   * Says on stderr why {@code command}'s input is unusable, as every command does; returns {@link
   * #UNUSABLE}.
   */
  static int unusable(String command, String why) {
    System.err.println("sandboxctl " + command + ": " + why);
    return UNUSABLE;
  }

  /**
   * Netty and gRPC log through java.util.logging (the MAC-address and SO_KEEPALIVE warnings, among
   * others); a CLI user's terminal gets only sandboxctl's own words. Set before any Netty class
   * loads, and held here because java.util.logging keeps loggers weakly.
   */
  private static final List<Logger> LIBRARY_LOGS =
      List.of(Logger.getLogger("io.netty"), Logger.getLogger("io.grpc"));

  static {
    LIBRARY_LOGS.forEach(l -> l.setLevel(Level.OFF));
  }

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
