package io.sandboxd.daemon.rpc;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.sandboxd.config.NodePolicy;
import io.sandboxd.config.Permission;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.run.PolicyDeniedException;
import io.sandboxd.daemon.run.SubmitterPolicy;
import io.sandboxd.daemon.store.RunOwners;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Authorizes every call of the sandboxd and JCP services against the node policy (issue 23): a
 * method not listed in {@link #NEEDS} is refused whatever the caller, a listed one needs its
 * permission in the rule that matches the caller (SO_PEERCRED), and a call on a run also needs the
 * caller to own that run or to hold {@link Permission#ANY_RUN}. {@code ListRuns} shows an
 * owner-only caller its own runs. Refusals are PERMISSION_DENIED and name the rule (or say none
 * matched).
 */
public final class RpcAuthorization implements ServerInterceptor {
  /** What one method needs: a permission, and whether it acts on the run its request names. */
  record Need(Permission permission, boolean onRun) {}

  private static Need node(Permission p) {
    return new Need(p, false);
  }

  private static Need run(Permission p) {
    return new Need(p, true);
  }

  /** Every method a caller may reach, and what it needs; anything else is refused. */
  static final Map<String, Need> NEEDS =
      Map.ofEntries(
          Map.entry("sandboxd.v1.Sandboxd/Submit", node(Permission.SUBMIT)),
          Map.entry("sandboxd.v1.Sandboxd/GetRun", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/ListRuns", node(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/GetRecords", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/Replay", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/GetOutput", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/ExportIntoto", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/SuspendRun", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/ResumeRun", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/WaitRun", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/GetRunLog", run(Permission.OWN_RUNS)),
          Map.entry("sandboxd.v1.Sandboxd/ExportRun", run(Permission.EXPORT)),
          Map.entry("sandboxd.v1.Sandboxd/ConfirmExport", run(Permission.EXPORT)),
          Map.entry("sandboxd.v1.Sandboxd/ReclaimRun", run(Permission.EXPORT)),
          Map.entry("sandboxd.v1.Sandboxd/ImportRun", node(Permission.IMPORT)),
          Map.entry("sandboxd.v1.Sandboxd/ImportRunStream", node(Permission.IMPORT)),
          Map.entry("sandboxd.v1.Sandboxd/PutModule", node(Permission.MODULES)),
          Map.entry("sandboxd.v1.Sandboxd/ListModules", node(Permission.STATUS)),
          Map.entry("sandboxd.v1.Sandboxd/ListPools", node(Permission.STATUS)),
          Map.entry("sandboxd.v1.Sandboxd/ListEnvironments", node(Permission.STATUS)),
          Map.entry("sandboxd.v1.Sandboxd/GetStatus", node(Permission.STATUS)),
          Map.entry("sandboxd.v1.Sandboxd/VerifyStore", node(Permission.STORE)),
          Map.entry("sandboxd.v1.Sandboxd/GetLogCheckpoint", node(Permission.STORE)),
          Map.entry("sandboxd.v1.Sandboxd/ProveInclusion", node(Permission.STORE)),
          Map.entry("sandboxd.v1.Sandboxd/ProveConsistency", node(Permission.STORE)),
          Map.entry("sandboxd.v1.Sandboxd/AggregateFleet", node(Permission.STORE)),
          Map.entry("sandboxd.v1.Sandboxd/ProveFleet", node(Permission.STORE)),
          Map.entry("sandboxd.v1.Jcp/JcpKeys", node(Permission.STATUS)),
          Map.entry("sandboxd.v1.Jcp/AddMintPolicy", node(Permission.JCP_ISSUER)),
          Map.entry("sandboxd.v1.Jcp/ReleaseParent", node(Permission.JCP_ISSUER)),
          Map.entry("sandboxd.v1.Jcp/AmendRun", node(Permission.JCP_ISSUER)),
          Map.entry("sandboxd.v1.Jcp/MintEvent", node(Permission.JCP_AGENT)),
          Map.entry("sandboxd.v1.Jcp/CheckpointRun", node(Permission.JCP_AGENT)));

  private final SubmitterPolicy policy;
  private final RunOwners owners;

  public RpcAuthorization(SubmitterPolicy policy, RunOwners owners) {
    this.policy = policy;
    this.owners = owners;
  }

  /** Why a call is refused; thrown inside this class only and answered PERMISSION_DENIED. */
  private static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message, null, false, false);
    }
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String method = call.getMethodDescriptor().getFullMethodName();
    Caller caller = Caller.current();
    NodePolicy.Rule rule;
    Need need = NEEDS.get(method);
    try {
      if (need == null) {
        throw new Refused("method " + method + " declares no permission: refused to everyone");
      }
      rule = ruleFor(caller);
      require(rule, caller, need.permission(), method);
    } catch (Refused e) {
      return refuse(call, e.getMessage());
    }
    boolean anyRun = rule.permissions().contains(Permission.ANY_RUN);
    ServerCall<Q, R> answering =
        method.equals("sandboxd.v1.Sandboxd/ListRuns") && !anyRun
            ? ownRunsOnly(call, caller)
            : call;
    ServerCall.Listener<Q> inner = next.startCall(answering, headers);
    // The request is read before it is handed on: a refused one never reaches the service.
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(inner) {
      private boolean refused;

      @Override
      public void onMessage(Q message) {
        try {
          if (need.onRun()) {
            requireRun(rule, caller, anyRun, field(message, "run_id"), method);
          }
          if (method.equals("sandboxd.v1.Sandboxd/Submit")
              && !field(message, "minted_grants").isEmpty()) {
            require(rule, caller, Permission.JCP_HOLDER, method + " (minted_grants)");
          }
        } catch (Refused e) {
          refused = true;
          call.close(Status.PERMISSION_DENIED.withDescription(e.getMessage()), new Metadata());
          return;
        }
        super.onMessage(message);
      }

      @Override
      public void onHalfClose() {
        if (!refused) {
          super.onHalfClose();
        }
      }
    };
  }

  private NodePolicy.Rule ruleFor(Caller caller) {
    try {
      return policy.ruleFor(caller);
    } catch (PolicyDeniedException e) {
      throw new Refused(e.getMessage());
    }
  }

  private static void require(NodePolicy.Rule rule, Caller caller, Permission p, String method) {
    boolean held =
        rule.permissions().contains(p)
            || (p == Permission.OWN_RUNS && rule.permissions().contains(Permission.ANY_RUN));
    if (!held) {
      throw new Refused(
          "node policy rule \""
              + rule.name()
              + "\" does not give "
              + caller
              + " permission "
              + p.key()
              + " ("
              + method
              + "; the rule gives "
              + rule.permissions().stream().map(Permission::key).sorted().toList()
              + ")");
    }
  }

  private void requireRun(
      NodePolicy.Rule rule, Caller caller, boolean anyRun, String runId, String method) {
    if (anyRun) {
      return;
    }
    if (!rule.permissions().contains(Permission.OWN_RUNS)) {
      throw new Refused(
          "node policy rule \""
              + rule.name()
              + "\" lets "
              + caller
              + " act on no run, own or other ("
              + method
              + ")");
    }
    OptionalLong owner = owners.of(runId);
    if (owner.isEmpty() || owner.getAsLong() != caller.uid()) {
      // The same words for another's run and for no run: a refusal reveals nothing of others.
      throw new Refused(
          "node policy rule \""
              + rule.name()
              + "\" lets "
              + caller
              + " act on its own runs only, and run \""
              + runId
              + "\" is not one of them ("
              + method
              + "; permission any_run would allow it)");
    }
  }

  /** {@code call} with each ListRuns reply cut to the caller's own runs. */
  private <Q, R> ServerCall<Q, R> ownRunsOnly(ServerCall<Q, R> call, Caller caller) {
    return new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
      @Override
      @SuppressWarnings("unchecked")
      public void sendMessage(R message) {
        if (message instanceof ListRunsReply reply) {
          ListRunsReply.Builder b = reply.toBuilder().clearRuns();
          for (RunInfo r : reply.getRunsList()) {
            OptionalLong owner = owners.of(r.getRunId());
            if (owner.isPresent() && owner.getAsLong() == caller.uid()) {
              b.addRuns(r);
            }
          }
          super.sendMessage((R) b.build());
          return;
        }
        super.sendMessage(message);
      }
    };
  }

  /** A string field of a request by name ({@code ""} when the message has none). */
  private static String field(Object message, String name) {
    if (message instanceof Message m) {
      Descriptors.FieldDescriptor f = m.getDescriptorForType().findFieldByName(name);
      if (f != null && f.getJavaType() == Descriptors.FieldDescriptor.JavaType.STRING) {
        return (String) m.getField(f);
      }
    }
    return "";
  }

  private static <Q, R> ServerCall.Listener<Q> refuse(ServerCall<Q, R> call, String why) {
    call.close(Status.PERMISSION_DENIED.withDescription(why), new Metadata());
    return new ServerCall.Listener<>() {};
  }
}
