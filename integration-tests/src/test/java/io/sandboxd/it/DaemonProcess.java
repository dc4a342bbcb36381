package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.DaemonClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The packaged daemon started as a real process, and the packaged CLI run as one. */
final class DaemonProcess implements AutoCloseable {
  static final Path JAR =
      Path.of(System.getProperty("sandboxd.jar", "../daemon/target/sandboxd.jar"));
  static final Path ROOT = Path.of(System.getProperty("sandboxd.root", ".."));
  private static final Pattern PUBLIC_KEY = Pattern.compile(" key ([0-9a-f]{64})");

  final Path state;
  final Path socket;
  final Path log;
  final Process process;
  private DaemonClient client;

  private DaemonProcess(Path state, Path socket, Path log, Process process) {
    this.state = state;
    this.socket = socket;
    this.log = log;
    this.process = process;
  }

  static List<String> java(String mainClass, String... args) {
    return java(List.of(), mainClass, args);
  }

  /** The java command line, with {@code jvmOptions} (e.g. -Xmx256m) before the class path. */
  static List<String> java(List<String> jvmOptions, String mainClass, String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(JAR.toAbsolutePath().toString());
    cmd.add(mainClass);
    cmd.addAll(List.of(args));
    return cmd;
  }

  /** Starts {@code sandboxd serve} and waits until it serves on its socket. */
  static DaemonProcess start(Path state, Path socket) throws Exception {
    return start(state, socket, new String[0]);
  }

  /** As {@link #start(Path, Path)}, with extra `serve` arguments (e.g. --config FILE). */
  static DaemonProcess start(Path state, Path socket, String... extra) throws Exception {
    return start(List.of(), state, socket, extra);
  }

  /**
   * As {@link #start(List, Path, Path, String...)}, under a configuration file of {@code
   * configJson} written beside the state directory.
   */
  static DaemonProcess startWithConfig(
      List<String> jvmOptions, Path state, Path socket, String configJson) throws Exception {
    Path config =
        Files.writeString(state.resolveSibling(state.getFileName() + ".config.json"), configJson);
    return start(jvmOptions, state, socket, "--config", config.toString());
  }

  /** As above, with the JVM's default options. */
  static DaemonProcess startWithConfig(Path state, Path socket, String configJson)
      throws Exception {
    return startWithConfig(List.of(), state, socket, configJson);
  }

  /**
   * The java command line of {@code sandboxd serve --state STATE --socket SOCKET extra...}, for a
   * test that starts it its own way (under prlimit or setpriv, with its own environment).
   */
  static List<String> serveCommand(
      List<String> jvmOptions, Path state, Path socket, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of("serve", "--state", state.toString(), "--socket", socket.toString()));
    args.addAll(List.of(extra));
    return java(jvmOptions, "io.sandboxd.daemon.SandboxdMain", args.toArray(new String[0]));
  }

  /** As above, the daemon's JVM started with {@code jvmOptions} (e.g. a small -Xmx). */
  static DaemonProcess start(List<String> jvmOptions, Path state, Path socket, String... extra)
      throws Exception {
    assertTrue(Files.isRegularFile(JAR), "packaged daemon missing: " + JAR);
    Files.createDirectories(state);
    Path log = state.resolveSibling(state.getFileName() + "-" + System.nanoTime() + ".log");
    return start(
        new ProcessBuilder(serveCommand(jvmOptions, state, socket, extra)), state, socket, log);
  }

  /**
   * Starts the daemon a test built its own way ({@code builder}: a {@link #serveCommand} under
   * prlimit, or with its own environment), its output to {@code log}, and waits until it serves.
   */
  static DaemonProcess start(ProcessBuilder builder, Path state, Path socket, Path log)
      throws Exception {
    Process p = builder.redirectErrorStream(true).redirectOutput(log.toFile()).start();
    DaemonProcess d = new DaemonProcess(state, socket, log, p);
    long deadline =
        System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.getLong("sandboxd.start.timeout.s", 60));
    while (System.nanoTime() < deadline) {
      if (d.log().contains("sandboxd serving on")) {
        return d;
      }
      if (!p.isAlive()) {
        throw new IllegalStateException("daemon exited " + p.exitValue() + ":\n" + d.log());
      }
      Thread.sleep(50);
    }
    p.destroyForcibly();
    throw new IllegalStateException("daemon did not start in time:\n" + d.log());
  }

  /**
   * Starting a daemon on {@code state} (with {@code extra} serve arguments, its socket beside the
   * state directory) fails; what it said.
   */
  static String refusedStart(Path state, String... extra) {
    return assertThrows(
            IllegalStateException.class,
            () -> start(state, state.resolveSibling(state.getFileName() + ".sock"), extra))
        .getMessage();
  }

  String log() throws IOException {
    return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
  }

  /** The node's public key, from its start-up line. */
  String publicKey() throws IOException {
    Matcher m = PUBLIC_KEY.matcher(log());
    assertTrue(m.find(), log());
    return m.group(1);
  }

  /** SIGTERM and wait: the daemon's orderly shutdown. */
  void stop() throws InterruptedException {
    terminate(process);
  }

  /** SIGTERM to a daemon this test started its own way; after 30 s without an end, SIGKILL. */
  static void terminate(Process daemon) throws InterruptedException {
    daemon.destroy();
    if (!daemon.waitFor(30, TimeUnit.SECONDS)) {
      daemon.destroyForcibly().waitFor();
    }
  }

  /** A client on this daemon's socket, opened on first use and closed with the daemon. */
  synchronized DaemonClient client() {
    if (client == null) {
      client = new DaemonClient(socket);
    }
    return client;
  }

  @Override
  public void close() throws InterruptedException {
    synchronized (this) {
      if (client != null) {
        client.close();
      }
    }
    if (process.isAlive()) {
      stop();
    }
  }

  /** Resumes the parked {@code run} with the CLI and waits for it to complete. */
  void resumeToCompletion(String run) throws Exception {
    Result resumed = ctl("runs", "resume", run);
    assertEquals(0, resumed.exit(), resumed.err() + log());
    awaitCompletion(run);
  }

  /** Waits up to two minutes with the CLI for {@code run} to end: it must have completed. */
  void awaitCompletion(String run) throws Exception {
    Result done = ctl("runs", "wait", run, "--json", "--timeout-ms", "120000");
    assertEquals(0, done.exit(), done.err());
    assertTrue(done.out().contains("\"state\":\"completed\""), done.out() + log());
  }

  /** A finished CLI invocation. */
  record Result(int exit, String out, String err) {}

  /** Runs {@code sandboxctl args --socket <this daemon's socket>}, no stdin. */
  Result ctl(String... args) throws Exception {
    String[] all = Arrays.copyOf(args, args.length + 2);
    all[args.length] = "--socket";
    all[args.length + 1] = socket.toString();
    return sandboxctl(null, all);
  }

  static Result sandboxctl(byte[] stdin, String... args) throws Exception {
    Process p = new ProcessBuilder(java("io.sandboxd.daemon.cli.Sandboxctl", args)).start();
    try (var in = p.getOutputStream()) {
      if (stdin != null) {
        in.write(stdin);
      }
    }
    byte[] out = p.getInputStream().readAllBytes();
    byte[] err = p.getErrorStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("sandboxctl did not finish: " + List.of(args));
    }
    return new Result(
        p.exitValue(),
        new String(out, StandardCharsets.UTF_8),
        new String(err, StandardCharsets.UTF_8));
  }
}
