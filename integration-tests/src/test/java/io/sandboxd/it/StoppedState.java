package io.sandboxd.it;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** A stopped daemon's state directory: recorded by running example units, copied to tamper with. */
final class StoppedState {
  private StoppedState() {}

  /**
   * Starts a daemon on {@code state}, runs each of the {@code examples} under its own grants in
   * order, and stops it; returns the replies in the same order.
   */
  static List<SubmitReply> record(Path state, Path socket, String... examples) throws Exception {
    List<SubmitReply> replies = new ArrayList<>(examples.length);
    try (DaemonProcess d = DaemonProcess.start(state, socket);
        DaemonClient c = new DaemonClient(d.socket)) {
      for (String example : examples) {
        replies.add(
            Submissions.submit(
                c, Submissions.exampleUnit(example), Submissions.exampleGrants(example)));
      }
    }
    return replies;
  }

  /** A copy of {@code state} at {@code target}, permissions and file attributes kept. */
  static Path copy(Path state, Path target) throws Exception {
    try (Stream<Path> walk = Files.walk(state)) {
      for (Path p : walk.toList()) {
        Path t = target.resolve(state.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
          Files.setPosixFilePermissions(t, Files.getPosixFilePermissions(p));
        } else {
          Files.copy(p, t, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
    return target;
  }
}
