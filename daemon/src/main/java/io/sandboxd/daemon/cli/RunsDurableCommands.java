package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.FirstReply;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ImportRunRequest;
import io.sandboxd.daemon.rpc.ResumeRunRequest;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.rpc.WaitRunRequest;
import java.nio.file.Path;
import java.util.function.BiFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `sandboxctl runs suspend|resume|wait|log|import`: following and moving durable runs. */
final class RunsDurableCommands {
  private RunsDurableCommands() {}

  static void print(DurableRunReply r, boolean json) {
    if (json) {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("run_id", r.getRunId());
      o.put("state", r.getState());
      if (r.getOutcomeJson().isEmpty()) {
        o.putNull("outcome");
      } else {
        o.set("outcome", CanonicalJson.parse(r.getOutcomeJson()));
      }
      o.put("segments", r.getSegments());
      o.put("head", r.getHead());
      JsonOutput.print(o);
      return;
    }
    System.out.println(
        "run "
            + r.getRunId()
            + " "
            + r.getState()
            + (r.getOutcomeJson().isEmpty() ? "" : " " + r.getOutcomeJson())
            + " ("
            + r.getSegments()
            + " segment(s), head "
            + r.getHead()
            + ")");
  }

  /** Asks the daemon {@code ask} about one durable run and prints the state it answers. */
  private static int state(
      DaemonClient c,
      RunArgument run,
      BiFunction<SandboxdGrpc.SandboxdBlockingStub, DurableRunRequest, DurableRunReply> ask) {
    print(ask.apply(c.stub(), DurableRunRequest.newBuilder().setRunId(run.id).build()), false);
    return 0;
  }

  /** `runs suspend RUN`. */
  @Command(name = "suspend", description = "Park a running durable run; waits until it is parked.")
  static final class Suspend extends DaemonCommand {
    @Mixin RunArgument run;

    @Override
    int ask(DaemonClient c) {
      return state(c, run, SandboxdGrpc.SandboxdBlockingStub::suspendRun);
    }
  }

  /** `runs resume RUN [--env NAME|b3:ADDR] [--grants FILE]`. */
  @Command(name = "resume", description = "Resume a parked run (here, or after `runs import`).")
  static final class Resume extends DaemonCommand {
    @Mixin RunArgument run;

    @Option(
        names = "--env",
        paramLabel = "NAME|b3:ADDR",
        description = "The environment to resume in; it must be the one the run was parked in.")
    String env = "";

    @Option(
        names = "--grants",
        paramLabel = "FILE",
        description = "Offer these grants (default: those in force); they may not differ.")
    Path grants;

    @Override
    int ask(DaemonClient c) throws Input.Unreadable {
      ResumeRunRequest req =
          ResumeRunRequest.newBuilder()
              .setRunId(run.id)
              .setEnv(env)
              .setGrantsJson(grants == null ? "" : Input.text(grants))
              .build();
      DurableRunReply r = c.stub().resumeRun(req);
      print(r, false);
      System.out.println("resume segment " + r.getSegment());
      return 0;
    }
  }

  /** `runs wait RUN [--json]`. */
  @Command(name = "wait", description = "Wait until a durable run completes or parks.")
  static final class Wait extends DaemonCommand {
    @Mixin RunArgument run;

    @Option(names = "--json", description = "Print the state as one JSON object.")
    boolean json;

    @Option(
        names = "--timeout-ms",
        paramLabel = "MS",
        description = "Give up waiting after this long (default 60000).")
    long timeoutMs = 60_000;

    @Override
    int ask(DaemonClient c) {
      DurableRunReply r =
          c.stub()
              .withDeadlineAfter(timeoutMs + 30_000, java.util.concurrent.TimeUnit.MILLISECONDS)
              .waitRun(
                  WaitRunRequest.newBuilder().setRunId(run.id).setTimeoutMs(timeoutMs).build());
      print(r, json);
      return r.getState().equals("running") ? 1 : 0;
    }
  }

  /** `runs log RUN`. */
  @Command(name = "log", description = "Print a durable run's log across all its segments.")
  static final class Log extends DaemonCommand {
    @Mixin RunArgument run;

    @Override
    int ask(DaemonClient c) {
      System.out.print(
          c.stub().getRunLog(DurableRunRequest.newBuilder().setRunId(run.id).build()).getLog());
      System.out.flush();
      return 0;
    }
  }

  /** `runs import FILE`. */
  @Command(
      name = "import",
      description = "Import a run bundle; it is held parked, ready to resume.")
  static final class Import extends DaemonCommand {
    @Parameters(index = "0", paramLabel = "FILE", description = "A bundle from `runs export`.")
    Path file;

    @Override
    int ask(DaemonClient c) throws Input.Unreadable {
      byte[] bytes = Input.bytes(file);
      // In chunks (issue 23): a bundle may be larger than one gRPC message.
      FirstReply<DurableRunReply> done = new FirstReply<>();
      io.grpc.stub.StreamObserver<ImportRunRequest> up =
          SandboxdGrpc.newStub(c.channel()).importRunStream(done);
      for (int off = 0; off < bytes.length; off += CHUNK) {
        up.onNext(
            ImportRunRequest.newBuilder()
                .setBundle(ByteString.copyFrom(bytes, off, Math.min(CHUNK, bytes.length - off)))
                .build());
      }
      up.onCompleted();
      DurableRunReply r;
      try {
        r = done.future().get();
      } catch (java.util.concurrent.ExecutionException e) {
        if (e.getCause() instanceof StatusRuntimeException s) {
          throw s;
        }
        throw io.grpc.Status.fromThrowable(e.getCause()).asRuntimeException();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw io.grpc.Status.CANCELLED.withDescription("interrupted").asRuntimeException();
      }
      print(r, false);
      return 0;
    }
  }

  /** Bytes per import message, well under the 64 MiB message limit. */
  static final int CHUNK = 1 << 20;

  /** `runs reclaim RUN`. */
  @Command(
      name = "reclaim",
      description =
          "Take back an export that was never confirmed (interrupted, or its bundle lost): the run"
              + " is parked here and resumable again. Destroy any copy of that bundle: imported"
              + " elsewhere too, the run would fork.")
  static final class Reclaim extends DaemonCommand {
    @Mixin RunArgument run;

    @Override
    int ask(DaemonClient c) {
      return state(c, run, SandboxdGrpc.SandboxdBlockingStub::reclaimRun);
    }
  }
}
