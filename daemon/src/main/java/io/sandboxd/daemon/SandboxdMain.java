package io.sandboxd.daemon;

import io.sandboxd.config.DaemonConfig;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The `sandboxd` entry point. */
@Command(
    name = "sandboxd",
    mixinStandardHelpOptions = true,
    version = "sandboxd 0.1.0",
    description = "Sandbox-supervisor daemon: runs WebAssembly units under grants, signs receipts.",
    subcommands = {SandboxdMain.Serve.class})
public final class SandboxdMain implements Runnable {
  @Override
  public void run() {
    CommandLine.usage(this, System.err);
  }

  public static void main(String[] args) {
    System.setProperty(
        "java.util.logging.SimpleFormatter.format", "%1$tFT%1$tT.%1$tLZ %4$s %3$s: %5$s%6$s%n");
    System.exit(new CommandLine(new SandboxdMain()).execute(args));
  }

  /** `sandboxd serve`: run the daemon in the foreground until SIGTERM/SIGINT. */
  @Command(name = "serve", description = "Serve gRPC on a Unix socket until stopped.")
  static final class Serve implements Callable<Integer> {
    @Option(
        names = "--dev",
        description = "User-owned state under $XDG_STATE_HOME/sandboxd (default ~/.local/state).")
    boolean dev;

    @Option(names = "--state", paramLabel = "DIR", description = "State directory.")
    Path state;

    @Option(names = "--socket", paramLabel = "PATH", description = "Unix socket to serve on.")
    Path socket;

    @Option(
        names = "--config",
        paramLabel = "FILE",
        description =
            "Configuration file (default: /etc/sandboxd/sandboxd.json, or with --dev"
                + " $XDG_CONFIG_HOME/sandboxd/sandboxd.json, if it exists; else built-in defaults).")
    Path config;

    @Option(
        names = "--serve-damaged-store",
        description =
            "Serve a run store that fails start-up verification (default: refuse to start);"
                + " its damaged runs are listed as Tampered, never with their stored values.")
    boolean serveDamagedStore;

    @Override
    public Integer call() throws Exception {
      DaemonPaths paths = DaemonPaths.resolve(dev, state, socket);
      Daemon daemon;
      try {
        Optional<Path> file = Optional.ofNullable(config).or(() -> DaemonPaths.defaultConfig(dev));
        DaemonConfig loaded = DaemonConfig.load(file);
        // Without a policy section: --dev admits its own user; the system daemon root, itself and
        // group sandboxd (README, "Node policy").
        DaemonConfig cfg =
            loaded.withPolicy(
                loaded.policy().orDefault(dev, Daemon.ownUid(), loaded.maxConcurrentUnits()));
        java.util.logging.Logger.getLogger(SandboxdMain.class.getName())
            .info("configuration: " + file.map(Path::toString).orElse("built-in defaults"));
        daemon = Daemon.start(paths, cfg, serveDamagedStore);
      } catch (java.io.IOException | RuntimeException e) {
        System.err.println("sandboxd: " + e.getMessage());
        return 1;
      }
      SystemdNotifier systemd = SystemdNotifier.fromEnvironment();
      CountDownLatch stopped = new CountDownLatch(1);
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    systemd.stopping();
                    try {
                      daemon.close();
                    } catch (java.io.IOException e) {
                      System.err.println("sandboxd: shutdown: " + e.getMessage());
                    }
                    stopped.countDown();
                  },
                  "sandboxd-shutdown"));
      // Only now is the socket bound and the store verified: clients may connect.
      systemd.ready("serving on " + paths.socket());
      daemon.awaitTermination();
      stopped.await();
      return 0;
    }
  }
}
