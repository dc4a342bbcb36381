package io.sandboxd.daemon;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The Prometheus text endpoint ({@code GET /metrics}) on a loopback address: one worker thread and
 * a short queue, so scrapers cannot make the daemon hold more than that.
 */
final class MetricsEndpoint implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(MetricsEndpoint.class.getName());
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final HttpServer server;
  private final ExecutorService worker;

  private MetricsEndpoint(HttpServer server, ExecutorService worker) {
    this.server = server;
    this.worker = worker;
  }

  /** Binds {@code address} (loopback, checked by the configuration) and serves {@code scrape}. */
  static MetricsEndpoint start(InetSocketAddress address, Supplier<String> scrape)
      throws IOException {
    if (!address.getAddress().isLoopbackAddress()) {
      throw new IllegalArgumentException("metrics: " + address + " is not a loopback address");
    }
    HttpServer server = HttpServer.create(address, 8);
    ExecutorService worker =
        new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(16),
            r -> {
              Thread t = new Thread(r, "sandboxd-metrics");
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.DiscardPolicy());
    server.setExecutor(worker);
    server.createContext("/metrics", ex -> answer(ex, scrape));
    server.createContext("/", ex -> send(ex, 404, "not found: GET /metrics\n"));
    server.start();
    MetricsEndpoint m = new MetricsEndpoint(server, worker);
    LOG.info("metrics on http://" + hostPort(server.getAddress()) + "/metrics");
    return m;
  }

  private static String hostPort(InetSocketAddress a) {
    String host = a.getAddress().getHostAddress();
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
  }

  InetSocketAddress address() {
    return server.getAddress();
  }

  private static void answer(HttpExchange ex, Supplier<String> scrape) throws IOException {
    if (!"GET".equals(ex.getRequestMethod()) && !"HEAD".equals(ex.getRequestMethod())) {
      send(ex, 405, "only GET\n");
      return;
    }
    ex.getResponseHeaders().set("Content-Type", CONTENT_TYPE);
    send(ex, 200, scrape.get());
  }

  private static void send(HttpExchange ex, int code, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    boolean head = "HEAD".equals(ex.getRequestMethod());
    ex.sendResponseHeaders(code, head ? -1 : b.length);
    try (OutputStream out = ex.getResponseBody()) {
      if (!head) {
        out.write(b);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
    worker.shutdownNow();
  }
}
