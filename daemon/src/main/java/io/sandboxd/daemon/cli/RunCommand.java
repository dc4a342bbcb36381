package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.DaemonPaths;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl run`: submits a unit to the daemon and prints its run id and signed records. Exit 0
 * when the unit completed, 3 for any other recorded outcome, 2 when the daemon refused the input.
 */
@Command(name = "run", description = "Submit a WebAssembly unit to the daemon.")
final class RunCommand implements Callable<Integer> {
  static final int NOT_COMPLETED = 3;

  @Parameters(
      index = "0",
      paramLabel = "MODULE.wasm|b3:ADDR",
      description = "The unit's module, or b3:<64 hex> of one the daemon holds (modules put).")
  Path module;

  @Option(names = "--grants", required = true, paramLabel = "FILE", description = "Grants JSON.")
  Path grants;

  @Option(
      names = "--entry",
      paramLabel = "NAME",
      description = "Entry export (default: run, or _start for a WASI command module).")
  String entry = "";

  @Option(names = "--socket", paramLabel = "PATH", description = "Daemon socket.")
  Path socket;

  @Option(
      names = "--env",
      paramLabel = "NAME|b3:ADDR",
      description = "Run in an environment the daemon offers (see `sandboxctl envs`).")
  String env = "";

  @Option(names = "--json", description = "One JSON object: run_id, outcome and the envelopes.")
  boolean json;

  @Override
  public Integer call() {
    byte[] wasm;
    String grantsJson;
    // A b3: address names a module the daemon holds; anything else is a file.
    String address = module.toString().startsWith("b3:") ? module.toString() : "";
    try {
      wasm = address.isEmpty() ? Files.readAllBytes(module) : new byte[0];
      grantsJson = Files.readString(grants, StandardCharsets.UTF_8);
    } catch (IOException e) {
      System.err.println("sandboxctl run: cannot read " + e.getMessage());
      return Sandboxctl.UNUSABLE;
    }
    Path sock = socket != null ? socket : DaemonPaths.defaultClientSocket();
    SubmitReply reply;
    try (DaemonClient client = new DaemonClient(sock)) {
      reply =
          client
              .stub()
              .submit(
                  SubmitRequest.newBuilder()
                      .setModule(com.google.protobuf.ByteString.copyFrom(wasm))
                      .setModuleAddress(address)
                      .setGrantsJson(grantsJson)
                      .setEntry(entry)
                      .setEnv(env)
                      .build());
    } catch (StatusRuntimeException e) {
      System.err.println("sandboxctl run: " + RpcErrors.describe(e, sock));
      return Sandboxctl.UNUSABLE;
    }
    if (json) {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("run_id", reply.getRunId());
      o.set("outcome", CanonicalJson.parse(reply.getOutcomeJson()));
      o.set("receipt", CanonicalJson.parse(reply.getReceipt()));
      o.set("attestation", CanonicalJson.parse(reply.getAttestation()));
      o.set("segment", CanonicalJson.parse(reply.getSegment()));
      o.put("log", reply.getLog());
      System.out.println(CanonicalJson.canonicalString(o));
    } else {
      System.out.println("run " + reply.getRunId());
      System.out.println("outcome " + reply.getOutcomeJson());
      if (!reply.getLog().isEmpty()) {
        System.out.print("log:\n" + reply.getLog().indent(2));
      }
      System.out.println("receipt " + reply.getReceipt());
      System.out.println("attestation " + reply.getAttestation());
      System.out.println("segment " + reply.getSegment());
    }
    return reply.getOutcomeJson().equals("\"Completed\"") ? 0 : NOT_COMPLETED;
  }
}
