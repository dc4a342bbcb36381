package io.sandboxd.executor;

import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One HTTP exchange for `egress` and `infer`: redirects never followed, response headers bounded,
 * the body capped while it streams (a body over the cap is cut off after at most the cap, never
 * buffered whole), and one deadline for the whole exchange, body included. The wait is
 * interruptible, so the run's watchdog still ends a call stuck on a slow peer.
 */
final class HttpFetch {
  /** Largest response header section handed on (names, values and 32 bytes a line). */
  static final int MAX_HEADER_BYTES = 64 * 1024;

  private static final HttpClient CLIENT = client();

  private HttpFetch() {}

  private static HttpClient client() {
    // The JDK client bounds a header section by this property (default 384 KiB); an operator may
    // set it, otherwise the same bound as ours applies while the headers are being read.
    if (System.getProperty("jdk.http.maxHeaderSize") == null) {
      System.setProperty("jdk.http.maxHeaderSize", Integer.toString(MAX_HEADER_BYTES));
    }
    return HttpClient.newBuilder()
        .followRedirects(HttpClient.Redirect.NEVER)
        .version(HttpClient.Version.HTTP_1_1)
        .build();
  }

  /** How an exchange ended. */
  sealed interface Result permits Response, TooLarge, Failed {}

  /** A whole response within the caps. */
  record Response(int status, HttpHeaders headers, byte[] body) implements Result {}

  /** The response headers or body went past a cap; reading stopped there. */
  record TooLarge(String what) implements Result {}

  /** No response: refused, reset, timed out, interrupted, malformed. */
  record Failed(String why) implements Result {}

  /** Sends {@code request}, waiting at most {@code deadline} for the whole response. */
  static Result exchange(HttpRequest request, int maxBodyBytes, Duration deadline) {
    AtomicReference<CappedBody> body = new AtomicReference<>();
    CompletableFuture<HttpResponse<byte[]>> f =
        CLIENT.sendAsync(
            request,
            info -> {
              CappedBody b = new CappedBody(maxBodyBytes);
              body.set(b);
              if (headerBytes(info.headers()) > MAX_HEADER_BYTES) {
                b.refuse("response headers over " + MAX_HEADER_BYTES + " bytes");
              } else if (info.headers().firstValueAsLong("content-length").orElse(-1)
                  > maxBodyBytes) {
                b.refuse("response body over " + maxBodyBytes + " bytes");
              }
              return b;
            });
    try {
      HttpResponse<byte[]> r = f.get(Math.max(1, deadline.toMillis()), TimeUnit.MILLISECONDS);
      return new Response(r.statusCode(), r.headers(), r.body());
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof CapExceeded x) {
        return new TooLarge(x.getMessage());
      }
      // The JDK's own header bound surfaces as a ProtocolException.
      if (c instanceof java.net.ProtocolException
          && String.valueOf(c.getMessage()).contains("size")) {
        return new TooLarge("response headers: " + c.getMessage());
      }
      return new Failed(String.valueOf(c));
    } catch (TimeoutException e) {
      abort(f, body.get());
      return new Failed("no complete response in " + deadline.toMillis() + " ms");
    } catch (InterruptedException e) {
      abort(f, body.get());
      Thread.currentThread().interrupt();
      return new Failed("interrupted");
    } catch (CancellationException e) {
      return new Failed("cancelled");
    }
  }

  private static void abort(CompletableFuture<?> f, CappedBody body) {
    if (body != null) {
      body.refuse("abandoned");
    }
    f.cancel(true);
  }

  static long headerBytes(HttpHeaders headers) {
    long n = 0;
    for (Map.Entry<String, List<String>> e : headers.map().entrySet()) {
      for (String v : e.getValue()) {
        n += e.getKey().length() + v.length() + 32L;
      }
    }
    return n;
  }

  /** Thrown into the body future when a cap is hit. */
  static final class CapExceeded extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CapExceeded(String what) {
      super(what, null, false, false);
    }
  }

  /**
   * Collects a body one buffer at a time, asking for the next only after the last was counted, and
   * cancels the stream (the connection is dropped) the moment the count passes the cap.
   */
  static final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final int cap;
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private final AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
    private byte[] buf = new byte[0];
    private int len;

    CappedBody(int cap) {
      this.cap = cap;
    }

    /** Ends the body now with {@link CapExceeded} (or abandons it); the stream is cancelled. */
    void refuse(String why) {
      result.completeExceptionally(new CapExceeded(why));
      Flow.Subscription s = subscription.get();
      if (s != null) {
        s.cancel();
      }
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      if (!subscription.compareAndSet(null, s) || result.isDone()) {
        s.cancel();
        return;
      }
      s.request(1);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (result.isDone()) {
        return;
      }
      long n = 0;
      for (ByteBuffer b : items) {
        n += b.remaining();
      }
      if (len + n > cap) {
        refuse("response body over " + cap + " bytes");
        return;
      }
      if (len + n > buf.length) {
        buf = Arrays.copyOf(buf, (int) Math.min(cap, Math.max(len + n, 2L * buf.length + 8192)));
      }
      for (ByteBuffer b : items) {
        int r = b.remaining();
        b.get(buf, len, r);
        len += r;
      }
      subscription.get().request(1);
    }

    @Override
    public void onError(Throwable t) {
      result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      result.complete(len == buf.length ? buf : Arrays.copyOf(buf, len));
      buf = null;
    }

    @Override
    public CompletionStage<byte[]> getBody() {
      return result;
    }
  }
}
