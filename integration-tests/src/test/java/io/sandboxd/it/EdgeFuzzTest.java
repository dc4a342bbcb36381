package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.grpc.CallOptions;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.io.ByteArrayOutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13 item 7: a bounded fuzz of the running daemon's edges (raw garbage and malformed HTTP/2
 * and gRPC frames on its socket, undecodable messages, truncated and oversized modules, hostile
 * grants), from a fixed seed. Afterwards the daemon must still serve a normal unit, its log must
 * show no crash, and its threads and open descriptors must come back to where they were.
 */
class EdgeFuzzTest {
  private static final long SEED = 0xf022_13L;
  private static final Set<Status.Code> CLIENT_ERRORS =
      Set.of(
          Status.Code.INVALID_ARGUMENT,
          Status.Code.RESOURCE_EXHAUSTED,
          Status.Code.NOT_FOUND,
          Status.Code.FAILED_PRECONDITION,
          Status.Code.PERMISSION_DENIED);

  @TempDir Path dir;

  @Test
  void theDaemonSurvivesHostileInputAndLeaksNothing() throws Exception {
    Path socket = dir.resolve("run/sandboxd.sock");
    Random random = new Random(SEED);
    byte[] hello = Submissions.exampleUnit("hello");
    String grants = Submissions.exampleGrants("hello");
    Map<Status.Code, Integer> answers = new EnumMap<>(Status.Code.class);
    int tried = 0;
    try (DaemonProcess d = DaemonProcess.start(List.of("-Xmx384m"), dir.resolve("state"), socket);
        DaemonClient c = new DaemonClient(socket)) {
      long pid = d.process.pid();
      assertEquals("Completed", outcome(Submissions.submit(c, hello, grants)));
      int threadsBefore = count(Path.of("/proc/" + pid + "/task"));
      int fdsBefore = count(Path.of("/proc/" + pid + "/fd"));

      // Raw garbage, and garbage after a valid HTTP/2 preface.
      for (int i = 0; i < 40; i++, tried++) {
        byte[] junk = new byte[1 + random.nextInt(4096)];
        random.nextBytes(junk);
        rawExchange(socket, i % 2 == 0 ? junk : concat(preface(), junk));
      }
      // Well-formed HTTP/2 carrying malformed gRPC: wrong length prefixes, compressed flag without
      // an encoding, a declared length far past the limit, a stream cut off mid-message.
      for (int i = 0; i < 40; i++, tried++) {
        rawExchange(socket, grpcCall(random, i));
      }
      // Messages that are not the protobuf they claim to be.
      MethodDescriptor<byte[], byte[]> submitRaw =
          MethodDescriptor.<byte[], byte[]>newBuilder()
              .setType(MethodDescriptor.MethodType.UNARY)
              .setFullMethodName("sandboxd.v1.Sandboxd/Submit")
              .setRequestMarshaller(new RawBytes())
              .setResponseMarshaller(new RawBytes())
              .build();
      for (int i = 0; i < 60; i++, tried++) {
        byte[] junk = new byte[random.nextInt(2048)];
        random.nextBytes(junk);
        try {
          ClientCalls.blockingUnaryCall(
              c.stub().getChannel(),
              submitRaw,
              CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
              junk);
        } catch (StatusRuntimeException e) {
          answers.merge(e.getStatus().getCode(), 1, Integer::sum);
          assertTrue(
              CLIENT_ERRORS.contains(e.getStatus().getCode()), "junk " + i + ": " + e.getStatus());
        }
      }
      // Truncated modules and modules with flipped bytes.
      for (int i = 0; i < 60; i++, tried++) {
        byte[] m;
        if (i % 2 == 0) {
          m = java.util.Arrays.copyOf(hello, random.nextInt(hello.length));
        } else {
          m = hello.clone();
          m[8 + random.nextInt(m.length - 8)] ^= (byte) (1 + random.nextInt(255));
        }
        submitExpectingClientError(c, m, grants, answers, "module mutation " + i, true);
      }
      // An oversized module: past the daemon's inbound limit.
      tried++;
      StatusRuntimeException big =
          assertThrowsStatus(c, new byte[(64 << 20) + 1024], grants, "oversized module");
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, big.getStatus().getCode());
      // Hostile grants: byte flips, truncation, deep nesting, huge numbers, wrong types.
      List<String> hostile = hostileGrants(grants, random);
      for (String g : hostile) {
        tried++;
        submitExpectingClientError(c, hello, g, answers, "grants " + shorten(g), false);
      }

      // Still serving, nothing crashed, nothing kept.
      assertEquals("Completed", outcome(Submissions.submit(c, hello, grants)));
      assertTrue(d.process.isAlive());
      String log = d.log();
      assertFalse(log.contains("SEVERE"), log);
      assertFalse(log.contains("OutOfMemoryError"), log);
      int threadsAfter = settle(Path.of("/proc/" + pid + "/task"), threadsBefore + 4);
      int fdsAfter = settle(Path.of("/proc/" + pid + "/fd"), fdsBefore + 2);
      System.out.printf(
          "edge fuzz: inputs=%d crashes=0 answers=%s threads %d->%d fds %d->%d seed=%d%n",
          tried, answers, threadsBefore, threadsAfter, fdsBefore, fdsAfter, SEED);
      assertTrue(threadsAfter <= threadsBefore + 4, threadsBefore + " -> " + threadsAfter);
      assertTrue(fdsAfter <= fdsBefore + 2, fdsBefore + " -> " + fdsAfter);
    }
  }

  private static String outcome(SubmitReply r) {
    return r.getOutcomeJson().replace("\"", "");
  }

  private static String shorten(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...(" + s.length() + " chars)";
  }

  private static StatusRuntimeException assertThrowsStatus(
      DaemonClient c, byte[] module, String grants, String what) {
    try {
      SubmitReply r = Submissions.submit(c, module, grants, "run", 60);
      fail(what + " was accepted: " + r.getOutcomeJson());
      return null;
    } catch (StatusRuntimeException e) {
      return e;
    }
  }

  /**
   * A client mistake gets a client-error code (or, for a module that still happens to be valid, a
   * run); never INTERNAL, UNKNOWN or a hang.
   */
  private static void submitExpectingClientError(
      DaemonClient c,
      byte[] module,
      String grants,
      Map<Status.Code, Integer> answers,
      String what,
      boolean mayRun) {
    try {
      SubmitReply r = Submissions.submit(c, module, grants, "run", 60);
      answers.merge(Status.Code.OK, 1, Integer::sum);
      if (!mayRun) {
        // A grant mutation may still be a valid grant (a flipped digit): it must then have run.
        assertFalse(r.getRunId().isEmpty(), what);
      }
    } catch (StatusRuntimeException e) {
      answers.merge(e.getStatus().getCode(), 1, Integer::sum);
      assertTrue(
          CLIENT_ERRORS.contains(e.getStatus().getCode()),
          what + ": " + e.getStatus().getCode() + " " + e.getStatus().getDescription());
      String description = String.valueOf(e.getStatus().getDescription());
      assertFalse(description.contains("\tat "), what + ": " + description);
    }
  }

  private static List<String> hostileGrants(String valid, Random random) {
    List<String> out = new ArrayList<>();
    byte[] bytes = valid.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < 40; i++) {
      byte[] m = bytes.clone();
      m[random.nextInt(m.length)] = (byte) random.nextInt(256);
      out.add(new String(m, StandardCharsets.ISO_8859_1));
    }
    for (int i = 0; i < 15; i++) {
      out.add(valid.substring(0, random.nextInt(valid.length())));
    }
    out.add("[".repeat(100_000) + "]".repeat(100_000));
    out.add("{\"compute\":" + "{\"a\":".repeat(50_000) + "1" + "}".repeat(50_001));
    out.add(valid.replace("5000000", "99999999999999999999999999999"));
    out.add(valid.replace("5000000", "-5"));
    out.add(valid.replace("5000000", "5e6"));
    out.add(valid.replace("5000000", "\"5000000\""));
    out.add(valid.replace("\"logging\": true", "\"logging\": \"yes\""));
    out.add(valid.replace("\"compute\"", "\"compute\": {}, \"compute\""));
    out.add(valid.replace("\"read\": []", "\"read\": [\"" + "a/".repeat(200_000) + "\"]"));
    out.add(
        valid.replace("\"read\": []", "\"read\": [\"../../etc/passwd\", \"/abs\", \"\\u0000\"]"));
    out.add("\uFEFF" + valid);
    out.add("");
    out.add("null");
    out.add("\"" + "x".repeat(1 << 20) + "\"");
    return out;
  }

  // ---- raw bytes on the socket

  private static byte[] preface() {
    return "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  private static byte[] frame(int type, int flags, int stream, byte[] payload) {
    ByteBuffer b = ByteBuffer.allocate(9 + payload.length);
    b.put((byte) (payload.length >>> 16)).put((byte) (payload.length >>> 8));
    b.put((byte) payload.length).put((byte) type).put((byte) flags).putInt(stream).put(payload);
    return b.array();
  }

  /** An HPACK literal header field without indexing, new name, no Huffman coding. */
  private static void header(ByteArrayOutputStream out, String name, String value) {
    out.write(0);
    byte[] n = name.getBytes(StandardCharsets.US_ASCII);
    byte[] v = value.getBytes(StandardCharsets.US_ASCII);
    out.write(n.length);
    out.writeBytes(n);
    out.write(v.length);
    out.writeBytes(v);
  }

  /** One HTTP/2 connection carrying a gRPC Submit call whose message framing is malformed. */
  private static byte[] grpcCall(Random random, int variant) {
    ByteArrayOutputStream h = new ByteArrayOutputStream();
    header(h, ":method", "POST");
    header(h, ":scheme", "http");
    header(h, ":path", "/sandboxd.v1.Sandboxd/Submit");
    header(h, ":authority", "localhost");
    header(h, "content-type", "application/grpc");
    header(h, "te", "trailers");
    byte[] body = new byte[random.nextInt(512)];
    random.nextBytes(body);
    ByteBuffer msg = ByteBuffer.allocate(5 + body.length);
    switch (variant % 4) {
      case 0 -> msg.put((byte) 0).putInt(body.length + 1 + random.nextInt(1000)); // too long
      case 1 -> msg.put((byte) 1).putInt(body.length); // compressed, no grpc-encoding
      case 2 -> msg.put((byte) 0).putInt(Integer.MAX_VALUE); // far past the inbound limit
      default -> msg.put((byte) (2 + random.nextInt(250))).putInt(body.length); // bad flag
    }
    msg.put(body);
    // END_HEADERS on the headers; END_STREAM on the data (variant 0 also cuts the stream short).
    return concat(
        preface(),
        frame(0x4, 0, 0, new byte[0]),
        frame(0x1, 0x4, 1, h.toByteArray()),
        frame(0x0, 0x1, 1, msg.array()));
  }

  /** Writes {@code bytes} on a fresh connection, reads what comes back for a moment, closes. */
  private static void rawExchange(Path socket, byte[] bytes) throws Exception {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      ByteBuffer out = ByteBuffer.wrap(bytes);
      try {
        while (out.hasRemaining()) {
          ch.write(out);
        }
      } catch (java.io.IOException closedByDaemon) {
        return;
      }
      ch.configureBlocking(false);
      ByteBuffer in = ByteBuffer.allocate(65536);
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
      while (System.nanoTime() < deadline) {
        int n;
        try {
          n = ch.read(in);
        } catch (java.io.IOException reset) {
          return;
        }
        if (n < 0) {
          return;
        }
        in.clear();
        Thread.sleep(10);
      }
    }
  }

  private static int count(Path dir) throws Exception {
    return Poll.entries(dir);
  }

  /** The count under {@code dir} once it is at most {@code bound}, or after 30 s. */
  private static int settle(Path dir, int bound) throws Exception {
    return Poll.settle(() -> count(dir), bound, 30);
  }
}
