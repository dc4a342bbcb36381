package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `sandboxctl run`: submits a unit to the daemon. A WASI command gets argv (`--argv0`, then the
 * ARGs after `--`) and, with `--stdin`, standard input; its stdout and stderr come out on ours, the
 * run id and outcome on stderr, and the exit code is the guest's exit status (see {@link
 * #exitCode}). With `--json` one JSON object says everything instead.
 */
@Command(
    name = "run",
    description = "Submit a WebAssembly unit to the daemon.",
    footer = {
      "",
      "Exit status: the guest's own when it completed (0) or ended through proc_exit(n): n for",
      "n in 1..255, 255 for any status above 255 (never wrapped: 256 would read as success; the",
      "full status is printed on stderr). Any other recorded outcome (a breach, a trap, a",
      "decline, a `run` entry returning non-zero) exits 3; a submission the daemon refused, 2."
    })
final class RunCommand extends DaemonCommand {
  static final int NOT_COMPLETED = 3;

  /** What a guest exit status above 255 exits with. */
  static final int STATUS_ABOVE_255 = 255;

  @Mixin ModuleArgument module;

  @Parameters(
      index = "1..*",
      paramLabel = "ARG",
      description = "argv[1..] of a WASI command (put them after `--`).")
  List<String> args = new ArrayList<>();

  @Option(
      names = "--grants",
      required = true,
      paramLabel = "FILE",
      description =
          "Grants JSON, or b3:<grants_id> of a child grant the daemon minted (jcp event).")
  Path grants;

  @Option(
      names = "--entry",
      paramLabel = "NAME",
      description = "Entry export (default: run, or _start for a WASI command module).")
  String entry = "";

  @Option(
      names = "--stdin",
      paramLabel = "FILE|-",
      description = "Give the unit this file (or our stdin, `-`) as its stdin; default: none.")
  String stdin;

  @Option(
      names = "--argv0",
      paramLabel = "NAME",
      description = "argv[0] of a WASI command (default: the module's file name).")
  String argv0;

  @Option(
      names = "--env",
      paramLabel = "NAME|b3:ADDR",
      description = "Run in an environment the daemon offers (see `sandboxctl envs`).")
  String env = "";

  @Option(
      names = "--json",
      description =
          "One JSON object: run_id, outcome, the envelopes, log, stdout, stderr, exit status.")
  boolean json;

  /** The minted grants_id a {@code --grants b3:<hex>} names, else empty. */
  static String minted(Path grants) {
    return grants.toString().startsWith("b3:") ? grants.toString() : "";
  }

  @Option(
      names = "--detach",
      description =
          "Start a durable run and print its run id at once (see `runs wait`, `runs suspend`).")
  boolean detach;

  @Override
  int ask(DaemonClient c) throws Input.Unreadable {
    return show(c.stub().submit(request()));
  }

  /** The submission, its module, grants and stdin read (an unreadable one exits 2). */
  private SubmitRequest request() throws Input.Unreadable {
    List<String> argv = new ArrayList<>();
    argv.add(argv0 != null ? argv0 : String.valueOf(module.path.getFileName()));
    argv.addAll(args);
    SubmitRequest.Builder req =
        module
            .into(SubmitRequest.newBuilder())
            // b3:<grants_id> names a child grant minted on the daemon (sandboxctl jcp event).
            .setGrantsJson(minted(grants).isEmpty() ? Input.text(grants) : "")
            .setMintedGrants(minted(grants))
            .setEntry(entry)
            .setEnv(env)
            .addAllArgs(argv);
    if (stdin != null) {
      req.setStdin(ByteString.copyFrom(Input.given(stdin))).setStdinSet(true);
    }
    if (detach) {
      req.setDetach(true).clearArgs();
    }
    return req.build();
  }

  /** Prints a recorded run's reply (or, detached, its id) and returns the exit status. */
  private int show(SubmitReply reply) {
    if (detach) {
      System.out.println(reply.getRunId());
      return 0;
    }
    if (json) {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("run_id", reply.getRunId());
      o.set("outcome", CanonicalJson.parse(reply.getOutcomeJson()));
      o.set("receipt", CanonicalJson.parse(reply.getReceipt()));
      o.set("attestation", CanonicalJson.parse(reply.getAttestation()));
      o.set("segment", CanonicalJson.parse(reply.getSegment()));
      o.put("log", reply.getLog());
      o.set("stdout", stream(reply.getStdout()));
      o.set("stderr", stream(reply.getStderr()));
      o.put("exit_status", Integer.toUnsignedLong(reply.getExitStatus()));
      o.put("exited", reply.getExited());
      JsonOutput.print(o);
    } else {
      try {
        reply.getStdout().writeTo(System.out);
        System.out.flush();
        reply.getStderr().writeTo(System.err);
      } catch (IOException e) {
        System.err.println("sandboxctl run: cannot write the unit's output: " + e.getMessage());
      }
      if (!reply.getLog().isEmpty()) {
        System.err.print("log:\n" + reply.getLog().indent(2));
      }
      System.err.println("run " + reply.getRunId() + " outcome " + reply.getOutcomeJson());
      if (reply.getExited() && Integer.compareUnsigned(reply.getExitStatus(), 255) > 0) {
        System.err.println(
            "exit status "
                + Integer.toUnsignedString(reply.getExitStatus())
                + " is above 255: sandboxctl exits "
                + STATUS_ABOVE_255);
      }
      System.err.flush();
    }
    return exitCode(reply);
  }

  /** What sandboxctl exits with for a recorded run: the guest's own status where it has one. */
  static int exitCode(SubmitReply reply) {
    if (reply.getOutcomeJson().equals("\"Completed\"")) {
      return 0;
    }
    if (reply.getExited() && reply.getOutcomeJson().startsWith("{\"Failed\"")) {
      int status = reply.getExitStatus();
      return Integer.compareUnsigned(status, 255) > 0 ? STATUS_ABOVE_255 : status;
    }
    return NOT_COMPLETED;
  }

  /** One output stream for --json: its size, its bytes in base64, and its text when UTF-8. */
  private static ObjectNode stream(ByteString bytes) {
    ObjectNode s = CanonicalJson.mapper().createObjectNode();
    s.put("bytes", bytes.size());
    s.put("base64", Base64.getEncoder().encodeToString(bytes.toByteArray()));
    if (bytes.isValidUtf8()) {
      s.put("text", bytes.toStringUtf8());
    } else {
      s.putNull("text");
    }
    return s;
  }
}
