package io.sandboxd.daemon.report;

import static io.sandboxd.daemon.report.Html.esc;
import static io.sandboxd.daemon.report.Html.time;
import static io.sandboxd.daemon.report.Html.uj;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import java.util.List;
import java.util.Map;

/**
 * Renders one verified run's page: its chain as a timeline, receipts, attestations, inputs and
 * outputs by digest, and the command that re-verifies its records offline (the records themselves
 * are written beside the page as JSON lines).
 */
public final class RunPage {
  private RunPage() {}

  /** The records file beside a run's page, as {@code sandboxctl verify} reads it. */
  public static String records(VerifiedRun r) {
    StringBuilder b = new StringBuilder();
    for (Envelope e : r.envelopes()) {
      b.append(e.toJsonLine()).append('\n');
    }
    return b.toString();
  }

  /** The page of {@code r}. */
  public static String render(VerifiedRun r) {
    StringBuilder b = new StringBuilder(16 * 1024);
    b.append(Html.head("run " + r.runId()));
    b.append("<p><a href=\"../index.html\">← report</a></p>\n<h1>run <code>")
        .append(esc(r.runId()))
        .append("</code></h1>\n<p><span class=\"ok\">verified</span>: ")
        .append(r.segments().size())
        .append(" segment(s), ")
        .append(r.receipts().size())
        .append(" receipt(s), ")
        .append(r.attestations().size())
        .append(" attestation(s). Outcome ")
        .append(esc(r.outcome().map(o -> o.summary()).orElse(r.outcomeKind())))
        .append("; energy ")
        .append(uj(r.total().totalUj()))
        .append(" µJ = receipts ")
        .append(uj(r.total().receiptsUj()))
        .append(" + idle ")
        .append(uj(r.total().idleUj()))
        .append(". The daemon says (unsigned): state ")
        .append(esc(r.state()))
        .append(
            r.submitterUid().isPresent() ? ", submitter uid " + r.submitterUid().getAsLong() : "")
        .append(".</p>\n");
    verifyCommand(b, r);
    timeline(b, r);
    digests(b, r);
    for (int i = 0; i < r.receipts().size(); i++) {
      receipt(b, r.receiptEnvelopes().get(i).address(), r.receipts().get(i));
    }
    for (int i = 0; i < r.attestations().size(); i++) {
      attestation(b, r.attestationEnvelopes().get(i).address(), r.attestations().get(i));
    }
    b.append(Html.TAIL);
    return b.toString();
  }

  private static void verifyCommand(StringBuilder b, VerifiedRun r) {
    StringBuilder cmd = new StringBuilder("sandboxctl verify");
    for (String s : r.signers().stream().sorted().toList()) {
      cmd.append(" --signer ").append(s);
    }
    cmd.append(' ').append(Html.runFile(r.runId())).append(".jsonl");
    b.append(
            "<h2>Verify it yourself, offline</h2>\n<p>The records are beside this page in <a href=\"")
        .append(esc(Html.runFile(r.runId())))
        .append(".jsonl\"><code>")
        .append(esc(Html.runFile(r.runId())))
        .append(".jsonl</code></a>; from this directory:</p>\n<pre id=\"reverify\">")
        .append(esc(cmd.toString()))
        .append("</pre>\n");
  }

  private static void timeline(StringBuilder b, VerifiedRun r) {
    b.append("<h2>Chain</h2>\n<ol class=\"timeline\" id=\"chain\">\n");
    for (int i = 0; i < r.segments().size(); i++) {
      RunSegment s = r.segments().get(i);
      b.append("<li><span class=\"kind\">")
          .append(s.seq())
          .append(' ')
          .append(s.kind())
          .append("</span> ")
          .append(time(s.atMs()))
          .append(" on host <code>")
          .append(esc(s.hostId()))
          .append("</code> (key <code>")
          .append(esc(s.hostPublicKey()))
          .append("</code>), tier ")
          .append(esc(s.tier()))
          .append("<br>segment <code>")
          .append(esc(r.segmentEnvelopes().get(i).address()))
          .append("</code>");
      if (s.prev() != null) {
        b.append(", prev <code>").append(esc(s.prev())).append("</code>");
      }
      if (s.receipt() != null) {
        b.append("<br>receipt <code>").append(esc(s.receipt())).append("</code>");
      }
      if (s.idleUj() > 0) {
        b.append("<br>idle ")
            .append(uj(s.idleUj()))
            .append(" µJ (<span class=\"prov-")
            .append(s.idleProvenance())
            .append("\">")
            .append(s.idleProvenance())
            .append("</span>)");
      }
      if (s.snapshot() != null) {
        b.append("<br>snapshot fs <code>")
            .append(esc(String.valueOf(s.snapshot().fs())))
            .append("</code>, memory <code>")
            .append(esc(String.valueOf(s.snapshot().memory())))
            .append("</code>");
      }
      b.append("</li>\n");
    }
    b.append("</ol>\n");
  }

  private static void digests(StringBuilder b, VerifiedRun r) {
    b.append("<h2>Inputs and outputs by digest</h2>\n<table id=\"digests\">\n");
    kv(b, "module (unit)", "<code>" + esc(r.unit()) + "</code>");
    kv(b, "grants_id", "<code>" + esc(r.grantsId()) + "</code>");
    r.grantsText().ifPresent(t -> kv(b, "grant text", "<pre>" + esc(t) + "</pre>"));
    for (Attestation a : r.attestations()) {
      if (a.manifest() != null) {
        kv(b, "environment manifest", "<code>" + esc(a.manifest()) + "</code>");
      }
      kv(b, "journal root", "<code>" + esc(a.journalRoot()) + "</code>");
      if (a.inputs() != null) {
        kv(b, "args", "<code>" + esc(String.join(" ", a.inputs().args())) + "</code>");
        kv(b, "stdin", blob(a.inputs().stdin()));
      }
      if (a.outputs() != null) {
        kv(b, "stdout", blob(a.outputs().stdout()));
        kv(b, "stderr", blob(a.outputs().stderr()));
      }
    }
    b.append("</table>\n");
  }

  private static String blob(Attestation.Blob blob) {
    return blob == null
        ? "none"
        : "<code>" + esc(blob.address()) + "</code> (" + blob.bytes() + " bytes)";
  }

  private static void receipt(StringBuilder b, String address, Receipt r) {
    b.append("<h2>Receipt <code>")
        .append(esc(address))
        .append("</code></h2>\n<table class=\"receipt\">\n");
    b.append("<tr><th>device class</th><th>µJ</th><th>provenance</th><th>meter</th></tr>\n");
    for (Map.Entry<DeviceClass, ClassEnergy> e : r.energy().entrySet()) {
      ClassEnergy c = e.getValue();
      TableRow.in(b)
          .cell(e.getKey().jsonName())
          .uj(c.uj())
          .provenance(c.provenance(), c.provenance().name())
          .cell(
              esc(c.source())
                  + ", resolution "
                  + c.resolutionUj()
                  + " µJ, window "
                  + c.minWindowNs()
                  + " ns")
          .end();
    }
    b.append("</table>\n<table>\n");
    kv(b, "total_uj", uj(r.totalUj()));
    kv(b, "idle_uj (warm claim)", uj(r.idleUj()));
    kv(b, "cpu_time_ms", uj(r.cpuTimeMs()));
    kv(b, "wall_ms", uj(r.wallMs()));
    kv(b, "memory_peak_bytes", uj(r.memoryPeakBytes()));
    kv(
        b,
        "io",
        r.io().readOps()
            + " read ops, "
            + r.io().readBytes()
            + " B read, "
            + r.io().writeBytes()
            + " B written");
    kv(b, "net", r.net().egressBytes() + " B out, " + r.net().ingressBytes() + " B in");
    for (Receipt.InferenceUse i : r.inference()) {
      kv(
          b,
          "inference " + i.deviceClass().jsonName(),
          i.calls() + " call(s), " + uj(i.uj()) + " µJ");
    }
    kv(b, "started / ended", time(r.startedMs()) + " / " + time(r.endedMs()));
    kv(b, "tier", esc(r.tier()));
    b.append("</table>\n");
  }

  private static void attestation(StringBuilder b, String address, Attestation a) {
    b.append("<h2>Attestation <code>")
        .append(esc(address))
        .append("</code></h2>\n<table class=\"attestation\">\n");
    kv(
        b,
        "host",
        "<code>"
            + esc(a.host().id())
            + "</code> key <code>"
            + esc(a.host().publicKey())
            + "</code> ("
            + esc(a.host().platform())
            + ")");
    kv(b, "outcome", esc(a.outcome().summary()));
    kv(b, "tier", esc(a.tier()));
    kv(b, "receipt", "<code>" + esc(a.receipt()) + "</code>");
    kv(b, "clock", a.clockGranted() ? "granted" : "constant " + a.clockConstantMs() + " ms");
    kv(b, "probing / tampering detected", a.probingDetected() + " / " + a.tamperingDetected());
    if (a.jcp() != null) {
      kv(
          b,
          "jcp",
          esc(String.valueOf(a.jcp().policy()))
              + " → "
              + esc(String.valueOf(a.jcp().child()))
              + ", amendments "
              + esc(List.copyOf(a.jcp().amendments()).toString()));
    }
    if (a.teeReport() != null) {
      kv(b, "tee_report", "<code>" + esc(a.teeReport()) + "</code>");
    }
    kv(b, "issued", time(a.issuedMs()));
    b.append("</table>\n");
  }

  private static void kv(StringBuilder b, String k, String htmlValue) {
    TableRow.in(b).header(esc(k)).cell(htmlValue).end();
  }
}
