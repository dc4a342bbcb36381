package io.sandboxd.daemon.cli;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetLogCheckpointRequest;
import io.sandboxd.daemon.rpc.LogCheckpointReply;
import io.sandboxd.daemon.rpc.ProveConsistencyRequest;
import io.sandboxd.daemon.rpc.ProveInclusionRequest;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl log`: the node's append-only log of every record it signs. Each output verifies
 * offline with {@code sandboxctl verify FILE --signer <node key>}.
 */
@Command(
    name = "log",
    description = "The node log: C2SP checkpoints, inclusion and consistency proofs.",
    subcommands = {
      LogCommand.Checkpoint.class,
      LogCommand.Prove.class,
      LogCommand.Consistency.class
    })
final class LogCommand extends CommandGroup {
  @Command(
      name = "checkpoint",
      description =
          "Print the node log's newest checkpoint (a C2SP signed note; signed now if the log grew)."
              + " --vkey prints the verifier key instead.")
  static final class Checkpoint extends DaemonAnswer {
    @Option(names = "--vkey", description = "Print the log's verifier key (name+id+key).")
    boolean vkey;

    @Override
    String answer(DaemonClient c) {
      LogCheckpointReply r =
          c.stub().getLogCheckpoint(GetLogCheckpointRequest.getDefaultInstance());
      return vkey ? r.getVkey() + "\n" : r.getNote();
    }
  }

  @Command(
      name = "prove",
      description =
          "Print the inclusion proof of a record (by address) against the newest checkpoint.")
  static final class Prove extends DaemonAnswer {
    @Parameters(paramLabel = "ADDRESS", description = "The record's address (64 hex).")
    String address;

    @Override
    String answer(DaemonClient c) {
      return c.stub()
              .proveInclusion(ProveInclusionRequest.newBuilder().setAddress(address).build())
              .getProofJson()
          + "\n";
    }
  }

  @Command(
      name = "consistency",
      description = "Print the consistency proof between two sizes of the node log.")
  static final class Consistency extends DaemonAnswer {
    @Parameters(index = "0", paramLabel = "SIZE1", description = "The older size (>= 1).")
    long oldSize;

    @Parameters(index = "1", paramLabel = "SIZE2", description = "The newer size.")
    long newSize;

    @Override
    Optional<String> unusable() {
      return unusableIfNegative("sizes must not be negative", oldSize, newSize);
    }

    @Override
    String answer(DaemonClient c) {
      return c.stub()
              .proveConsistency(
                  ProveConsistencyRequest.newBuilder()
                      .setOldSize(oldSize)
                      .setNewSize(newSize)
                      .build())
              .getProofJson()
          + "\n";
    }
  }
}
