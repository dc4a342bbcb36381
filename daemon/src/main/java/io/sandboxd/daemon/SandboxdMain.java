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
    subcommands = {SandboxdMain.Serve.class, io.sandboxd.daemon.fleet.AggregateCommand.class})
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

    @Option(
        names = "--drain-ms",
        paramLabel = "MS",
        defaultValue = "30000",
        description =
            "On SIGTERM, how long running units may take to finish before the daemon stops"
                + " anyway (default ${DEFAULT-VALUE}; keep it below the unit's TimeoutStopSec).")
    long drainMs;

    @Option(
        names = "--exit-when-ready",
        description =
            "Stop as on SIGTERM once serving (after READY=1) and the run path is primed: a dry"
                + " start. build-start-cache trains the class-data archive with it on a throwaway"
                + " state directory.")
    boolean exitWhenReady;

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
      java.util.concurrent.atomic.AtomicBoolean stopping =
          new java.util.concurrent.atomic.AtomicBoolean();
      Runnable stop =
          () -> {
            if (!stopping.compareAndSet(false, true)) {
              return;
            }
            systemd.notify(
                "STOPPING=1\nSTATUS=stopping: not admitting; draining "
                    + daemon.serving().inFlight()
                    + " submission(s), at most "
                    + drainMs
                    + " ms");
            try {
              int left = daemon.drainAndClose(drainMs);
              systemd.notify(
                  "STATUS=stopped"
                      + (left > 0 ? " (" + left + " submission(s) cut off at the deadline)" : ""));
            } catch (java.io.IOException e) {
              System.err.println("sandboxd: shutdown: " + e.getMessage());
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            } catch (Throwable t) {
              haltAfterFailedStop(t);
            }
            stopped.countDown();
          };
      // SIGTERM (systemctl stop): drain, flush, exit 0 rather than the JVM's 143. Other ways out
      // (SIGINT, SIGHUP) go through the shutdown hook, which drains the same way.
      try {
        sun.misc.Signal.handle(
            new sun.misc.Signal("TERM"), sig -> new Thread(stop, "sandboxd-stop").start());
      } catch (IllegalArgumentException e) {
        java.util.logging.Logger.getLogger(SandboxdMain.class.getName())
            .warning("cannot handle SIGTERM: " + e.getMessage());
      }
      Runtime.getRuntime().addShutdownHook(new Thread(stop, "sandboxd-shutdown"));
      // Only now is the socket bound and the store verified: clients may connect.
      systemd.ready(
          "serving on " + paths.socket() + "; store verification running in the background");
      Optional<Watchdog> watchdog =
          Watchdog.interval(System.getenv(), ProcessHandle.current().pid())
              .map(
                  iv ->
                      Watchdog.start(
                          systemd,
                          iv,
                          () ->
                              daemon.alive(
                                  java.time.Duration.ofMillis(
                                      Math.max(100, Math.min(5_000, iv.toMillis() / 4))))));
      Thread statusLine = storeStatusLine(daemon, systemd, paths);
      if (exitWhenReady) {
        new Thread(
                () -> {
                  try {
                    daemon.awaitPrimed(java.time.Duration.ofSeconds(60));
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  stop.run();
                },
                "sandboxd-stop")
            .start();
      }
      daemon.awaitTermination();
      stopped.await();
      watchdog.ifPresent(Watchdog::close);
      statusLine.interrupt();
      return 0;
    }

    /**
     * Ends the process after a stop that threw: otherwise main would wait forever on a daemon that
     * never terminates, and a second SIGTERM would find the stop already begun. Seen with the jar
     * overwritten under a running daemon (a rebuild of the one `bin/sandboxd` runs), where the
     * stop's first class not yet loaded fails. Only JDK code from here on, for that reason. What
     * was acknowledged is on disk (each commit is fsynced); the next start finds the store not
     * closed cleanly and checks the runs since its last sealed checkpoint, as after a crash.
     */
    private static void haltAfterFailedStop(Throwable t) {
      try {
        System.err.println("sandboxd: the stop failed, halting with status 70: " + t);
        t.printStackTrace();
      } finally {
        Runtime.getRuntime().halt(70);
      }
    }

    /** Tells systemd (STATUS=) when the background store verification has finished. */
    private static Thread storeStatusLine(
        Daemon daemon, SystemdNotifier systemd, DaemonPaths paths) {
      Thread t =
          new Thread(
              () -> {
                try {
                  while (true) {
                    var s = daemon.verifier().state();
                    switch (s.phase()) {
                      case VERIFIED -> {
                        systemd.notify(
                            "STATUS=serving on "
                                + paths.socket()
                                + "; store verified ("
                                + s.totalRuns()
                                + " runs)");
                        return;
                      }
                      case DAMAGED, FAILED -> {
                        systemd.notify(
                            "STATUS=serving on "
                                + paths.socket()
                                + "; STORE VERIFICATION "
                                + s.phase()
                                + ": see the journal and `sandboxctl status`");
                        return;
                      }
                      default -> Thread.sleep(500);
                    }
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "sandboxd-status");
      t.setDaemon(true);
      t.start();
      return t;
    }
  }
}
