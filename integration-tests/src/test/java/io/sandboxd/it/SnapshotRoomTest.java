package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.DurableRunReply;
import io.sandboxd.daemon.rpc.DurableRunRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23: durable runs' snapshots count against store.max_bytes and go with their run, through
 * the running daemon. A park whose snapshot would pass the limit is refused before any of it is
 * written and the run ends failed, its outcome naming store.max_bytes and the sizes, while a small
 * park on the same node fits; the snapshot blobs of a run that completes are deleted, except the
 * ones another parked run still refers to (that run resumes from them), and once no live run is
 * left no snapshot pack is; `sandboxctl status` shows the bytes the live runs hold.
 */
class SnapshotRoomTest {
  @TempDir Path dir;

  static long packBytes(Path state) throws IOException {
    Path packs = state.resolve("snapshots").resolve("packs");
    if (!Files.isDirectory(packs)) {
      return 0;
    }
    try (Stream<Path> s = Files.list(packs)) {
      return s.filter(p -> p.toString().endsWith(".pack"))
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              })
          .sum();
    }
  }

  static long snapshotBytes(DaemonProcess d) throws Exception {
    DaemonProcess.Result r = d.ctl("status", "--json");
    assertEquals(0, r.exit(), r.err());
    JsonNode n = CanonicalJson.mapper().readTree(r.out());
    return n.get("store").get("durable_snapshot_bytes").asLong();
  }

  @Test
  void aParkOverTheStoreLimitIsRefusedAndEndsTheRunWhileASmallOneFits() throws Exception {
    long max = 32L << 20;
    Path config =
        Files.writeString(dir.resolve("tight.json"), "{\"store\":{\"max_bytes\":" + max + "}}");
    Path state = dir.resolve("t");
    try (DaemonProcess d =
            DaemonProcess.start(state, dir.resolve("t.sock"), "--config", config.toString());
        DaemonClient c = new DaemonClient(d.socket)) {
      String big =
          BundleHandoffTest.detached(c, BundleHandoffTest.BIG, BundleHandoffTest.BIG_GRANTS);
      DurableRunReply r = c.stub().suspendRun(DurableRunRequest.newBuilder().setRunId(big).build());
      assertEquals("failed", r.getState(), d.log());
      String why = r.getOutcomeJson();
      assertTrue(
          why.contains("store.max_bytes " + max)
              && why.contains("parking run " + big)
              && why.contains("nothing of the snapshot was written"),
          why);
      // Some 72 MB of pages were frozen; none reached the snapshot store.
      assertTrue(packBytes(state) < 1 << 20, packBytes(state) + " bytes of packs");
      assertEquals(0, snapshotBytes(d));

      String small = BundleHandoffTest.parked(c, DurableRunTest.COUNTER, DurableRunTest.GRANTS);
      assertTrue(snapshotBytes(d) >= 65_536, "a parked page is held");
      assertEquals(0, d.ctl("runs", "resume", small).exit());
    }
  }

  @Test
  void anEndedRunsBlobsGoButOnesAnotherParkedRunNeedsStay() throws Exception {
    Path state = dir.resolve("g");
    try (DaemonProcess d = DaemonProcess.start(state, dir.resolve("g.sock"));
        DaemonClient c = new DaemonClient(d.socket)) {
      // The first holds three pages of its own: two counters parked at the same count would
      // share every blob (content-addressed), and the first's end could free nothing.
      String first = BundleHandoffTest.detached(c, STATIC_PAGES, DurableRunTest.GRANTS);
      String second = BundleHandoffTest.detached(c, DurableRunTest.COUNTER, DurableRunTest.GRANTS);
      BundleHandoffTest.suspend(c, first);
      BundleHandoffTest.suspend(c, second);
      long both = snapshotBytes(d);
      long packsBoth = packBytes(state);
      assertTrue(both > 0 && packsBoth >= both, both + " held, " + packsBoth + " in packs");

      // The first finishes: its own blobs go; the empty storage tree's manifest (and whatever
      // else both snapshots share) stays for the second.
      d.resumeToCompletion(first);
      // The sweep follows the run's end: give it a moment rather than race it.
      long one = snapshotBytes(d);
      for (long until = System.nanoTime() + 30_000_000_000L;
          one >= both && System.nanoTime() < until;
          one = snapshotBytes(d)) {
        Thread.sleep(100);
      }
      assertTrue(one > 0 && one < both, one + " of " + both);
      assertTrue(packBytes(state) < packsBoth, packBytes(state) + " of " + packsBoth);

      // The second resumes from what stayed (its tree is restored from the shared manifest).
      d.resumeToCompletion(second);
      assertEquals(0, snapshotBytes(d));
      assertEquals(0, packBytes(state), "snapshot packs left with no live run");
    }
  }

  /** The counter with three more pages that never change after instantiation. */
  static final String STATIC_PAGES =
      DurableRunTest.COUNTER
          .replace("(memory (export \"memory\") 1 1)", "(memory (export \"memory\") 4 4)")
          .replace(
              "(data (i32.const 0) \"count 000\")",
              "(data (i32.const 0) \"count 000\") (data (i32.const 65536) \"one\")"
                  + " (data (i32.const 131072) \"two\") (data (i32.const 196608) \"three\")");

  @Test
  void aSecondParkKeepsThePagesItSharesWithTheFirst() throws Exception {
    Path state = dir.resolve("s");
    try (DaemonProcess d = DaemonProcess.start(state, dir.resolve("s.sock"));
        DaemonClient c = new DaemonClient(d.socket)) {
      String run = BundleHandoffTest.parked(c, STATIC_PAGES, DurableRunTest.GRANTS);
      assertEquals(0, d.ctl("runs", "resume", run).exit());
      // The second snapshot writes only the counter's page; the three others it refers to were
      // written by the first, whose blobs the sweep after this park must not take.
      BundleHandoffTest.suspend(c, run);
      assertTrue(snapshotBytes(d) >= 4 * 65_536, snapshotBytes(d) + " bytes held");
      d.resumeToCompletion(run);
      assertEquals(0, packBytes(state), "snapshot packs left with no live run");
    }
  }
}
