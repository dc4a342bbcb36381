package io.sandboxd.daemon.cli;

import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.ConfirmExportRequest;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import io.sandboxd.daemon.rpc.ExportIntotoReply;
import io.sandboxd.daemon.rpc.ExportIntotoRequest;
import io.sandboxd.daemon.rpc.ExportRunReply;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.Optional;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `sandboxctl runs export RUN (--bundle FILE | --intoto FILE)`: a parked run's self-contained
 * bundle for another node (segments, receipts, attestations, snapshot blobs, module, grants),
 * streamed to a file and confirmed once written whole (the daemon then refuses to resume the run),
 * or the run's evidence as an in-toto statement in a DSSE envelope, packed as a Sigstore bundle
 * v0.3 and signed by the node key.
 */
@Command(
    name = "export",
    description =
        "Export a run. --bundle FILE: a parked run as a bundle for another node, streamed to FILE"
            + " (fsynced); once it is whole the export is confirmed and this node will not resume"
            + " the run (see `runs import`; an interrupted export leaves it here, and `runs"
            + " reclaim` takes back one never confirmed). --intoto FILE: the run's evidence as an in-toto"
            + " Statement v1 (subjects: the module and the outputs by digest) in a DSSE envelope"
            + " signed by the node key, as a Sigstore bundle v0.3 (verify with the node's public"
            + " key, e.g. sigstore-js).")
final class RunsExportCommand extends DaemonCommand {
  @Mixin RunArgument run;

  /** Exactly one of the two outputs. */
  static final class Target {
    @Option(
        names = "--bundle",
        paramLabel = "FILE",
        required = true,
        description = "Write the run bundle here.")
    Path bundle;

    @Option(
        names = "--intoto",
        paramLabel = "FILE",
        required = true,
        description = "Write the Sigstore bundle (JSON) here; - for stdout.")
    Path intoto;
  }

  @ArgGroup(exclusive = true, multiplicity = "1")
  Target target;

  @Option(
      names = "--module",
      paramLabel = "WASM",
      description =
          "With --intoto, the run's module when the node does not hold it: adds its sha256 to the"
              + " subject.")
  Path module;

  @Option(
      names = "--to",
      paramLabel = "KEY",
      description =
          "With --bundle, the public key of the node it is for (its `sandboxctl status` key): any"
              + " other node refuses the bundle.")
  String to;

  @Override
  Optional<String> unusable() {
    return target.bundle != null && module != null
        ? Optional.of("--module goes with --intoto only")
        : Optional.empty();
  }

  @Override
  int ask(DaemonClient c) {
    return target.bundle != null ? bundle(c) : intoto(c);
  }

  private int bundle(DaemonClient c) {
    Path abs = target.bundle.toAbsolutePath();
    Path tmp = null;
    boolean placed = false;
    try {
      // Streamed (issue 23): chunks go to a temporary file; only once it is whole, fsynced and in
      // place is the export confirmed, so an interruption leaves the run resumable on the node.
      // The daemon answers first, so a refusal is reported as such, before any file is made.
      Iterator<ExportRunReply> it =
          c.stub()
              .exportRun(
                  DurableRunRequest.newBuilder()
                      .setRunId(run.id)
                      .setDestinationKey(to == null ? "" : to)
                      .build());
      ExportRunReply first = it.next();
      try {
        tmp = Files.createTempFile(abs.getParent(), ".export-", ".tmp");
        ExportRunReply last = null;
        long written = 0;
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
          ExportRunReply r = first;
          while (r != null) {
            if (r.getLast()) {
              last = r;
              break;
            }
            if (r.getOffset() != written) {
              throw new IOException("chunk at " + r.getOffset() + ", expected " + written);
            }
            ByteBuffer b = r.getBundle().asReadOnlyByteBuffer();
            while (b.hasRemaining()) {
              written += ch.write(b);
            }
            r = it.hasNext() ? it.next() : null;
          }
          ch.force(true);
        }
        if (last == null || last.getSize() != written) {
          throw new IOException(
              "the stream ended after "
                  + written
                  + " bytes"
                  + (last == null ? " without its last message" : ", not " + last.getSize()));
        }
        String digest = Blake3.hex(Files.readAllBytes(tmp));
        if (!digest.equals(last.getDigest())) {
          throw new IOException(
              "the bundle written hashes to " + digest + ", not " + last.getDigest());
        }
        Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        placed = true;
        syncDirectory(abs.getParent());
        c.stub()
            .confirmExport(
                ConfirmExportRequest.newBuilder().setRunId(run.id).setDigest(digest).build());
        System.out.println(
            "exported run "
                + run.id
                + " to "
                + target.bundle
                + " ("
                + written
                + " bytes, "
                + digest
                + ")");
        return 0;
      } catch (IOException e) {
        // No whole bundle may exist: take the export back at once, so the run stays resumable
        // here (a bundle already in place is removed first, or the run could resume twice).
        String back;
        try {
          if (placed) {
            Files.deleteIfExists(abs);
          }
          c.stub().reclaimRun(DurableRunRequest.newBuilder().setRunId(run.id).build());
          back = "taken back: parked on the node again";
        } catch (StatusRuntimeException r) {
          back = "not taken back (" + RpcErrors.describe(r, daemon.path()) + ")";
        } catch (IOException r) {
          back = "not taken back (" + abs + " could not be removed: " + r.getMessage() + ")";
        }
        return Sandboxctl.unusable(
            "runs export",
            "cannot write "
                + target.bundle
                + ": "
                + e.getMessage()
                + "; the run was not moved, "
                + back);
      }
    } finally {
      try {
        if (tmp != null) {
          Files.deleteIfExists(tmp);
        }
      } catch (IOException ignored) {
        // Best effort: a leftover temporary file is named .export-*.tmp beside the target.
      }
    }
  }

  /** Makes a rename durable: the directory entry is fsynced too. */
  private static void syncDirectory(Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    }
  }

  private int intoto(DaemonClient c) {
    ExportIntotoRequest.Builder req = ExportIntotoRequest.newBuilder().setRunId(run.id);
    if (module != null) {
      try {
        req.setModule(ByteString.copyFrom(Files.readAllBytes(module)));
      } catch (IOException e) {
        return Sandboxctl.unusable("runs export", "--module: cannot read " + module + ": " + e);
      }
    }
    ExportIntotoReply r = c.stub().exportIntoto(req.build());
    byte[] bytes = (r.getBundleJson() + "\n").getBytes(StandardCharsets.UTF_8);
    try {
      if (target.intoto.toString().equals("-")) {
        System.out.write(bytes);
        System.out.flush();
      } else {
        write(target.intoto, ByteBuffer.wrap(bytes));
        System.err.println(
            "sandboxctl runs export: wrote "
                + target.intoto
                + " (in-toto statement for run "
                + run.id
                + ", signed by "
                + r.getPublicKey()
                + "; subjects: "
                + String.join("; ", r.getSubjectsList())
                + ")");
      }
    } catch (IOException e) {
      return Sandboxctl.unusable("runs export", "cannot write " + target.intoto + ": " + e);
    }
    return 0;
  }

  /** Whole or absent: a temporary file beside the target, fsynced, then renamed over it. */
  private static void write(Path target, ByteBuffer bytes) throws IOException {
    Path abs = target.toAbsolutePath();
    Path tmp = Files.createTempFile(abs.getParent(), ".export-", ".tmp");
    try {
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        while (bytes.hasRemaining()) {
          ch.write(bytes);
        }
        ch.force(true);
      }
      Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
