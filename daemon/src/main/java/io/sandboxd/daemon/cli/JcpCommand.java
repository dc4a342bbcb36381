package io.sandboxd.daemon.cli;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.AddMintPolicyRequest;
import io.sandboxd.daemon.rpc.AmendRunRequest;
import io.sandboxd.daemon.rpc.CheckpointRunReply;
import io.sandboxd.daemon.rpc.CheckpointRunRequest;
import io.sandboxd.daemon.rpc.JcpKeysReply;
import io.sandboxd.daemon.rpc.JcpKeysRequest;
import io.sandboxd.daemon.rpc.MintEventReply;
import io.sandboxd.daemon.rpc.MintEventRequest;
import io.sandboxd.daemon.rpc.ReleaseParentReply;
import io.sandboxd.daemon.rpc.ReleaseParentRequest;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `sandboxctl jcp ...`: standing grants on the daemon (WIRE.md §2.11). */
@Command(
    name = "jcp",
    description = "Standing grants: the daemon's JCP keys, mint policies, minting on events.",
    subcommands = {
      JcpCommand.Keys.class,
      JcpCommand.Policy.class,
      JcpCommand.Event.class,
      JcpCommand.Release.class,
      JcpCommand.Checkpoint.class,
      JcpCommand.Amend.class
    })
final class JcpCommand extends CommandGroup {
  /** Exit status of a request a JCP rule refused (the rule is named on stderr). */
  static final int REFUSED = 1;

  /** A refusal by a rule exits 1 (the rule is named on stderr); anything else is unusable (2). */
  static int exitOf(StatusRuntimeException e) {
    Status.Code c = e.getStatus().getCode();
    String d = e.getStatus().getDescription();
    boolean rule =
        (c == Status.Code.PERMISSION_DENIED || c == Status.Code.RESOURCE_EXHAUSTED)
            && d != null
            && d.startsWith("rule ");
    return rule ? REFUSED : Sandboxctl.UNUSABLE;
  }

  /**
   * A `jcp` subcommand: one call to the daemon whose answer is the text printed; a refusal by a
   * rule exits {@link #REFUSED}.
   */
  abstract static class Ask extends DaemonAnswer {
    @Override
    int exitOf(StatusRuntimeException e) {
      return JcpCommand.exitOf(e);
    }
  }

  /** `jcp keys`: the holder and agent public keys (an issuer names the holder in its policy). */
  @Command(name = "keys", description = "Print the daemon's holder and agent public keys.")
  static final class Keys extends Ask {

    @Override
    String answer(DaemonClient c) {
      JcpKeysReply r = c.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance());
      return "holder " + r.getHolder() + "\nagent " + r.getAgent() + "\n";
    }
  }

  /** `jcp policy add FILE --parent GRANTS`. */
  @Command(
      name = "policy",
      description = "Register mint policies.",
      subcommands = {Policy.Add.class})
  static final class Policy extends CommandGroup {
    /** Registers an issuer-signed policy envelope; prints its address. */
    @Command(
        name = "add",
        description =
            "Register a signed jcp.mint-policy/1 envelope (sandboxctl sign --key ISSUER) with the"
                + " parent grant it names; prints the policy address.")
    static final class Add extends Ask {

      @Parameters(index = "0", paramLabel = "FILE", description = "The signed policy envelope.")
      Path file;

      @Option(
          names = "--parent",
          required = true,
          paramLabel = "GRANTS",
          description = "The parent grant (its grants_id is the policy's parent_grants_id).")
      Path parent;

      @Override
      String answer(DaemonClient c) throws Input.Unreadable {
        AddMintPolicyRequest req =
            AddMintPolicyRequest.newBuilder()
                .setPolicy(Input.text(file))
                .setParentJson(Input.text(parent))
                .build();
        return c.jcp().addMintPolicy(req).getAddress() + "\n";
      }
    }
  }

  /** `jcp event POLICY EVENT.json [--grants FILE] [--json]`. */
  @Command(
      name = "event",
      description =
          "Offer an event to a mint policy: prints the minted child's grants_id (run it with"
              + " sandboxctl run ... --grants b3:<grants_id>), or the rule that refused it (exit 1).")
  static final class Event extends Ask {

    @Parameters(index = "0", paramLabel = "POLICY", description = "Policy address (hex or b3:).")
    String policy;

    @Parameters(
        index = "1",
        paramLabel = "EVENT.json",
        description =
            "The event: a jcp.event/1 envelope (the event document, a nonce, not_after_ms) signed"
                + " by the policy's issuer or a standing.event_sources key.")
    Path event;

    @Option(
        names = "--grants",
        paramLabel = "FILE",
        description = "The child grant asked for (default: the policy's ceiling).")
    Path grants;

    @Option(names = "--json", description = "Print the signed jcp.child/1 envelope instead.")
    boolean json;

    @Override
    String answer(DaemonClient c) throws Input.Unreadable {
      MintEventRequest req =
          MintEventRequest.newBuilder()
              .setPolicy(policy)
              .setEventJson(Input.text(event))
              .setGrantsJson(grants == null ? "" : Input.text(grants))
              .build();
      MintEventReply r = c.jcp().mintEvent(req);
      return (json ? r.getChild() : r.getGrantsId()) + "\n";
    }
  }

  /** `jcp release PARENT_GRANTS_ID`. */
  @Command(
      name = "release",
      description =
          "Stop holding a parent grant (its policies mint nothing more and its children start no"
              + " run), or release the children minted with a grants_id (they start no run).")
  static final class Release extends Ask {

    @Parameters(
        index = "0",
        paramLabel = "GRANTS_ID",
        description = "A parent's or a minted child's grants_id.")
    String parent;

    @Override
    String answer(DaemonClient c) {
      ReleaseParentReply r =
          c.jcp()
              .releaseParent(ReleaseParentRequest.newBuilder().setParentGrantsId(parent).build());
      return r.getPolicies() + " policies released\n";
    }
  }

  /** `jcp checkpoint RUN`: prints the checkpoint's address (or its envelope with --json). */
  @Command(
      name = "checkpoint",
      description =
          "Checkpoint a running or parked durable run under the daemon's agent key: prints the"
              + " checkpoint address (an amendment names it).")
  static final class Checkpoint extends Ask {

    @Parameters(index = "0", paramLabel = "RUN", description = "The durable run id.")
    String run;

    @Option(names = "--json", description = "Print the signed jcp.checkpoint/1 envelope instead.")
    boolean json;

    @Override
    String answer(DaemonClient c) {
      CheckpointRunReply r =
          c.jcp().checkpointRun(CheckpointRunRequest.newBuilder().setRunId(run).build());
      return (json ? r.getCheckpoint() : r.getAddress()) + "\n";
    }
  }

  /** `jcp amend RUN AMENDMENT.json`: applies an issuer-signed amendment to a live run. */
  @Command(
      name = "amend",
      description =
          "Apply an issuer-signed jcp.amendment/1 (made with sandboxctl sign --key ISSUER) to a"
              + " durable run from its next host call on: prints the new grants_id, or the rule"
              + " that refused it (exit 1).")
  static final class Amend extends Ask {

    @Parameters(index = "0", paramLabel = "RUN", description = "The durable run id.")
    String run;

    @Parameters(index = "1", paramLabel = "AMENDMENT.json", description = "The signed envelope.")
    Path amendment;

    @Override
    String answer(DaemonClient c) throws Input.Unreadable {
      AmendRunRequest req =
          AmendRunRequest.newBuilder().setRunId(run).setAmendment(Input.text(amendment)).build();
      return c.jcp().amendRun(req).getNewGrantsId() + "\n";
    }
  }
}
