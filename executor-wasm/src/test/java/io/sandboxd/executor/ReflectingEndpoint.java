package io.sandboxd.executor;

import com.sun.net.httpserver.HttpHandler;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The endpoint the secret-injection tests send egress to, here and in the integration tests (shared
 * through this module's test-jar): it answers with everything it was sent, so a secret that reached
 * it would reach the guest unless the host redacts it.
 */
public final class ReflectingEndpoint {
  private ReflectingEndpoint() {}

  /**
   * Reflects every request header and the query: raw, base64, JSON-escaped, and the {@code
   * Authorization} header as the {@code X-Echo-Auth} header; the last {@code Authorization} it got
   * goes into {@code lastAuth}.
   */
  public static HttpHandler of(AtomicReference<String> lastAuth) {
    return ex -> {
      StringBuilder all = new StringBuilder();
      ex.getRequestHeaders()
          .forEach((k, v) -> all.append(k).append(": ").append(String.join(",", v)).append('\n'));
      lastAuth.set(ex.getRequestHeaders().getFirst("Authorization"));
      String text = all + "query: " + ex.getRequestURI().getRawQuery() + "\n";
      String body =
          text
              + "b64="
              + Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8))
              + "\njson=\""
              + text.replace("/", "\\/").replace("\n", "\\n")
              + "\"\n";
      ex.getResponseHeaders().add("X-Echo-Auth", String.valueOf(lastAuth.get()));
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, bytes.length);
      ex.getResponseBody().write(bytes);
      ex.close();
    };
  }
}
