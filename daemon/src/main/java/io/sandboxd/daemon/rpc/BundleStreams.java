package io.sandboxd.daemon.rpc;

import com.google.protobuf.ByteString;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.sandboxd.attest.Blake3;
import io.sandboxd.daemon.durable.ExportHandoff;
import io.sandboxd.daemon.run.InputTooLargeException;
import java.io.ByteArrayOutputStream;
import java.util.function.Function;

/**
 * Run bundles in chunks over gRPC (issue 23 item 3), so a bundle larger than one message's limit
 * moves: an export is sent as flow-controlled chunks and a final message with its size and digest
 * (a client that stops reading early leaves the run parked here, {@link ExportHandoff}); an import
 * is received as chunks, concatenated up to {@link #MAX_BUNDLE_BYTES}, then imported whole.
 */
final class BundleStreams {
  /** Bytes per message: well under the 64 MiB message limit on both sides. */
  static final int CHUNK = 1 << 20;

  /** The largest bundle a node takes in (a Java array holds at most 2 GiB). */
  static final long MAX_BUNDLE_BYTES = 1L << 30;

  // Bytes held by every bundle being received at once: concurrent imports share one bound, so
  // N streams cannot make the daemon hold N times the largest bundle.
  private static final java.util.concurrent.atomic.AtomicLong RECEIVING =
      new java.util.concurrent.atomic.AtomicLong();

  private BundleStreams() {}

  /**
   * Streams {@code bundle} of {@code runId} to {@code plain} as the client is ready for it; the
   * hand-off learns the digest once every chunk was sent, or that the stream ended before.
   */
  static void export(
      String runId, byte[] bundle, StreamObserver<ExportRunReply> plain, ExportHandoff handoff) {
    ServerCallStreamObserver<ExportRunReply> out = (ServerCallStreamObserver<ExportRunReply>) plain;
    Sender s = new Sender(runId, bundle, out, handoff);
    out.setOnCancelHandler(s::cancelled);
    out.setOnReadyHandler(s);
    s.run();
  }

  /** Sends chunks while the transport is ready; the last message names size and digest. */
  private static final class Sender implements Runnable {
    private final String runId;
    private final byte[] bundle;
    private final ServerCallStreamObserver<ExportRunReply> out;
    private final ExportHandoff handoff;
    private int offset;
    private boolean finished;

    Sender(
        String runId,
        byte[] bundle,
        ServerCallStreamObserver<ExportRunReply> out,
        ExportHandoff handoff) {
      this.runId = runId;
      this.bundle = bundle;
      this.out = out;
      this.handoff = handoff;
    }

    @Override
    public synchronized void run() {
      if (finished || out.isCancelled()) {
        return;
      }
      while (offset < bundle.length && out.isReady()) {
        int n = Math.min(CHUNK, bundle.length - offset);
        out.onNext(
            ExportRunReply.newBuilder()
                .setRunId(runId)
                .setOffset(offset)
                .setBundle(ByteString.copyFrom(bundle, offset, n))
                .build());
        offset += n;
      }
      if (offset == bundle.length && !finished) {
        finished = true;
        String digest = Blake3.hex(bundle);
        handoff.sent(runId, digest);
        out.onNext(
            ExportRunReply.newBuilder()
                .setRunId(runId)
                .setOffset(offset)
                .setLast(true)
                .setSize(bundle.length)
                .setDigest(digest)
                .build());
        out.onCompleted();
      }
    }

    synchronized void cancelled() {
      if (!finished) {
        finished = true;
        handoff.abandoned(runId);
      }
    }
  }

  /**
   * Receives a bundle in chunks, then answers what {@code importer} makes of the whole; a bundle
   * over {@link #MAX_BUNDLE_BYTES} is refused (RESOURCE_EXHAUSTED, naming the limit) unread.
   */
  static StreamObserver<ImportRunRequest> importing(
      StreamObserver<DurableRunReply> out, Function<byte[], DurableRunReply> importer) {
    return new StreamObserver<>() {
      private final ByteArrayOutputStream buf = new ByteArrayOutputStream();
      private boolean refused;
      // Bytes of RECEIVING this stream holds, given back when it ends however it ends.
      private long held;

      @Override
      public void onNext(ImportRunRequest req) {
        if (refused) {
          return;
        }
        long n = req.getBundle().size();
        if ((long) buf.size() + n > MAX_BUNDLE_BYTES) {
          refuse(
              "bundle: over "
                  + MAX_BUNDLE_BYTES
                  + " bytes, the most a node takes in; nothing imported");
          return;
        }
        if (RECEIVING.addAndGet(n) > MAX_BUNDLE_BYTES) {
          RECEIVING.addAndGet(-n);
          refuse(
              "bundle: the bundles being imported at once already hold "
                  + MAX_BUNDLE_BYTES
                  + " bytes; nothing imported, try again");
          return;
        }
        held += n;
        buf.writeBytes(req.getBundle().toByteArray());
      }

      private void refuse(String why) {
        release();
        out.onError(ErrorStatus.of(new InputTooLargeException(why)).asRuntimeException());
      }

      /** Gives back this stream's share of the bound, once. */
      private void release() {
        if (!refused) {
          refused = true;
          RECEIVING.addAndGet(-held);
        }
        buf.reset();
      }

      @Override
      public void onError(Throwable t) {
        release();
      }

      @Override
      public void onCompleted() {
        if (!refused) {
          byte[] bundle = buf.toByteArray();
          buf.reset();
          try {
            Answer.reply("importRunStream", out, () -> importer.apply(bundle));
          } finally {
            release(); // held until the import is done with the bytes
          }
        }
      }
    };
  }
}
