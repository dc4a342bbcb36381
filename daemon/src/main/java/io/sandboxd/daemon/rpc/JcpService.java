package io.sandboxd.daemon.rpc;

import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.daemon.durable.DurableRunException;
import io.sandboxd.daemon.jcp.LiveAmendments;
import io.sandboxd.daemon.jcp.StandingGrants;
import io.sandboxd.enforcer.Amendments;
import java.util.logging.Logger;

/**
 * The gRPC face of JCP standing grants and amendments (service {@code sandboxd.v1.Jcp}); failures
 * answer through {@link ErrorStatus} like every other call, a refusal naming its rule.
 */
public final class JcpService extends JcpGrpc.JcpImplBase {
  private static final Logger LOG = Logger.getLogger(JcpService.class.getName());

  private final StandingGrants standing;
  private volatile LiveAmendments live;

  public JcpService(StandingGrants standing) {
    this.standing = standing;
  }

  /** Checkpoints and amends durable runs through {@code live} from now on. */
  public JcpService useLive(LiveAmendments live) {
    this.live = live;
    return this;
  }

  private LiveAmendments live() {
    LiveAmendments l = live;
    if (l == null) {
      throw new DurableRunException.Refused("this node keeps no durable runs to checkpoint");
    }
    return l;
  }

  @Override
  public void checkpointRun(CheckpointRunRequest req, StreamObserver<CheckpointRunReply> out) {
    Answer.reply(
        "checkpointRun",
        out,
        () -> {
          Envelope cp = live().checkpoint(req.getRunId());
          JcpCheckpoint c = JcpCheckpoint.fromCore(cp.core());
          return CheckpointRunReply.newBuilder()
              .setCheckpoint(cp.toJsonLine())
              .setAddress(cp.address())
              .setSeq(c.seq())
              .setGrantsId(c.grantsId())
              .build();
        });
  }

  @Override
  public void amendRun(AmendRunRequest req, StreamObserver<AmendRunReply> out) {
    Answer.reply(
        "amendRun",
        out,
        () -> {
          Amendments.Accepted a = live().amend(req.getRunId(), req.getAmendment());
          LOG.info(
              () ->
                  "run "
                      + req.getRunId()
                      + " amended by "
                      + a.address()
                      + " to grants "
                      + a.newGrants().grantsId());
          return AmendRunReply.newBuilder()
              .setAddress(a.address())
              .setNewGrantsId(a.newGrants().grantsId())
              .build();
        });
  }

  @Override
  public void jcpKeys(JcpKeysRequest req, StreamObserver<JcpKeysReply> out) {
    Answer.reply(
        "jcpKeys",
        out,
        () ->
            JcpKeysReply.newBuilder()
                .setHolder(standing.holderKey().hex())
                .setAgent(standing.agentKey().hex())
                .build());
  }

  @Override
  public void addMintPolicy(AddMintPolicyRequest req, StreamObserver<AddMintPolicyReply> out) {
    Answer.reply(
        "addMintPolicy",
        out,
        () -> {
          StandingGrants.Added a = standing.addPolicy(req.getPolicy(), req.getParentJson());
          if (!a.alreadyHeld()) {
            LOG.info(() -> "mint policy " + a.address() + " registered");
          }
          return AddMintPolicyReply.newBuilder()
              .setAddress(a.address())
              .setAlreadyHeld(a.alreadyHeld())
              .build();
        });
  }

  @Override
  public void mintEvent(MintEventRequest req, StreamObserver<MintEventReply> out) {
    Answer.reply(
        "mintEvent",
        out,
        () -> {
          StandingGrants.Minted m =
              standing.mint(req.getPolicy(), req.getEventJson(), req.getGrantsJson());
          return MintEventReply.newBuilder()
              .setChild(m.child().toJsonLine())
              .setGrantsId(m.grantsId())
              .setSeq(m.seq())
              .build();
        });
  }

  @Override
  public void releaseParent(ReleaseParentRequest req, StreamObserver<ReleaseParentReply> out) {
    Answer.reply(
        "releaseParent",
        out,
        () ->
            ReleaseParentReply.newBuilder()
                .setPolicies(standing.release(req.getParentGrantsId()))
                .build());
  }
}
