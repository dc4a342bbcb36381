package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.DaemonClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scraping the metrics endpoint every second under submission load, against the same load unscraped
 * in the same run (phases alternate, ABAB...): every scrape answers and the load keeps running.
 * With {@code -Dsandboxd.bench.seconds=N} (per phase) it is the measurement the issue asks for; the
 * ratio is printed, never asserted on.
 */
class ScrapeLoadTest {
  @TempDir Path dir;

  static final int PHASE_SECONDS = Integer.getInteger("sandboxd.bench.seconds", 3);
  static final int PHASES = Integer.getInteger("sandboxd.bench.phases", 4);
  static final int CLIENTS = Integer.getInteger("sandboxd.bench.clients", 2);

  @Test
  void scrapingEverySecondUnderLoad() throws Exception {
    try (DaemonProcess d =
            DaemonProcess.startWithConfig(
                dir.resolve("state"),
                dir.resolve("s.sock"),
                "{\"metrics\": {\"listen\": \"127.0.0.1:0\"}}");
        DaemonClient c = new DaemonClient(d.socket)) {
      Matcher m =
          Pattern.compile("metrics on (http://127\\.0\\.0\\.1:\\d+/metrics)").matcher(d.log());
      assertTrue(m.find(), d.log());
      URI url = URI.create(m.group(1));
      byte[] hello = Submissions.exampleUnit("hello");
      String grants = Submissions.exampleGrants("hello");
      Submissions.submit(c, hello, grants); // compile once, outside the measurement
      HttpClient http = HttpClient.newHttpClient();
      double[] plain = new double[PHASES / 2 + 1];
      double[] scraped = new double[PHASES / 2 + 1];
      int scrapes = 0;
      for (int phase = 0; phase < PHASES; phase++) {
        boolean scrape = phase % 2 == 1;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong done = new AtomicLong();
        List<Thread> load = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
          Thread t =
              new Thread(
                  () -> {
                    while (!stop.get()) {
                      Submissions.submit(c, hello, grants);
                      done.incrementAndGet();
                    }
                  });
          t.start();
          load.add(t);
        }
        long t0 = System.nanoTime();
        long end = t0 + PHASE_SECONDS * 1_000_000_000L;
        while (System.nanoTime() < end) {
          if (scrape) {
            HttpResponse<String> r =
                http.send(
                    HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertTrue(r.body().contains("sandboxd_runs_total"), r.body());
            scrapes++;
          }
          Thread.sleep(Math.max(0, Math.min(1_000, (end - System.nanoTime()) / 1_000_000)));
        }
        long n = done.get();
        double secs = (System.nanoTime() - t0) / 1e9;
        stop.set(true);
        for (Thread t : load) {
          t.join();
        }
        assertTrue(n > 0, "no unit finished in phase " + phase);
        (scrape ? scraped : plain)[phase / 2] = n / secs;
      }
      double a = 0;
      double b = 0;
      for (int i = 0; i < PHASES / 2; i++) {
        a += plain[i];
        b += scraped[i];
      }
      System.out.printf(
          "scrape load: %d phases of %d s, %d clients: unscraped %.1f units/s, scraped every 1 s"
              + " %.1f units/s, ratio %.4f (%d scrapes)%n",
          PHASES, PHASE_SECONDS, CLIENTS, a / (PHASES / 2), b / (PHASES / 2), b / a, scrapes);
      assertTrue(scrapes >= PHASES / 2, "scrapes: " + scrapes);
    }
  }
}
