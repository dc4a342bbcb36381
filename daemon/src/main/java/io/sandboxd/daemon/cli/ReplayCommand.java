package io.sandboxd.daemon.cli;

import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.ReplayRequest;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl replay RUN`: the daemon re-executes the run from its journal. Exit 0 when it reaches
 * the same outcome and journal_root, 1 when it diverges (the first differing entry on stderr).
 */
@Command(name = "replay", description = "Re-execute a recorded run from its replay journal.")
final class ReplayCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "RUN", description = "Run id.")
  String runId;

  @Option(names = "--socket", paramLabel = "PATH", description = "Daemon socket.")
  Path socket;

  @Override
  public Integer call() {
    Path sock = RunsCommand.socketOrDefault(socket);
    try (DaemonClient c = new DaemonClient(sock)) {
      ReplayReply r = c.stub().replay(ReplayRequest.newBuilder().setRunId(runId).build());
      System.out.println("run              " + r.getRunId());
      System.out.println("recorded outcome " + r.getRecordedOutcome());
      System.out.println("replayed outcome " + r.getReplayedOutcome());
      System.out.println("recorded root    " + r.getRecordedRoot());
      System.out.println("replayed root    " + r.getReplayedRoot());
      if (r.getMatches()) {
        System.out.println("replay matches");
        return 0;
      }
      System.err.println(
          "replay diverges: "
              + (r.getDivergence().isEmpty()
                  ? "outcome or journal_root differ"
                  : r.getDivergence()));
      return 1;
    } catch (StatusRuntimeException e) {
      System.err.println("sandboxctl replay: " + RpcErrors.describe(e, sock));
      return Sandboxctl.UNUSABLE;
    }
  }
}
