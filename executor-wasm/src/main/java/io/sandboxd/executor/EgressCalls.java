package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.EgressCredential;
import io.sandboxd.enforcer.Endpoint;
import io.sandboxd.enforcer.FlowSource;
import io.sandboxd.enforcer.Injection;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
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
  /** Largest response body handed to a guest; reading stops there. */
  static final int MAX_RESPONSE_BYTES = 8 << 20;

  /** Largest request body a guest may send. */
  static final int MAX_REQUEST_BODY_BYTES = 8 << 20;

  /** Largest request document (JSON, body in base64) read from guest memory. */
  static final long MAX_REQUEST_JSON_BYTES = 12L << 20;

  /** Most request headers, and their bytes together. */
  static final int MAX_REQUEST_HEADERS = 100;

  static final int MAX_REQUEST_HEADER_BYTES = 64 * 1024;

  private static final Set<String> METHODS =
      Set.of("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD");
  private static final Set<String> FIELDS = Set.of("method", "url", "headers", "body");
  // Headers the JDK client sets itself and refuses from callers.
  private static final Set<String> RESTRICTED =
      Set.of("connection", "content-length", "expect", "host", "upgrade");

  private EgressCalls() {}

  /** A request over one of the size caps: answered TOO_LARGE rather than INVALID. */
  static final class TooLargeRequest extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    TooLargeRequest(String message) {
      super(message);
    }
  }

  /** A parsed guest request. */
  record Request(
      String method, URI url, Endpoint endpoint, Map<String, String> headers, byte[] body) {}

  static int egress(RunContext ctx, JsonCall call) {
    if (call.longerThan(MAX_REQUEST_JSON_BYTES)) {
      return AbiStatus.TOO_LARGE;
    }
    JsonNode json = call.request();
    Request req;
    try {
      req = parse(json);
    } catch (TooLargeRequest e) {
      return AbiStatus.TOO_LARGE;
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
    return call.deliver(a);
  }

  static Request parse(JsonNode json) {
    JsonCall.requireFields(json, FIELDS);
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
      if (h.size() > MAX_REQUEST_HEADERS) {
        throw new TooLargeRequest("request.headers: more than " + MAX_REQUEST_HEADERS);
      }
      long headerBytes = 0;
      for (Iterator<Map.Entry<String, JsonNode>> it = h.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getValue().isTextual()) {
          throw new IllegalArgumentException("request.headers." + e.getKey() + ": expected text");
        }
        String v = e.getValue().textValue();
        if (v.indexOf('\r') >= 0 || v.indexOf('\n') >= 0 || v.indexOf('\0') >= 0) {
          throw new IllegalArgumentException("request.headers." + e.getKey() + ": CR, LF or NUL");
        }
        headerBytes += e.getKey().length() + v.length();
        headers.put(e.getKey(), v);
      }
      if (headerBytes > MAX_REQUEST_HEADER_BYTES) {
        throw new TooLargeRequest("request.headers: over " + MAX_REQUEST_HEADER_BYTES + " bytes");
      }
    }
    byte[] body = new byte[0];
    JsonNode b = json.get("body");
    if (b != null && !b.isNull()) {
      if (!b.isTextual()) {
        throw new IllegalArgumentException("request.body: expected base64 text");
      }
      // Checked before decoding: base64 is 4 characters for 3 bytes.
      if (b.textValue().length() / 4L * 3 > MAX_REQUEST_BODY_BYTES + 2L) {
        throw new TooLargeRequest("request.body: over " + MAX_REQUEST_BODY_BYTES + " bytes");
      }
      body = Base64.getDecoder().decode(b.textValue());
      if (body.length > MAX_REQUEST_BODY_BYTES) {
        throw new TooLargeRequest("request.body: over " + MAX_REQUEST_BODY_BYTES + " bytes");
      }
    }
    return new Request(method, url, endpoint, headers, body);
  }

  private static HostAnswer send(RunContext ctx, Request req) {
    try {
      URI url = req.url();
      String scheme = url.getScheme().toLowerCase(Locale.ROOT);
      HttpRequest.Builder b = HttpRequest.newBuilder().timeout(ctx.services.egressTimeout());
      for (Map.Entry<String, String> e : req.headers().entrySet()) {
        if (!RESTRICTED.contains(e.getKey().toLowerCase(Locale.ROOT))) {
          b.header(e.getKey(), e.getValue());
        }
      }
      SecretStore store = ctx.services.secrets();
      Optional<EgressCredential> cred =
          ctx.enforcer.grants().network().credentials().stream()
              .filter(c -> c.endpoint().equals(req.endpoint()))
              .findFirst();
      List<String> injected = new ArrayList<>();
      if (cred.isPresent()) {
        String handle = cred.get().secretRef();
        // Admission refused grants binding a secret elsewhere; this also holds the scheme and
        // path prefix the operator bound it to, which a grant's host:port cannot express.
        if (!store.bindings().permits(handle, scheme, req.endpoint(), url.getRawPath())) {
          return HostAnswer.refused("Denied", AbiStatus.DENIED);
        }
        Optional<String> secret = store.secret(handle);
        if (secret.isEmpty()) {
          return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
        }
        if (cred.get().inject() instanceof Injection.Header hdr) {
          injected.add(hdr.prefix() + secret.get());
          b.setHeader(hdr.name(), hdr.prefix() + secret.get());
        } else if (cred.get().inject() instanceof Injection.Query q) {
          String sep = url.getRawQuery() == null ? "?" : "&";
          String pair =
              URLEncoder.encode(q.param(), StandardCharsets.UTF_8)
                  + "="
                  + URLEncoder.encode(secret.get(), StandardCharsets.UTF_8);
          injected.add(pair);
          url = URI.create(url + sep + pair);
        }
      }
      Redaction redaction = redaction(store, req.endpoint(), injected);
      if (!redaction.isEmpty()) {
        // A compressed echo would hide the secret from redaction: ask for the plain bytes.
        b.setHeader("Accept-Encoding", "identity");
      }
      b.uri(url);
      b.method(
          req.method(),
          req.body().length == 0
              ? HttpRequest.BodyPublishers.noBody()
              : HttpRequest.BodyPublishers.ofByteArray(req.body()));
      HttpFetch.Result result =
          HttpFetch.exchange(b.build(), MAX_RESPONSE_BYTES, ctx.services.egressTimeout());
      ctx.network.countEgress(req.body().length);
      if (result instanceof HttpFetch.TooLarge) {
        return HostAnswer.refused("Allow", AbiStatus.TOO_LARGE);
      }
      if (!(result instanceof HttpFetch.Response resp)) {
        return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
      }
      ctx.network.countIngress(resp.body().length);
      String encoding = resp.headers().firstValue("content-encoding").orElse("identity");
      if (!redaction.isEmpty() && !encoding.equalsIgnoreCase("identity")) {
        return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
      }
      ObjectNode out = CanonicalJson.mapper().createObjectNode();
      out.put("status", resp.status());
      ObjectNode headers = out.putObject("headers");
      resp.headers()
          .map()
          .forEach(
              (k, v) ->
                  headers.put(
                      redaction.apply(k), redaction.apply(String.join(", ", List.copyOf(v)))));
      out.put("body", Base64.getEncoder().encodeToString(redaction.apply(resp.body())));
      byte[] answer = CanonicalJson.canonicalize(out);
      if (redaction.leaks(answer)) {
        // Redaction missed a form (a header the JSON escaped differently): withhold it all.
        return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
      }
      return HostAnswer.allow(answer);
    } catch (IllegalArgumentException e) {
      return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
    }
  }

  /**
   * What to cut out of a response from {@code endpoint}: every node secret bound to that endpoint
   * (whether or not this grant injects it: an endpoint may hand back what another run sent it) and
   * the exact values injected into this request.
   */
  private static Redaction redaction(SecretStore store, Endpoint endpoint, List<String> injected) {
    List<String> secrets = new ArrayList<>();
    store
        .bindings()
        .targets()
        .forEach(
            (handle, targets) -> {
              if (targets.stream().anyMatch(t -> t.endpoint().equals(endpoint))) {
                store.secret(handle).ifPresent(secrets::add);
              }
            });
    return secrets.isEmpty() && injected.isEmpty()
        ? Redaction.none()
        : Redaction.of(secrets, injected);
  }
}
