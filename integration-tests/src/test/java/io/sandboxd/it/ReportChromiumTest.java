package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.SubmitReply;
import java.awt.image.BufferedImage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 26 against the running daemon: units run, one stored receipt is changed behind the store's
 * back, and `sandboxctl report` writes a page that headless Chromium loads without console errors;
 * its plots hold one series per outcome and one point per (minute, outcome) of the runs that
 * verified, the changed run is listed as "did not verify" and drawn nowhere, and the screenshot
 * shows the plot's bars.
 */
class ReportChromiumTest {
  @TempDir static Path dir;

  static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  static final Pattern REF =
      Pattern.compile(
          "jfreesvg:ref=[\"']\\{(?:&quot;|\")rowKey(?:&quot;|\"): (?:&quot;|\")(.*?)(?:&quot;|\"),"
              + " (?:&quot;|\")columnKey(?:&quot;|\"): (?:&quot;|\")(.*?)(?:&quot;|\")\\}[\"']");

  /** What Chromium did with a page: its DOM after load and its console. */
  record Loaded(String dom, String console, int exit) {}

  static Loaded chromium(Path page, String... extra) throws Exception {
    assertTrue(
        Files.isExecutable(CHROMIUM), "Debian package chromium is missing (bin/test installs it)");
    List<String> cmd =
        new ArrayList<>(
            List.of(
                CHROMIUM.toString(),
                "--headless",
                "--no-sandbox", // tests run as root on CI machines
                "--disable-gpu",
                "--no-first-run",
                "--enable-logging=stderr",
                "--v=0",
                "--user-data-dir=" + dir.resolve("chromium-profile")));
    cmd.addAll(List.of(extra));
    cmd.add(page.toUri().toString());
    Path err = Files.createTempFile(dir, "chromium", ".err");
    Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("chromium did not finish on " + page);
    }
    StringBuilder console = new StringBuilder();
    for (String l : Files.readAllLines(err)) {
      if (l.contains("CONSOLE") || l.contains("Refused to")) {
        console.append(l).append('\n');
      }
    }
    return new Loaded(new String(out, StandardCharsets.UTF_8), console.toString(), p.exitValue());
  }

  /** Series → points of one plot in the DOM Chromium built. */
  static Map<String, Set<String>> plot(String dom, String id) {
    int start = dom.indexOf("id=\"plot-" + id + "\"");
    assertTrue(start >= 0, "no plot " + id + " in the DOM");
    String svg = dom.substring(start, dom.indexOf("</svg>", start));
    Map<String, Set<String>> series = new HashMap<>();
    Matcher m = REF.matcher(svg);
    while (m.find()) {
      series.computeIfAbsent(m.group(1), k -> new HashSet<>()).add(m.group(2));
    }
    return series;
  }

  static Envelope env(String line) {
    return Envelope.fromJson(CanonicalJson.parse(line));
  }

  /** The minute a run started, by the same signed times the report reads. */
  static long minute(SubmitReply r) {
    long t =
        Math.min(
            RunSegment.fromCore(env(r.getSegment()).core()).atMs(),
            Math.min(
                Receipt.fromCore(env(r.getReceipt()).core()).startedMs(),
                Attestation.fromCore(env(r.getAttestation()).core()).issuedMs()));
    return t / 60_000L;
  }

  static String kind(SubmitReply r) {
    Outcome o = Attestation.fromCore(env(r.getAttestation()).core()).outcome();
    return o instanceof Outcome.Terminated ? "Terminated" : o.summary();
  }

  @Test
  void theReportLoadsInChromiumDrawsWhatVerifiedAndListsTheChangedRun() throws Exception {
    Path state = dir.resolve("state");
    List<SubmitReply> before =
        StoppedState.record(state, dir.resolve("a.sock"), "hello", "spin", "hello");
    SubmitReply victim = before.get(0);
    assertEquals(
        1,
        StoppedState.update(
            state,
            "UPDATE run_records SET envelope = record_bytes(replace(record_text(envelope),"
                + " '\"tier\":\"S2\"', '\"tier\":\"S3\"'))"
                + " WHERE kind = 'receipt' AND run_id = ?",
            victim.getRunId()));
    List<SubmitReply> verified = new ArrayList<>(before.subList(1, before.size()));
    Path out = dir.resolve("report");
    try (DaemonProcess d =
            DaemonProcess.start(state, dir.resolve("b.sock"), "--serve-damaged-store");
        DaemonClient c = new DaemonClient(d.socket)) {
      for (String unit : List.of("hello", "spin", "hello")) {
        verified.add(
            Submissions.submit(c, Submissions.exampleUnit(unit), Submissions.exampleGrants(unit)));
      }
      DaemonProcess.Result r = d.ctl("report", "--out", out.toString());
      assertEquals(0, r.exit(), r.err());
      assertTrue(r.out().contains(verified.size() + " run(s) verified, 1 did not verify"), r.out());
    }
    Path index = out.resolve("index.html");

    Loaded page = chromium(index, "--dump-dom");
    assertEquals(0, page.exit(), page.console());
    assertEquals("", page.console(), "console messages while loading the report");
    String dom = page.dom();
    assertTrue(dom.contains(verified.size() + " run(s) verified"), dom);
    assertTrue(dom.contains("1 did not verify"), dom);
    // The grant text came over GetRecords (with_grants) and hashed to the signed grants_id.
    assertTrue(
        dom.contains("&quot;energy_budget_uj&quot;:60000000")
            || dom.contains("\"energy_budget_uj\":60000000"),
        "no spin grant text");

    Map<String, Set<Long>> expected = new HashMap<>();
    for (SubmitReply v : verified) {
      expected.computeIfAbsent(kind(v), k -> new HashSet<>()).add(minute(v));
    }
    Map<String, Set<String>> runs = plot(dom, "runs");
    assertEquals(expected.keySet(), runs.keySet(), dom);
    expected.forEach((k, v) -> assertEquals(v.size(), runs.get(k).size(), k + " " + runs));
    // No meters on these machines: one estimated series with the one class the units ran on.
    assertEquals(Map.of("estimated (Estimator)", Set.of("Cpu")), plot(dom, "energy-class"));
    assertEquals(1, plot(dom, "modules").size());

    // The changed run: listed as not verified, linked and drawn nowhere, no page of its own.
    String id = victim.getRunId();
    Matcher row =
        Pattern.compile("<tr class=\"rejected\"><td><code>" + id + "</code>.*?</tr>").matcher(dom);
    assertTrue(row.find(), dom);
    assertTrue(row.group().contains("did not verify"), row.group());
    String rest = dom.replace(row.group(), "");
    assertFalse(rest.contains(id), "the changed run appears outside its row");
    assertFalse(Files.exists(out.resolve("runs/" + id + ".html")));

    // A control: the same check sees a page that tries to fetch, so an empty console means
    // something.
    Path fetching = out.resolve("control.html");
    Files.writeString(
        fetching,
        Files.readString(index)
            .replace("</body>", "<img src=\"http://127.0.0.1:9/x.png\"></body>"));
    assertFalse(
        chromium(fetching, "--dump-dom").console().isEmpty(), "a blocked fetch went unseen");
    Files.delete(fetching);

    Path png = Path.of("target", "report.png").toAbsolutePath();
    Files.createDirectories(png.getParent());
    Files.deleteIfExists(png);
    Loaded shot = chromium(index, "--window-size=1150,2400", "--screenshot=" + png);
    assertEquals(0, shot.exit(), shot.console());
    BufferedImage img = ImageIO.read(png.toFile());
    assertEquals(1150, img.getWidth());
    // The Completed bars (#2e7d32) and the Terminated bars (#c62828) were painted.
    assertTrue(pixels(img, 0x2e7d32) > 500, "no Completed bars in the screenshot");
    assertTrue(pixels(img, 0xc62828) > 200, "no Terminated bars in the screenshot");

    // A verified run's page: its chain, its records beside it, and a command that verifies them.
    String run = verified.get(0).getRunId();
    Path runPage = out.resolve("runs/" + run + ".html");
    Loaded rp = chromium(runPage, "--dump-dom");
    assertEquals("", rp.console());
    assertTrue(rp.dom().contains("0 execute</span>"), rp.dom());
    Matcher cmd =
        Pattern.compile("<pre id=\"reverify\">sandboxctl (verify.*?)</pre>").matcher(rp.dom());
    assertTrue(cmd.find(), rp.dom());
    List<String> args = new ArrayList<>(List.of(cmd.group(1).split(" ")));
    args.set(args.size() - 1, out.resolve("runs").resolve(args.get(args.size() - 1)).toString());
    DaemonProcess.Result v = DaemonProcess.sandboxctl(null, args.toArray(String[]::new));
    assertEquals(0, v.exit(), v.err());
    assertTrue(v.out().contains("valid: chain of 1 segment(s), run " + run), v.out());
  }

  static int pixels(BufferedImage img, int rgb) {
    int n = 0;
    for (int y = 0; y < img.getHeight(); y++) {
      for (int x = 0; x < img.getWidth(); x++) {
        if ((img.getRGB(x, y) & 0xffffff) == rgb) {
          n++;
        }
      }
    }
    return n;
  }
}
