package io.sandboxd.daemon;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/** Where the daemon keeps its state and socket: system paths, or user-owned ones with --dev. */
public record DaemonPaths(Path stateDir, Path socket, Path keyFile, Path storeFile) {
  public static final Path SYSTEM_STATE = Path.of("/var/lib/sandboxd");
  public static final Path SYSTEM_SOCKET = Path.of("/run/sandboxd/sandboxd.sock");

  /**
   * The user-owned state directory of --dev: $XDG_STATE_HOME/sandboxd or ~/.local/state/sandboxd.
   */
  public static Path devStateDir() {
    String xdg = System.getenv("XDG_STATE_HOME");
    Path base =
        xdg != null && !xdg.isBlank() ? Path.of(xdg) : home().resolve(".local").resolve("state");
    return base.resolve("sandboxd");
  }

  public static DaemonPaths resolve(boolean dev, Path stateOverride, Path socketOverride) {
    Path state = stateOverride != null ? stateOverride : dev ? devStateDir() : SYSTEM_STATE;
    Path socket =
        socketOverride != null
            ? socketOverride
            : dev ? state.resolve("sandboxd.sock") : SYSTEM_SOCKET;
    return new DaemonPaths(
        state.toAbsolutePath(),
        socket.toAbsolutePath(),
        state.resolve("keys").resolve("node.ed25519").toAbsolutePath(),
        state.resolve("runs.db").toAbsolutePath());
  }

  /** $HOME as the user set it (the JVM's user.home comes from the password database instead). */
  static Path home() {
    String h = System.getenv("HOME");
    return h != null && !h.isBlank() ? Path.of(h) : Path.of(System.getProperty("user.home"));
  }

  /**
   * The configuration file to read when none is given: /etc/sandboxd/sandboxd.json, or with --dev
   * $XDG_CONFIG_HOME/sandboxd/sandboxd.json (~/.config), whichever applies and exists.
   */
  public static java.util.Optional<Path> defaultConfig(boolean dev) {
    Path file;
    if (dev) {
      String xdg = System.getenv("XDG_CONFIG_HOME");
      Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : home().resolve(".config");
      file = base.resolve("sandboxd").resolve("sandboxd.json");
    } else {
      file = Path.of("/etc/sandboxd/sandboxd.json");
    }
    return Files.isRegularFile(file) ? java.util.Optional.of(file) : java.util.Optional.empty();
  }

  /**
   * The socket a client talks to when none is given: $SANDBOXD_SOCKET, else the system socket if it
   * exists, else the --dev socket. A system socket this user may not even look at (/run/sandboxd is
   * group sandboxd only) is still the system one: the client then says why it cannot connect
   * instead of silently trying the --dev socket.
   */
  public static Path defaultClientSocket() {
    String env = System.getenv("SANDBOXD_SOCKET");
    if (env != null && !env.isBlank()) {
      return Path.of(env);
    }
    return systemSocketPresent(SYSTEM_SOCKET)
        ? SYSTEM_SOCKET
        : devStateDir().resolve("sandboxd.sock");
  }

  /** Whether {@code socket} exists or cannot be examined (denied): anything but "no such file". */
  static boolean systemSocketPresent(Path socket) {
    try {
      Files.readAttributes(socket, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      return true;
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      return true;
    }
  }
}
