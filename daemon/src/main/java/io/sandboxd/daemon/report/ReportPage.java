package io.sandboxd.daemon.report;

import static io.sandboxd.daemon.report.Html.esc;
import static io.sandboxd.daemon.report.Html.time;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.RunSegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** Renders a report's front page (index.html): the summary, the plots and the tables. */
public final class ReportPage {
  private ReportPage() {}

  /** Most rows any one table lists; the rest are counted (every run keeps its own page). */
  public static final int MAX_ROWS = 500;

  /** How many modules and submitters the top lists show. */
  public static final int TOP = 10;

  /** The page for {@code records} summed as {@code a}. */
  public static String render(VerifiedRecords records, ReportAggregates a, ReportContext ctx) {
    StringBuilder b = new StringBuilder(64 * 1024);
    b.append(Html.head("sandboxd report"));
    b.append("<h1>sandboxd report</h1>\n");
    b.append("<p>Generated ")
        .append(time(ctx.generatedMs()))
        .append(" from ")
        .append("<code>")
        .append(esc(ctx.source()))
        .append("</code>; runs ")
        .append(window(ctx.window()))
        .append(".</p>\n");
    verification(b, records, ctx);
    nodeLog(b, ctx);
    b.append("<h2>Runs over time</h2>\n");
    figure(b, ReportCharts.runsOverTime(a));
    outcomes(b, records);
    energy(b, a);
    usage(b, "Modules", "plot-modules", a.modules());
    usage(b, "Submitters", "plot-submitters", a.submitters());
    grants(b, a);
    breaches(b, a);
    durable(b, a);
    runs(b, records);
    b.append(Html.TAIL);
    return b.toString();
  }

  private static String window(ReportWindow w) {
    String since =
        w.sinceMs().isPresent() ? "from " + time(w.sinceMs().getAsLong()) : "from the first";
    String until =
        w.untilMs().isPresent() ? " until " + time(w.untilMs().getAsLong()) : " until now";
    String who =
        w.submitter().isPresent()
            ? ", submitted by uid " + w.submitter().getAsLong()
            : ", every submitter";
    return since + until + who;
  }

  private static void verification(StringBuilder b, VerifiedRecords r, ReportContext ctx) {
    b.append("<h2>Verification</h2>\n<p id=\"verified\">")
        .append("<span class=\"ok\">")
        .append(r.runs().size())
        .append(" run(s) verified</span> (signatures, segment chains, references between")
        .append(" segments, receipts and attestations) and drawn below; ")
        .append(r.rejected().isEmpty() ? "<span class=\"ok\">" : "<span class=\"bad\">")
        .append(r.rejected().size())
        .append(" did not verify</span> and are not drawn.</p>\n");
    b.append("<p>Trusted signer key(s): ");
    for (String s : ctx.signers()) {
      b.append("<code>").append(esc(s)).append("</code> ");
    }
    b.append("</p>\n");
    for (String n : ctx.notes()) {
      b.append("<p class=\"bad\">").append(esc(n)).append("</p>\n");
    }
    if (!r.rejected().isEmpty()) {
      b.append("<table id=\"rejected\"><tr><th>run</th><th>where</th><th>why it did not verify")
          .append("</th></tr>\n");
      rows(
          b,
          r.rejected(),
          3,
          x ->
              TableRow.in(b, "rejected")
                  .code(x.runId())
                  .cell(esc(x.where()))
                  .cell("did not verify: " + esc(x.reason()))
                  .end());
      b.append("</table>\n");
    }
  }

  private static void nodeLog(StringBuilder b, ReportContext ctx) {
    b.append("<h2>Node-log checkpoint</h2>\n");
    if (ctx.nodeLog().isEmpty()) {
      b.append("<p class=\"bad\">No node-log checkpoint was checked.</p>\n");
      return;
    }
    NodeLogCheck n = ctx.nodeLog().get();
    b.append("<p id=\"checkpoint\">");
    if (n.failure().isPresent()) {
      b.append("<span class=\"bad\">did not verify: ")
          .append(esc(n.failure().get()))
          .append("</span>");
    } else {
      b.append("<span class=\"ok\">verified</span> against the node key: log <code>")
          .append(esc(n.origin()))
          .append("</code> at size ")
          .append(n.treeSize())
          .append(", root <code>")
          .append(esc(n.rootHex()))
          .append("</code>; ")
          .append(n.runsProven())
          .append(
              " run(s) proven included (inclusion proofs of each run's head segment, which names the rest"
                  + " of its chain and its receipts, and of its attestations).");
    }
    b.append("</p>\n<pre>").append(esc(n.note())).append("</pre>\n");
  }

  private static void outcomes(StringBuilder b, VerifiedRecords r) {
    Map<String, Long> count = new java.util.TreeMap<>();
    r.runs().forEach(x -> count.merge(x.outcomeKind(), 1L, Long::sum));
    b.append("<table id=\"outcomes\"><tr><th>outcome</th><th>runs</th></tr>\n");
    count.forEach((k, v) -> TableRow.in(b).cell(esc(k)).number(v).end());
    b.append("</table>\n");
  }

  private static void energy(StringBuilder b, ReportAggregates a) {
    b.append("<h2>Energy</h2>\n<p>Active energy is what the receipts attribute to each device")
        .append(
            " class while a unit executed; idle energy (a warm instance waiting before its claim,")
        .append(" a parked run) is kept apart. Each figure says how it was obtained:")
        .append(" <span class=\"prov-HwShunt\">measured (HwShunt)</span>,")
        .append(" <span class=\"prov-ModelBased\">measured and apportioned (ModelBased)</span>,")
        .append(" <span class=\"prov-Estimator\">estimated (Estimator)</span>.</p>\n");
    figure(b, ReportCharts.energyByClass(a));
    b.append("<table id=\"energy\"><tr><th>device class</th>");
    for (Provenance p : Provenance.values()) {
      b.append("<th class=\"prov-")
          .append(p)
          .append("\">")
          .append(ReportCharts.provenanceSeries(p))
          .append(", µJ</th>");
    }
    b.append("</tr>\n");
    for (Map.Entry<DeviceClass, Map<Provenance, Long>> e : a.energyByClass().entrySet()) {
      row(b, e.getKey().jsonName(), e.getValue());
    }
    row(b, "idle: warm claims", a.warmIdleByProvenance());
    row(b, "idle: parked", a.parkedIdleByProvenance());
    b.append("</table>\n");
  }

  private static void row(StringBuilder b, String label, Map<Provenance, Long> v) {
    TableRow row = TableRow.in(b).cell(esc(label));
    for (Provenance p : Provenance.values()) {
      row.uj(v.getOrDefault(p, 0L));
    }
    row.end();
  }

  private static void usage(
      StringBuilder b, String what, String plotId, List<ReportAggregates.Usage> all) {
    List<ReportAggregates.Usage> byEnergy =
        ReportAggregates.top(all, TOP, ReportAggregates.Usage::totalUj);
    List<ReportAggregates.Usage> byCpu =
        ReportAggregates.top(all, TOP, ReportAggregates.Usage::cpuMs);
    b.append("<h2>").append(what).append("</h2>\n");
    figure(
        b,
        ReportCharts.usage(
            plotId.substring("plot-".length()),
            "Top " + what.toLowerCase(java.util.Locale.ROOT) + " by energy, by provenance",
            byEnergy));
    usageTable(b, "Top " + TOP + " by energy", plotId + "-energy", byEnergy);
    usageTable(b, "Top " + TOP + " by CPU time", plotId + "-cpu", byCpu);
  }

  private static void usageTable(
      StringBuilder b, String caption, String id, List<ReportAggregates.Usage> rows) {
    b.append("<table id=\"")
        .append(id)
        .append("\"><caption>")
        .append(caption)
        .append("</caption><tr><th>")
        .append("key</th><th>runs</th><th>CPU ms</th><th>active µJ</th><th>idle µJ</th>")
        .append("<th>worst provenance</th></tr>\n");
    for (ReportAggregates.Usage u : rows) {
      Provenance worst = Provenance.HwShunt;
      for (Provenance p : u.activeByProvenance().keySet()) {
        worst = worst.worst(p);
      }
      TableRow.in(b)
          .code(u.key())
          .number(u.runs())
          .uj(u.cpuMs())
          .uj(u.activeUj())
          .uj(u.idleUj())
          .provenance(worst, u.activeByProvenance().isEmpty() ? "none" : worst.name())
          .end();
    }
    b.append("</table>\n");
  }

  private static void grants(StringBuilder b, ReportAggregates a) {
    b.append("<h2>Grants in use</h2>\n<table id=\"grants\"><tr><th>grants_id</th><th>runs</th>")
        .append("<th>grant (canonical text, checked against the grants_id)</th></tr>\n");
    rows(b, a.grants(), 3, g -> grantRow(b, g));
    b.append("</table>\n");
  }

  private static void grantRow(StringBuilder b, ReportAggregates.GrantUse g) {
    String text = g.text().orElse("");
    TableRow.in(b)
        .cell(
            "<code title=\""
                + esc(text.isEmpty() ? "grant text not available" : text)
                + "\">"
                + esc(g.grantsId())
                + "</code>")
        .number(g.runs())
        .cell(
            text.isEmpty()
                ? "not available (not kept, or it does not hash to this grants_id)"
                : "<pre>" + esc(text) + "</pre>")
        .end();
  }

  private static void breaches(StringBuilder b, ReportAggregates a) {
    b.append("<h2>Breaches and refusals</h2>\n<table id=\"breaches\"><tr><th>run</th>")
        .append("<th>outcome</th><th>module</th><th>CPU ms</th><th>µJ</th></tr>\n");
    List<VerifiedRun> both = new ArrayList<>(a.breaches());
    both.addAll(a.refusals());
    rows(b, both, 5, r -> breachRow(b, r));
    b.append("</table>\n<p>")
        .append(a.breaches().size())
        .append(" breach(es) (a budget exceeded, the unit stopped), ")
        .append(a.refusals().size())
        .append(" refusal(s) (declined before anything ran).</p>\n");
  }

  private static void breachRow(StringBuilder b, VerifiedRun r) {
    Outcome o = r.outcome().orElseThrow();
    TableRow.in(b)
        .cell(runLink(r.runId()))
        .cell(esc(o.summary()))
        .code(ReportCharts.shortKey(r.unit()))
        .uj(r.cpuTimeMs())
        .uj(r.total().totalUj())
        .end();
  }

  private static void durable(StringBuilder b, ReportAggregates a) {
    b.append("<h2>Durable runs</h2>\n<table id=\"durable\"><tr><th>run</th><th>segments</th>")
        .append("<th>chain</th><th>hosts</th><th>idle µJ</th></tr>\n");
    rows(b, a.durable(), 5, r -> durableRow(b, r));
    b.append("</table>\n");
  }

  private static void durableRow(StringBuilder b, VerifiedRun r) {
    StringBuilder chain = new StringBuilder();
    for (RunSegment s : r.segments()) {
      chain
          .append(chain.length() == 0 ? "" : " → ")
          .append(s.kind())
          .append('@')
          .append(s.hostId());
    }
    TableRow.in(b)
        .cell(runLink(r.runId()))
        .number(r.segments().size())
        .cell(esc(chain.toString()))
        .cell(esc(String.join(", ", r.hosts())))
        .uj(r.total().idleUj())
        .end();
  }

  private static void runs(StringBuilder b, VerifiedRecords r) {
    b.append("<h2>Runs</h2>\n<p>Newest first; every verified run has its own page.</p>\n")
        .append("<table id=\"runs\"><tr><th>run</th><th>started</th><th>outcome</th>")
        .append("<th>module</th><th>submitter</th><th>CPU ms</th><th>µJ</th></tr>\n");
    List<VerifiedRun> newestFirst = new ArrayList<>(r.runs());
    Collections.reverse(newestFirst);
    rows(b, newestFirst, 7, x -> runRow(b, x));
    b.append("</table>\n");
  }

  private static void runRow(StringBuilder b, VerifiedRun x) {
    TableRow.in(b)
        .cell(runLink(x.runId()))
        .cell(time(x.startedMs()))
        .cell(esc(x.outcome().map(Outcome::summary).orElse(x.outcomeKind())))
        .code(ReportCharts.shortKey(x.unit()))
        .cell(x.submitterUid().isPresent() ? "uid " + x.submitterUid().getAsLong() : "")
        .uj(x.cpuTimeMs())
        .uj(x.total().totalUj())
        .end();
  }

  private static String runLink(String runId) {
    return "<a href=\"runs/"
        + esc(Html.runFile(runId))
        + ".html\"><code>"
        + esc(runId)
        + "</code></a>";
  }

  /**
   * A row per item, through {@code row}, for the first {@link #MAX_ROWS} of {@code items}; then one
   * row of {@code cols} columns counting the rest.
   */
  private static <T> void rows(StringBuilder b, List<T> items, int cols, Consumer<T> row) {
    items.subList(0, Math.min(items.size(), MAX_ROWS)).forEach(row);
    if (items.size() > MAX_ROWS) {
      more(b, items.size() - MAX_ROWS, cols);
    }
  }

  private static void more(StringBuilder b, int n, int cols) {
    b.append("<tr><td colspan=\"")
        .append(cols)
        .append("\">… and ")
        .append(n)
        .append(" more</td></tr>\n");
  }

  private static void figure(StringBuilder b, String svg) {
    b.append("<figure>").append(svg).append("</figure>\n");
  }
}
