package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.HostService;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * `infer`: forwards an OpenAI-compatible JSON request to the node's configured on-host inference
 * endpoint. Needs host.inference, and the class that serves it must be dispatchable for the unit.
 */
final class InferCalls {
  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  private InferCalls() {}

  static int infer(
      RunContext ctx,
      GuestMemory mem,
      long reqPtr,
      long reqLen,
      long outPtr,
      long cap,
      long lenOut) {
    JsonNode json = SandboxImports.jsonRequest(mem, reqPtr, reqLen, outPtr, cap, lenOut);
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
              try {
                HttpResponse<byte[]> resp =
                    CLIENT.send(
                        HttpRequest.newBuilder(ctx.services.inferenceEndpoint().get())
                            .timeout(ctx.services.egressTimeout())
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                            .build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                ctx.network.countInference();
                long after = ctx.services.inferenceEnergyUj().getAsLong();
                if (before >= 0 && after >= 0) {
                  // The serving class's counter over the call's window; an upper bound when other
                  // work shares the device, so the receipt labels it ModelBased at best.
                  ctx.network.countInferenceUj(Math.max(0, after - before));
                }
                return resp.statusCode() / 100 == 2
                    ? HostAnswer.allow(resp.body())
                    : HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
              } catch (IOException e) {
                return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return HostAnswer.refused("Allow", AbiStatus.UNAVAILABLE);
              }
            });
    return SandboxImports.deliver(mem, a, outPtr, cap, lenOut);
  }
}
