package io.sandboxd.daemon.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.fleet.FleetDocs;
import io.sandboxd.daemon.report.NodeLogCheck;
import io.sandboxd.daemon.report.ReportContext;
import io.sandboxd.daemon.report.ReportSite;
import io.sandboxd.daemon.report.ReportWindow;
import io.sandboxd.daemon.report.RunEvidence;
import io.sandboxd.daemon.report.VerifiedRecords;
import io.sandboxd.daemon.rpc.GetLogCheckpointRequest;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.LogCheckpointReply;
import io.sandboxd.daemon.rpc.ProveInclusionRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `sandboxctl report`: fetches runs and their signed records from the daemon (gRPC only), checks
 * each run's records with the verifier `sandboxctl verify` uses and proves them in the node log,
 * and writes a static report (HTML, inline SVG, no scripts) of the runs that verified, naming the
 * ones that did not.
 */
@Command(
    name = "report",
    description =
        "Write a static HTML report (inline SVG plots, nothing fetched when viewed) of the runs"
            + " whose records verify: runs over time, energy by class and module with idle energy"
            + " apart, top modules and submitters, grants, breaches, refusals, durable runs, the"
            + " node-log checkpoint; one page per run. Runs that do not verify are listed, not"
            + " drawn.")
final class ReportCommand implements Callable<Integer> {
  @Option(
      names = "--since",
      paramLabel = "T",
      description = "Runs started at or after T (ISO-8601 instant, a UTC date, or epoch ms).")
  String since;

  @Option(names = "--until", paramLabel = "T", description = "Runs started at or before T.")
  String until;

  @Option(names = "--submitter", paramLabel = "UID", description = "Only runs this uid submitted.")
  Long submitter;

  @Option(
      names = "--out",
      paramLabel = "DIR",
      description = "Directory to write into (default: ./sandboxd-report).")
  Path out = Path.of("sandboxd-report");

  @Option(
      names = "--signer",
      paramLabel = "HEX",
      description =
          "Trust this key besides the node's own (repeat; e.g. the host a durable run moved from).")
  List<String> signer = new ArrayList<>();

  @Mixin DaemonSocket daemon;

  /** The daemon answers at most this many runs in one list. */
  static final int LIST_LIMIT = 10_000;

  @Override
  public Integer call() throws Exception {
    ReportWindow window;
    Set<PublicKey> trusted = new LinkedHashSet<>();
    try {
      window =
          new ReportWindow(
              time(since, "--since", false),
              time(until, "--until", true),
              submitter == null ? OptionalLong.empty() : OptionalLong.of(submitter));
      for (String s : signer) {
        trusted.add(PublicKey.ofHex(s, "--signer"));
      }
    } catch (AttestException | IllegalArgumentException e) {
      return Sandboxctl.unusable("report", e.getMessage());
    }
    return daemon.call("report", c -> report(c, window, trusted), e -> Sandboxctl.UNUSABLE);
  }

  /** Checks the runs in {@code window} the daemon answers and writes the report of them. */
  private int report(DaemonClient c, ReportWindow window, Set<PublicKey> trusted) {
    List<String> notes = new ArrayList<>();
    List<RunEvidence> evidence = new ArrayList<>();
    Optional<NodeLogCheck> nodeLog;
    try {
      SandboxdGrpc.SandboxdBlockingStub stub = c.stub();
      LogCheckpointReply cp = stub.getLogCheckpoint(GetLogCheckpointRequest.getDefaultInstance());
      PublicKey node = PublicKey.ofHex(cp.getPublicKey(), "the daemon's public_key");
      trusted.add(node);
      List<RunInfo> runs =
          stub.listRuns(ListRunsRequest.newBuilder().setLimit(LIST_LIMIT).build()).getRunsList();
      if (runs.size() >= LIST_LIMIT) {
        notes.add(
            "The daemon lists at most "
                + LIST_LIMIT
                + " runs, newest first: older runs are not in this report.");
      }
      Set<String> grantsAsked = new HashSet<>();
      long proven = 0;
      for (RunInfo r : runs) {
        boolean tampered = r.getOutcomeJson().startsWith(RunsCommand.TAMPERED);
        OptionalLong uid =
            r.hasSubmitterUid() ? OptionalLong.of(r.getSubmitterUid()) : OptionalLong.empty();
        if (tampered) {
          // Its time and submitter are not to be believed: it is reported whatever the window.
          evidence.add(
              RunEvidence.unusable(
                  r.getRunId(), uid, "the daemon lists it as " + r.getOutcomeJson()));
          continue;
        }
        if (!window.covers(r.getStartedMs()) || !window.admits(uid)) {
          continue;
        }
        RunEvidence e = fetch(stub, r, uid, grantsAsked.add(r.getGrantsId()));
        if (e.problem().isEmpty()) {
          Optional<String> missing = proveInLog(stub, node, e);
          if (missing.isPresent()) {
            e = e.withProblem(missing.get());
          } else {
            proven++;
          }
        }
        evidence.add(e);
      }
      nodeLog = Optional.of(checkpoint(cp, node, proven));
    } catch (AttestException e) {
      return Sandboxctl.unusable("report", e.getMessage());
    }
    VerifiedRecords records = VerifiedRecords.check(evidence, trusted, window);
    List<String> keys = trusted.stream().map(PublicKey::hex).toList();
    ReportContext ctx =
        new ReportContext(
            System.currentTimeMillis(), daemon.path().toString(), window, keys, nodeLog, notes);
    ReportSite.Written w;
    try {
      w = ReportSite.write(out, records, ctx);
    } catch (IOException e) {
      return Sandboxctl.unusable("report", "--out: cannot write " + out + ": " + e.getMessage());
    }
    System.out.println(
        "report "
            + out.resolve("index.html")
            + ": "
            + records.runs().size()
            + " run(s) verified, "
            + records.rejected().size()
            + " did not verify; "
            + w.files()
            + " files, "
            + w.bytes()
            + " bytes");
    return 0;
  }

  /** The run's records as the daemon answers them; a read or parse failure is its problem. */
  private static RunEvidence fetch(
      SandboxdGrpc.SandboxdBlockingStub stub, RunInfo r, OptionalLong uid, boolean withGrants) {
    RecordsReply rec;
    try {
      rec =
          stub.getRecords(
              GetRecordsRequest.newBuilder()
                  .setRunId(r.getRunId())
                  .setWithGrants(withGrants)
                  .build());
    } catch (StatusRuntimeException e) {
      return RunEvidence.unusable(
          r.getRunId(),
          uid,
          "its records could not be read: "
              + e.getStatus().getCode()
              + ": "
              + e.getStatus().getDescription());
    }
    List<Envelope> env = new ArrayList<>();
    List<String> lines = new ArrayList<>(rec.getSegmentsList());
    lines.addAll(rec.getReceiptsList());
    lines.addAll(rec.getAttestationsList());
    lines.addAll(rec.getClaimsList());
    try {
      for (String l : lines) {
        env.add(Envelope.fromJson(CanonicalJson.parse(l)));
      }
    } catch (AttestException e) {
      return RunEvidence.unusable(r.getRunId(), uid, "a record does not parse: " + e.getMessage());
    }
    return RunEvidence.of(r.getRunId(), r.getState(), uid, env, rec.getGrantsJson());
  }

  /**
   * Proves the run's head segment (which names, through prev and receipt, the rest of its chain)
   * and each attestation (which nothing else names) in the node log; empty when all verify.
   */
  private static Optional<String> proveInLog(
      SandboxdGrpc.SandboxdBlockingStub stub, PublicKey node, RunEvidence e) {
    List<String> addresses = new ArrayList<>();
    String head = null;
    for (Envelope x : e.envelopes()) {
      String schema = x.schema().orElse("");
      if (schema.equals(io.sandboxd.attest.RunSegment.SCHEMA)) {
        head = x.address(); // segments come in chain order
      } else if (schema.equals(io.sandboxd.attest.Attestation.SCHEMA)) {
        addresses.add(x.address());
      }
    }
    if (head != null) {
      addresses.add(0, head);
    }
    for (String a : addresses) {
      String proof;
      try {
        proof =
            stub.proveInclusion(ProveInclusionRequest.newBuilder().setAddress(a).build())
                .getProofJson();
      } catch (StatusRuntimeException ex) {
        return Optional.of(
            "record " + a + " is not proven in the node log: " + ex.getStatus().getDescription());
      }
      try {
        JsonNode doc = CanonicalJson.parse(proof);
        if (!doc.path("address").asText().equals(a)) {
          return Optional.of("the node log proved another record than " + a);
        }
        if (FleetDocs.verifyLog(doc, node) instanceof FleetDocs.Verdict.Invalid inv) {
          return Optional.of("record " + a + ": node log: " + inv.why());
        }
      } catch (AttestException ex) {
        return Optional.of("record " + a + ": node-log proof unusable: " + ex.getMessage());
      }
    }
    return Optional.empty();
  }

  private static NodeLogCheck checkpoint(LogCheckpointReply cp, PublicKey node, long proven) {
    try {
      LogCheckpoint c = LogCheckpoint.verify(cp.getNote(), node, Optional.empty());
      return new NodeLogCheck(
          cp.getNote(), c.origin(), c.treeSize(), Hex.encode(c.root()), Optional.empty(), proven);
    } catch (AttestException e) {
      return new NodeLogCheck(
          cp.getNote(), cp.getOrigin(), cp.getTreeSize(), "", Optional.of(e.getMessage()), 0);
    }
  }

  /** T as ms since the epoch: an ISO-8601 instant, a UTC date (its start, or end for --until). */
  static OptionalLong time(String t, String option, boolean endOfDay) {
    if (t == null) {
      return OptionalLong.empty();
    }
    if (t.matches("[0-9]{1,18}")) {
      return OptionalLong.of(Long.parseLong(t));
    }
    try {
      return OptionalLong.of(Instant.parse(t).toEpochMilli());
    } catch (DateTimeParseException notInstant) {
      try {
        LocalDate d = LocalDate.parse(t);
        long start = d.atStartOfDay(ZoneOffset.UTC).toInstant().toEpochMilli();
        return OptionalLong.of(endOfDay ? start + 86_400_000L - 1 : start);
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException(
            option + ": \"" + t + "\" is neither an ISO-8601 instant, a date nor epoch ms", e);
      }
    }
  }
}
