package io.sandboxd.daemon.cli;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetOutputReply;
import io.sandboxd.daemon.rpc.GetOutputRequest;
import java.io.IOException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** `sandboxctl runs output RUN [--stderr]`: a WASI command's stdout (or stderr), byte for byte. */
@Command(
    name = "output",
    description = "Print what a run wrote to stdout (or, with --stderr, to stderr), as kept.")
final class OutputCommand extends DaemonCommand {
  @Mixin RunArgument run;

  @Option(names = "--stderr", description = "The run's stderr instead of its stdout.")
  boolean stderr;

  @Override
  int ask(DaemonClient c) {
    GetOutputReply r =
        c.stub()
            .getOutput(GetOutputRequest.newBuilder().setRunId(run.id).setStderr(stderr).build());
    try {
      r.getData().writeTo(System.out);
      System.out.flush();
    } catch (IOException e) {
      System.err.println("sandboxctl runs output: cannot write: " + e.getMessage());
      return 1;
    }
    String name = stderr ? "stderr" : "stdout";
    if (!r.getKept() && r.getWritten() > 0) {
      System.err.println(
          "sandboxctl runs output: "
              + name
              + " was not kept (host.logging not granted); the unit wrote "
              + r.getWritten()
              + " bytes");
    } else if (r.getWritten() > r.getData().size()) {
      System.err.println(
          "sandboxctl runs output: "
              + name
              + " truncated at "
              + r.getData().size()
              + " bytes; the unit wrote "
              + r.getWritten());
    }
    return 0;
  }
}
