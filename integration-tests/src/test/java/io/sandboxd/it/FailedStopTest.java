package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.rpc.SubmitReply;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stop that throws still ends the daemon. The real case: the jar a running daemon was started
 * from is overwritten in place (a rebuild of the one `bin/sandboxd` runs), and the stop's first
 * class not yet loaded fails. Before, the stop thread died, main waited forever, and a second
 * SIGTERM found the stop already begun: only SIGKILL ended it.
 */
class FailedStopTest {
  @TempDir Path dir;

  @Test
  void aStopThatThrowsHaltsWithStatus70AndKeepsWhatWasAcknowledged() throws Exception {
    Path jar = Files.copy(DaemonProcess.JAR, dir.resolve("sandboxd.jar"));
    Path state = dir.resolve("state");
    Path socket = dir.resolve("s.sock");
    Files.createDirectories(state);
    List<String> cmd = new ArrayList<>();
    for (String arg : DaemonProcess.serveCommand(List.of(), state, socket)) {
      cmd.add(arg.equals(DaemonProcess.JAR.toAbsolutePath().toString()) ? jar.toString() : arg);
    }
    assertTrue(cmd.contains(jar.toString()), cmd.toString());
    DaemonProcess d =
        DaemonProcess.start(new ProcessBuilder(cmd), state, socket, dir.resolve("daemon.log"));
    String run;
    try {
      SubmitReply reply =
          Submissions.submit(
              d.client(), Submissions.exampleUnit("hello"), Submissions.exampleGrants("hello"));
      run = reply.getRunId();
      d.client().close();
      // The jar overwritten in place, as `cp` or a rebuild does: same file, other bytes.
      try (FileChannel ch = FileChannel.open(jar, StandardOpenOption.WRITE)) {
        ByteBuffer zeros = ByteBuffer.allocate((int) ch.size());
        while (zeros.hasRemaining()) {
          ch.write(zeros, zeros.position());
        }
      }
      d.process.destroy(); // SIGTERM
      assertTrue(d.process.waitFor(30, TimeUnit.SECONDS), "no end 30 s after SIGTERM:\n" + d.log());
    } finally {
      d.process.destroyForcibly();
    }
    assertEquals(70, d.process.exitValue(), d.log());
    assertTrue(d.log().contains("sandboxd: the stop failed, halting with status 70: "), d.log());

    // The run it answered before the stop is stored, and the store verifies.
    try (DaemonProcess again = DaemonProcess.start(state, socket)) {
      DaemonProcess.Result shown = again.ctl("runs", "show", run);
      assertEquals(0, shown.exit(), shown.err());
      assertTrue(shown.out().contains("Completed"), shown.out());
      DaemonProcess.Result verified = again.ctl("store", "verify");
      assertEquals(0, verified.exit(), verified.out() + verified.err());
    }
  }
}
