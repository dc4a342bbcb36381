package io.sandboxd.daemon.cli;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.ReplayRequest;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * `sandboxctl replay RUN`: the daemon re-executes the run from its journal. Exit 0 when it reaches
 * the same outcome and journal_root, 1 when it diverges (the first differing entry on stderr).
 */
@Command(name = "replay", description = "Re-execute a recorded run from its replay journal.")
final class ReplayCommand extends DaemonCommand {
  @Mixin RunArgument run;

  @Override
  int ask(DaemonClient c) {
    ReplayReply r = c.stub().replay(ReplayRequest.newBuilder().setRunId(run.id).build());
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
            + (r.getDivergence().isEmpty() ? "outcome or journal_root differ" : r.getDivergence()));
    return 1;
  }
}
