package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.HostService;
import java.net.http.HttpRequest;

/**
 * `infer`: forwards an OpenAI-compatible JSON request to the node's configured on-host inference
 * endpoint. Needs host.inference, and the class that serves it must be dispatchable for the unit.
 */
final class InferCalls {
  /** Largest inference answer handed to a guest; reading stops there. */
  static final int MAX_RESPONSE_BYTES = 8 << 20;

  /** Largest inference request read from guest memory. */
  static final long MAX_REQUEST_BYTES = 8L << 20;

  private InferCalls() {}

  static int infer(RunContext ctx, JsonCall call) {
    if (call.longerThan(MAX_REQUEST_BYTES)) {
      return AbiStatus.TOO_LARGE;
    }
    JsonNode json = call.request();
    byte[] body = CanonicalJson.canonicalize(json);
    HostAnswer a =
        ctx.journaled(
            "inference",
            json,
            () -> {
              Decision d = ctx.enforcer.mayHost(HostService.INFERENCE);
              if (d.allowed()) {
                d = ctx.enforcer.mayDispatch(ctx.services.inferenceClass());
              }
              if (!d.allowed()) {
                return SandboxImports.refusal(d);
              }
              if (ctx.services.inferenceEndpoint().isEmpty()) {
                return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
              }
              long before = ctx.services.inferenceEnergyUj().getAsLong();
              HttpFetch.Result result =
                  HttpFetch.exchange(
                      HttpRequest.newBuilder(ctx.services.inferenceEndpoint().get())
                          .timeout(ctx.services.egressTimeout())
                          .header("Content-Type", "application/json")
                          .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                          .build(),
                      MAX_RESPONSE_BYTES,
                      ctx.services.egressTimeout());
              if (!(result instanceof HttpFetch.Failed)) {
                ctx.network.countInference();
              }
              long after = ctx.services.inferenceEnergyUj().getAsLong();
              if (before >= 0 && after >= 0) {
                // The serving class's counter over the call's window; an upper bound when other
                // work shares the device, so the receipt labels it ModelBased at best.
                ctx.network.countInferenceUj(Math.max(0, after - before));
              }
              if (result instanceof HttpFetch.TooLarge) {
                return HostAnswer.refused("Allow", AbiStatus.TOO_LARGE);
              }
              return result instanceof HttpFetch.Response resp && resp.status() / 100 == 2
                  ? HostAnswer.allow(resp.body())
                  : HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
            });
    return call.deliver(a);
  }
}
