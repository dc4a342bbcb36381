package io.sandboxd.executor;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP endpoint that answers every request with 204 and counts them: what the taint and
 * egress tests here and in the integration tests (through this module's test-jar) point a unit at
 * to see whether anything left the node.
 */
public final class CountingEndpoint implements AutoCloseable {
  /** Requests that reached the endpoint. */
  public final AtomicInteger hits = new AtomicInteger();

  /** {@code host:port}, as grants and egress requests name it. */
  public final String address;

  private final HttpServer server;

  public CountingEndpoint() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        ex -> {
          hits.incrementAndGet();
          ex.sendResponseHeaders(204, -1);
          ex.close();
        });
    server.start();
    address = "127.0.0.1:" + server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
