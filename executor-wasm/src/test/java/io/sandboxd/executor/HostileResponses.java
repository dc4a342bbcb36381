package io.sandboxd.executor;

import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.atomic.AtomicLong;

/**
 * HTTP handlers that answer egress with bodies too large to hold; shared with the integration tests
 * through this module's test-jar.
 */
public final class HostileResponses {
  private HostileResponses() {}

  /**
   * A 1 GiB body sent chunked (no length announced: only reading tells how big it is), counting
   * into {@code sent} what was written before the client hung up.
   */
  public static HttpHandler hugeChunked(AtomicLong sent) {
    return ex -> {
      ex.sendResponseHeaders(200, 0);
      byte[] chunk = new byte[64 * 1024];
      try (OutputStream out = ex.getResponseBody()) {
        for (long n = 0; n < (1L << 30); n += chunk.length) {
          out.write(chunk);
          sent.addAndGet(chunk.length);
        }
      } catch (IOException dropped) {
        // the client hung up at its cap
      }
    };
  }

  /** Announces a body of {@code length} bytes and sends none of it. */
  public static HttpHandler declaredOnly(long length) {
    return ex -> {
      ex.sendResponseHeaders(200, length);
      ex.close();
    };
  }
}
