package io.sandboxd.daemon.cli;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.StoreVerification;
import io.sandboxd.daemon.rpc.VerifyStoreReply;
import io.sandboxd.daemon.rpc.VerifyStoreRequest;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** `sandboxctl store verify`: the daemon checks its whole run store now. */
@Command(
    name = "store",
    description = "Run store operations.",
    subcommands = {StoreCommand.Verify.class})
final class StoreCommand extends CommandGroup {
  /** Exit 0 when every run verifies, 1 when damage is found (listed on stderr), 2 unusable. */
  @Command(
      name = "verify",
      description =
          "Check every run in the daemon's store against the node's signed records now; a clean"
              + " check seals a checkpoint. Exit 0 verified, 1 damaged, 2 unusable.")
  static final class Verify extends DaemonCommand {
    @Mixin JsonOutput json;

    @Override
    int ask(DaemonClient c) {
      VerifyStoreReply r = c.stub().verifyStore(VerifyStoreRequest.getDefaultInstance());
      StoreVerification v = r.getVerification();
      if (json.on) {
        var o = StatusCommand.verificationJson(v);
        o.put("checkpoint_runs", r.getCheckpointRuns());
        JsonOutput.print(o);
      } else {
        System.out.println(
            StatusCommand.verificationText(v)
                + " ("
                + (v.getFinishedMs() - v.getStartedMs())
                + " ms); checkpoint sealed at "
                + r.getCheckpointRuns()
                + " runs");
      }
      for (String d : v.getDamageList()) {
        System.err.println(d);
      }
      return switch (v.getPhase()) {
        case "VERIFIED" -> 0;
        case "DAMAGED" -> 1;
        default -> {
          System.err.println("sandboxctl store verify: " + v.getPhase() + " " + v.getFailure());
          yield Sandboxctl.UNUSABLE;
        }
      };
    }
  }
}
