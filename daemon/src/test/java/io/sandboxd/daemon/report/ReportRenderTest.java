package io.sandboxd.daemon.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.daemon.cli.Sandboxctl;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A seeded store's report, rendered to files: what verified is drawn and summed, a tampered receipt
 * is listed as "did not verify" and drawn nowhere, each plot holds the series and points the seed
 * implies, and a run's page carries a command that re-verifies its records offline.
 */
class ReportRenderTest {
  @TempDir Path dir;

  static final long SEED = Long.getLong("report.seed", 20261201L);
  static final Set<PublicKey> BOTH = Set.of(SeededRuns.A.publicKey(), SeededRuns.B.publicKey());
  static final Pattern REF =
      Pattern.compile(
          "jfreesvg:ref='\\{&quot;rowKey&quot;: &quot;(.*?)&quot;, &quot;columnKey&quot;: &quot;(.*?)&quot;\\}'");

  static ReportContext ctx() {
    return new ReportContext(
        SeededRuns.T0, "seeded", ReportWindow.ALL, List.of("a", "b"), Optional.empty(), List.of());
  }

  /** The run {@code victim}'s receipt with its CPU time raised, signature left as it was. */
  static List<RunEvidence> tamper(List<RunEvidence> in, String victim) {
    List<RunEvidence> out = new ArrayList<>();
    for (RunEvidence e : in) {
      if (!e.runId().equals(victim)) {
        out.add(e);
        continue;
      }
      List<Envelope> env = new ArrayList<>();
      for (Envelope x : e.envelopes()) {
        if (x.schema().orElse("").equals(Receipt.SCHEMA)) {
          String line = x.toJsonLine();
          String changed = line.replaceFirst("\"cpu_time_ms\":\\d+", "\"cpu_time_ms\":1");
          assertFalse(line.equals(changed), "nothing changed");
          x = Envelope.fromJson(CanonicalJson.parse(changed));
        }
        env.add(x);
      }
      out.add(RunEvidence.of(e.runId(), e.state(), e.submitterUid(), env, e.grantsJson()));
    }
    return out;
  }

  /** Series → points of one plot, read from its element groups. */
  static Map<String, Set<String>> plot(String html, String id) {
    int start = html.indexOf("<svg id='plot-" + id + "'");
    assertTrue(start >= 0, "no plot " + id);
    String svg = html.substring(start, html.indexOf("</svg>", start));
    Map<String, Set<String>> series = new HashMap<>();
    Matcher m = REF.matcher(svg);
    while (m.find()) {
      assertTrue(
          series.computeIfAbsent(m.group(1), k -> new HashSet<>()).add(m.group(2)),
          "twice: " + m.group());
    }
    return series;
  }

  @Test
  void aSeededStoreRendersWhatVerifiedAndListsTheTamperedRunApart() throws Exception {
    System.out.println("report.seed=" + SEED);
    SeededRuns s = SeededRuns.of(SEED, 80);
    assertTrue(s.durable > 0, "the seed made no durable run; seed " + SEED);
    String victim = s.evidence.get(3).runId();
    RunEvidence original = s.evidence.get(3);
    VerifiedRecords r = VerifiedRecords.check(tamper(s.evidence, victim), BOTH, ReportWindow.ALL);

    assertEquals(79, r.runs().size(), r.rejected().toString());
    assertEquals(1, r.rejected().size());
    assertEquals(victim, r.rejected().get(0).runId());
    assertTrue(r.rejected().get(0).reason().contains("address"), r.rejected().get(0).reason());
    assertTrue(r.runs().stream().noneMatch(x -> x.runId().equals(victim)));

    ReportSite.Written w = ReportSite.write(dir, r, ctx());
    String html = Files.readString(dir.resolve("index.html"));
    assertTrue(html.contains("79 run(s) verified"), html);
    assertTrue(html.contains("1 did not verify"), html);
    int listed = html.indexOf("<tr class=\"rejected\"><td><code>" + victim + "</code>");
    assertTrue(listed > 0, "the tampered run is not listed as rejected");
    assertTrue(html.indexOf("did not verify: ", listed) > 0);
    assertEquals(
        1, count(html, ">" + victim + "<"), "the tampered run shows outside the rejected table");
    assertFalse(Files.exists(dir.resolve("runs/" + victim + ".html")));
    assertEquals(1 + 2 * 79, w.files());

    // Runs over time: one series per outcome, one point per (minute, outcome) the verified runs
    // have.
    Map<String, Set<Long>> expected = new HashMap<>();
    for (VerifiedRun x : r.runs()) {
      expected.computeIfAbsent(x.outcomeKind(), k -> new HashSet<>()).add(x.startedMs() / 60_000L);
    }
    Map<String, Set<String>> runs = plot(html, "runs");
    assertEquals(expected.keySet(), runs.keySet());
    expected.forEach((k, v) -> assertEquals(v.size(), runs.get(k).size(), k));
    // The seed's own tally, less the tampered run, is what the plot counts.
    Map<String, Long> seeded = new HashMap<>(s.outcomes);
    seeded.merge(kindOf(original), -1L, Long::sum);
    seeded.values().removeIf(v -> v == 0);
    assertEquals(seeded.keySet(), runs.keySet());

    // Energy per class: a series per provenance present; Cpu and Gpu and both idle kinds as points.
    Map<String, Set<String>> energy = plot(html, "energy-class");
    assertTrue(
        energy
            .get(ReportCharts.provenanceSeries(Provenance.Estimator))
            .containsAll(List.of("Cpu", "idle: warm claims", "idle: parked")),
        energy.toString());
    assertTrue(
        energy.get(ReportCharts.provenanceSeries(Provenance.ModelBased)).contains("Gpu"),
        energy.toString());
    ReportAggregates a = ReportAggregates.of(r.runs());
    long cpu = 0;
    for (Map<Provenance, Long> m : a.energyByClass().values()) {
      cpu += m.values().stream().mapToLong(Long::longValue).sum();
    }
    long seededActive =
        s.cpuByProvenance.values().stream().mapToLong(Long::longValue).sum() + s.gpuUj;
    long victimUj = receiptUj(original);
    assertEquals(seededActive - victimUj, cpu);
    assertEquals(s.parkedIdleUj, a.parkedIdleByProvenance().get(Provenance.Estimator));

    // Modules: the top ten at most, each a category of its plot.
    Map<String, Set<String>> modules = plot(html, "modules");
    Set<String> categories = new HashSet<>();
    modules.values().forEach(categories::addAll);
    assertEquals(Math.min(ReportPage.TOP, a.modules().size()), categories.size());

    // Grants in use: both grant sets, with their text (it hashes to the signed id).
    assertTrue(html.contains(SeededRuns.grantsId(SeededRuns.GRANTS_GPU)));
    assertTrue(html.contains("&quot;energy_budget_uj&quot;:90000000"), "grant text not shown");

    // Durable runs list their hosts; their pages show the chain across hosts.
    VerifiedRun d = a.durable().get(0);
    assertEquals(List.of("host-a", "host-b"), d.hosts());
    String page = Files.readString(dir.resolve("runs/" + d.runId() + ".html"));
    assertTrue(page.contains("2 resume</span>") && page.contains("host-b"), page);

    // The page's own command verifies the records written beside it.
    Matcher cmd =
        Pattern.compile("<pre id=\"reverify\">sandboxctl (verify.*?)</pre>").matcher(page);
    assertTrue(cmd.find(), page);
    List<String> args = new ArrayList<>(List.of(cmd.group(1).split(" ")));
    String file = args.remove(args.size() - 1);
    args.add(dir.resolve("runs").resolve(file).toString());
    assertEquals(0, Sandboxctl.commandLine().execute(args.toArray(String[]::new)));
  }

  @Test
  void theWindowAndSubmitterSelectBySignedTime() {
    SeededRuns s = SeededRuns.of(SEED, 60);
    long mid = SeededRuns.T0 + 15 * 60_000L;
    VerifiedRecords late =
        VerifiedRecords.check(
            s.evidence,
            BOTH,
            new ReportWindow(OptionalLong.of(mid), OptionalLong.empty(), OptionalLong.of(1001)));
    assertFalse(late.runs().isEmpty());
    for (VerifiedRun x : late.runs()) {
      assertTrue(x.startedMs() >= mid);
      assertEquals(1001, x.submitterUid().getAsLong());
    }
    long all =
        VerifiedRecords.check(s.evidence, BOTH, ReportWindow.ALL).runs().stream()
            .filter(x -> x.startedMs() >= mid && x.submitterUid().getAsLong() == 1001)
            .count();
    assertEquals(all, late.runs().size());
  }

  @Test
  void aRunSignedByAKeyNotTrustedDoesNotVerify() {
    SeededRuns s = SeededRuns.of(SEED, 40);
    VerifiedRecords r =
        VerifiedRecords.check(s.evidence, Set.of(SeededRuns.A.publicKey()), ReportWindow.ALL);
    assertEquals(s.durable, r.rejected().size(), r.rejected().toString());
    r.rejected().forEach(x -> assertTrue(x.reason().contains("expected signer"), x.reason()));
  }

  @Test
  void grantTextIsShownOnlyWhenItHashesToTheSignedId() {
    String id = SeededRuns.grantsId(SeededRuns.GRANTS_SMALL);
    assertTrue(VerifiedRecords.grantsText(SeededRuns.GRANTS_SMALL, id).isPresent());
    assertTrue(VerifiedRecords.grantsText(SeededRuns.GRANTS_GPU, id).isEmpty());
    assertTrue(VerifiedRecords.grantsText("{not json", id).isEmpty());
  }

  static String kindOf(RunEvidence e) {
    for (Envelope x : e.envelopes()) {
      if (x.schema().orElse("").equals(io.sandboxd.attest.Attestation.SCHEMA)) {
        return SeededRuns.kindOf(io.sandboxd.attest.Attestation.fromCore(x.core()).outcome());
      }
    }
    throw new AssertionError("no attestation");
  }

  static long receiptUj(RunEvidence e) {
    long t = 0;
    for (Envelope x : e.envelopes()) {
      if (x.schema().orElse("").equals(Receipt.SCHEMA)) {
        t += Receipt.fromCore(x.core()).totalUj();
      }
    }
    return t;
  }

  static int count(String s, String part) {
    int n = 0;
    for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
