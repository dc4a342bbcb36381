package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.EgressCredential;
import io.sandboxd.enforcer.Endpoint;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.Injection;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * `egress`: one HTTP(S) request with the JDK client, to an allowlisted {@code host:port} only.
 * Credentials are injected by the host after the request is journaled, so neither the guest nor the
 * journal ever holds a secret.
 */
final class EgressCalls {
  /** Largest response body handed to a guest. */
  static final int MAX_RESPONSE_BYTES = 8 << 20;

  private static final Set<String> METHODS =
      Set.of("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD");
  private static final Set<String> FIELDS = Set.of("method", "url", "headers", "body");
  // Headers the JDK client sets itself and refuses from callers.
  private static final Set<String> RESTRICTED =
      Set.of("connection", "content-length", "expect", "host", "upgrade");

  private static final HttpClient CLIENT =
      HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

  private EgressCalls() {}

  /** A parsed guest request. */
  record Request(
      String method, URI url, Endpoint endpoint, Map<String, String> headers, byte[] body) {}

  static int egress(
      RunContext ctx,
      GuestMemory mem,
      long reqPtr,
      long reqLen,
      long outPtr,
      long cap,
      long lenOut) {
    JsonNode json = SandboxImports.jsonRequest(mem, reqPtr, reqLen, outPtr, cap, lenOut);
    Request req;
    try {
      req = parse(json);
    } catch (IllegalArgumentException e) {
      return AbiStatus.INVALID;
    }
    HostAnswer a =
        ctx.journaled(
            "egress",
            json,
            () -> {
              Decision d = ctx.enforcer.mayEgress(req.endpoint(), ctx.taint);
              if (!d.allowed()) {
                return SandboxImports.refusal(d);
              }
              return send(ctx, req);
            },
            new FlowSource.NetResponse(req.endpoint()));
    return SandboxImports.deliver(mem, a, outPtr, cap, lenOut);
  }

  static Request parse(JsonNode json) {
    if (!json.isObject()) {
      throw new IllegalArgumentException("request: expected an object");
    }
    for (Iterator<String> it = json.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new IllegalArgumentException("request." + f + ": unknown field");
      }
    }
    String method = json.path("method").asText("GET").toUpperCase(Locale.ROOT);
    if (!METHODS.contains(method)) {
      throw new IllegalArgumentException("request.method: " + method);
    }
    URI url = URI.create(json.path("url").asText(""));
    String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https") || url.getHost() == null) {
      throw new IllegalArgumentException("request.url: need http(s)://host[:port]/...");
    }
    if (url.getRawUserInfo() != null) {
      throw new IllegalArgumentException("request.url: user info is not allowed");
    }
    int port = url.getPort() != -1 ? url.getPort() : scheme.equals("https") ? 443 : 80;
    String host = url.getHost();
    Endpoint endpoint =
        Endpoint.parse(
            (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port);
    Map<String, String> headers = new java.util.TreeMap<>();
    JsonNode h = json.get("headers");
    if (h != null && !h.isNull()) {
      if (!h.isObject()) {
        throw new IllegalArgumentException("request.headers: expected an object");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = h.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getValue().isTextual()) {
          throw new IllegalArgumentException("request.headers." + e.getKey() + ": expected text");
        }
        headers.put(e.getKey(), e.getValue().textValue());
      }
    }
    byte[] body = new byte[0];
    JsonNode b = json.get("body");
    if (b != null && !b.isNull()) {
      body = Base64.getDecoder().decode(b.asText());
    }
    return new Request(method, url, endpoint, headers, body);
  }

  private static HostAnswer send(RunContext ctx, Request req) {
    try {
      URI url = req.url();
      HttpRequest.Builder b = HttpRequest.newBuilder().timeout(ctx.services.egressTimeout());
      for (Map.Entry<String, String> e : req.headers().entrySet()) {
        if (!RESTRICTED.contains(e.getKey().toLowerCase(Locale.ROOT))) {
          b.header(e.getKey(), e.getValue());
        }
      }
      Optional<EgressCredential> cred =
          ctx.enforcer.grants().network().credentials().stream()
              .filter(c -> c.endpoint().equals(req.endpoint()))
              .findFirst();
      if (cred.isPresent()) {
        Optional<String> secret = ctx.services.secrets().secret(cred.get().secretRef());
        if (secret.isEmpty()) {
          return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
        }
        if (cred.get().inject() instanceof Injection.Header hdr) {
          b.setHeader(hdr.name(), hdr.prefix() + secret.get());
        } else if (cred.get().inject() instanceof Injection.Query q) {
          String sep = url.getRawQuery() == null ? "?" : "&";
          url =
              URI.create(
                  url
                      + sep
                      + URLEncoder.encode(q.param(), StandardCharsets.UTF_8)
                      + "="
                      + URLEncoder.encode(secret.get(), StandardCharsets.UTF_8));
        }
      }
      b.uri(url);
      b.method(
          req.method(),
          req.body().length == 0
              ? HttpRequest.BodyPublishers.noBody()
              : HttpRequest.BodyPublishers.ofByteArray(req.body()));
      HttpResponse<byte[]> resp = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
      ctx.network.countEgress(req.body().length);
      byte[] body = resp.body();
      if (body.length > MAX_RESPONSE_BYTES) {
        return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
      }
      ctx.network.countIngress(body.length);
      ObjectNode out = CanonicalJson.mapper().createObjectNode();
      out.put("status", resp.statusCode());
      ObjectNode headers = out.putObject("headers");
      resp.headers().map().forEach((k, v) -> headers.put(k, String.join(", ", List.copyOf(v))));
      out.put("body", Base64.getEncoder().encodeToString(body));
      return HostAnswer.allow(CanonicalJson.canonicalize(out));
    } catch (IOException | IllegalArgumentException e) {
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    }
  }
}
