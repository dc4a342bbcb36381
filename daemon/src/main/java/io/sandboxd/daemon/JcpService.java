package io.sandboxd.daemon;

import io.grpc.stub.StreamObserver;
import io.sandboxd.daemon.rpc.AddMintPolicyReply;
import io.sandboxd.daemon.rpc.AddMintPolicyRequest;
import io.sandboxd.daemon.rpc.JcpGrpc;
import io.sandboxd.daemon.rpc.JcpKeysReply;
import io.sandboxd.daemon.rpc.JcpKeysRequest;
import io.sandboxd.daemon.rpc.MintEventReply;
import io.sandboxd.daemon.rpc.MintEventRequest;
import io.sandboxd.daemon.rpc.ReleaseParentReply;
import io.sandboxd.daemon.rpc.ReleaseParentRequest;
import java.util.logging.Logger;

/**
 * The gRPC face of JCP standing grants and amendments (service {@code sandboxd.v1.Jcp}); failures
 * answer through {@link ErrorStatus} like every other call, a refusal naming its rule.
 */
final class JcpService extends JcpGrpc.JcpImplBase {
  private static final Logger LOG = Logger.getLogger(JcpService.class.getName());

  private final StandingGrants standing;

  JcpService(StandingGrants standing) {
    this.standing = standing;
  }

  @Override
  public void jcpKeys(JcpKeysRequest req, StreamObserver<JcpKeysReply> out) {
    SandboxdService.answer(
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
    SandboxdService.answer(
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
    SandboxdService.answer(
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
    SandboxdService.answer(
        "releaseParent",
        out,
        () ->
            ReleaseParentReply.newBuilder()
                .setPolicies(standing.release(req.getParentGrantsId()))
                .build());
  }
}
