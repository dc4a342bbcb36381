package io.sandboxd.daemon.cli;

import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ExportIntotoReply;
import io.sandboxd.daemon.rpc.ExportIntotoRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl runs export RUN --intoto FILE`: the run's evidence as an in-toto statement in a DSSE
 * envelope, packed as a Sigstore bundle v0.3 and signed by the node key.
 */
@Command(
    name = "export",
    description =
        "Export a run's evidence. --intoto FILE: an in-toto Statement v1 (subjects: the module and"
            + " the outputs by digest) in a DSSE envelope signed by the node key, as a Sigstore"
            + " bundle v0.3 (verify with the node's public key, e.g. sigstore-js).")
final class RunsExportCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "RUN", description = "Run id.")
  String runId;

  @Option(
      names = "--intoto",
      paramLabel = "FILE",
      description = "Write the Sigstore bundle (JSON) here; - for stdout.")
  Path intoto;

  @Option(
      names = "--module",
      paramLabel = "WASM",
      description =
          "The run's module, when the node does not hold it: adds its sha256 to the subject.")
  Path module;

  @Option(names = "--socket", paramLabel = "PATH", description = "Daemon socket.")
  Path socket;

  @Override
  public Integer call() {
    if (intoto == null) {
      System.err.println("sandboxctl runs export: name what to export (--intoto FILE)");
      return Sandboxctl.UNUSABLE;
    }
    ExportIntotoRequest.Builder req = ExportIntotoRequest.newBuilder().setRunId(runId);
    if (module != null) {
      try {
        req.setModule(ByteString.copyFrom(Files.readAllBytes(module)));
      } catch (IOException e) {
        System.err.println("sandboxctl runs export: --module: cannot read " + module + ": " + e);
        return Sandboxctl.UNUSABLE;
      }
    }
    Path sock = RunsCommand.socketOrDefault(socket);
    ExportIntotoReply r;
    try (DaemonClient c = new DaemonClient(sock)) {
      r = c.stub().exportIntoto(req.build());
    } catch (StatusRuntimeException e) {
      System.err.println("sandboxctl runs export: " + RpcErrors.describe(e, sock));
      return Sandboxctl.UNUSABLE;
    }
    byte[] bytes = (r.getBundleJson() + "\n").getBytes(StandardCharsets.UTF_8);
    try {
      if (intoto.toString().equals("-")) {
        System.out.write(bytes);
        System.out.flush();
      } else {
        write(intoto, bytes);
        System.err.println(
            "sandboxctl runs export: wrote "
                + intoto
                + " (in-toto statement for run "
                + runId
                + ", signed by "
                + r.getPublicKey()
                + "; subjects: "
                + String.join("; ", r.getSubjectsList())
                + ")");
      }
    } catch (IOException e) {
      System.err.println("sandboxctl runs export: cannot write " + intoto + ": " + e);
      return 1;
    }
    return 0;
  }

  /** Whole or not at all: a temporary file beside the target, then a rename. */
  private static void write(Path target, byte[] bytes) throws IOException {
    Path abs = target.toAbsolutePath();
    Path tmp = Files.createTempFile(abs.getParent(), ".intoto", ".tmp");
    try {
      Files.write(tmp, bytes);
      Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
