package io.sandboxd.daemon.cli;

import io.grpc.StatusRuntimeException;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ExportRunReply;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl runs export RUN --bundle FILE`: a parked run's self-contained bundle (segments,
 * receipts, attestations, snapshot blobs, module, grants), written durably; the daemon then refuses
 * to resume the run itself (import it elsewhere with `runs import`).
 */
@Command(
    name = "export",
    description =
        "Export a parked run as a bundle for another node (this node then will not resume it).")
final class RunsExportCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "RUN", description = "Run id.")
  String runId;

  @Option(names = "--bundle", paramLabel = "FILE", description = "Write the run bundle here.")
  Path bundle;

  @Option(names = "--socket", paramLabel = "PATH", description = "Daemon socket.")
  Path socket;

  @Override
  public Integer call() {
    if (bundle == null) {
      System.err.println("sandboxctl runs export: name the output with --bundle FILE");
      return Sandboxctl.UNUSABLE;
    }
    Path sock = RunsCommand.socketOrDefault(socket);
    ExportRunReply reply;
    try (DaemonClient c = new DaemonClient(sock)) {
      reply = c.stub().exportRun(DurableRunRequest.newBuilder().setRunId(runId).build());
    } catch (StatusRuntimeException e) {
      System.err.println("sandboxctl runs export: " + RpcErrors.describe(e, sock));
      return Sandboxctl.UNUSABLE;
    }
    try {
      // Written beside its target, fsynced, then renamed: a bundle file is whole or absent.
      Path dir = bundle.toAbsolutePath().getParent();
      Path tmp = Files.createTempFile(dir, ".bundle-", ".tmp");
      try (var ch =
          java.nio.channels.FileChannel.open(tmp, java.nio.file.StandardOpenOption.WRITE)) {
        var buf = reply.getBundle().asReadOnlyByteBuffer();
        while (buf.hasRemaining()) {
          ch.write(buf);
        }
        ch.force(true);
      }
      Files.move(tmp, bundle, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      System.err.println("sandboxctl runs export: cannot write " + bundle + ": " + e.getMessage());
      return Sandboxctl.UNUSABLE;
    }
    System.out.println(
        "exported run " + runId + " to " + bundle + " (" + reply.getBundle().size() + " bytes)");
    return 0;
  }
}
