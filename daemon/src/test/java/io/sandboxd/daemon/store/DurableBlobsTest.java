package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.DurableRunTable.Change;
import io.sandboxd.daemon.store.DurableRunTable.State;
import io.sandboxd.daemon.store.ExportHandoffTable.Handoff;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run store's record of durable runs' snapshot blobs and export hand-offs (issue 23): a blob is
 * unreferenced only once no live run's current snapshot names it, shared blobs count once, an
 * earlier park's blobs go, and a hand-off read back after reopening confirms only its own digest.
 */
class DurableBlobsTest {
  @TempDir Path tmp;
  private final SigningKey key = SigningKey.generate();

  private static DurableRunTable.Run run(String id, State state) {
    return new DurableRunTable.Run(id, state, 1, 1, "u", "{}", "g", "step", "", "", false, false);
  }

  /** Stores parked run {@code id} referring to {@code blobs} (address → size). */
  private static void parked(DurableRunTable t, String id, Map<String, Long> blobs) {
    t.insert(run(id, State.parked), new byte[] {0}, List.of(), List.of(), blobs);
  }

  private static void set(DurableRunTable t, String id, State s) {
    t.apply(new Change(id, List.of(), List.of(), s, "", Optional.empty()));
  }

  @Test
  void aBlobIsUnreferencedOnlyWhenNoLiveRunsCurrentSnapshotNamesIt() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), key)) {
      DurableRunTable t = store.durable();
      parked(t, "a", Map.of("s", 10L, "x", 100L));
      parked(t, "b", Map.of("s", 10L, "y", 1000L));
      assertEquals(1110, t.blobs().liveBytes(), "the shared blob counts once");
      assertTrue(t.blobs().stale().unreferenced().isEmpty());

      set(t, "a", State.completed);
      DurableBlobs.Stale stale = t.blobs().stale();
      assertEquals(Set.of("x"), stale.unreferenced(), "s is still b's");
      assertEquals(2, stale.rows().size());
      t.blobs().forget(stale.rows());
      assertFalse(t.blobs().recorded("a"));
      assertEquals(1010, t.blobs().liveBytes());

      // b parks again on another snapshot: what only its earlier park named goes.
      t.apply(
          new Change("b", List.of(), List.of(), State.parked, "", Optional.empty()),
          Map.of("s", 10L, "z", 5L));
      assertEquals(Set.of("y"), t.blobs().stale().unreferenced());
      assertEquals(15, t.blobs().liveBytes());
      t.blobs().forget(t.blobs().stale().rows());

      set(t, "b", State.moved);
      assertEquals(Set.of("s", "z"), t.blobs().stale().unreferenced());
      assertEquals(0, t.blobs().liveBytes());
    }
  }

  @Test
  void aHandoffSurvivesReopeningAndConfirmsOnlyItsDigest() {
    Path db = tmp.resolve("h.db");
    try (RunStore store = RunStore.open(db, key)) {
      DurableRunTable t = store.durable();
      t.insert(run("r", State.parked), new byte[] {0}, List.of(), List.of());
      assertTrue(t.handoffs().begin("r", new Handoff("d1", 42, "k", 7, Optional.empty())));
      assertFalse(
          t.handoffs().begin("r", new Handoff("d2", 42, "k", 8, Optional.empty())),
          "an exporting run is not exported again");
    }
    try (RunStore store = RunStore.open(db, key)) {
      DurableRunTable t = store.durable();
      assertEquals(State.exporting, t.run("r").orElseThrow().state());
      Handoff h = t.handoffs().handoff("r").orElseThrow();
      assertEquals(new Handoff("d1", 42, "k", 7, Optional.empty()), h);
      assertFalse(t.handoffs().confirm("r", "d2", 9));
      assertEquals(State.exporting, t.run("r").orElseThrow().state());
      assertTrue(t.handoffs().confirm("r", "d1", 9));
      DurableRunTable.Run moved = t.run("r").orElseThrow();
      assertEquals(State.moved, moved.state());
      assertTrue(moved.exported());
      assertEquals(Optional.of(9L), t.handoffs().handoff("r").orElseThrow().confirmedMs());
      assertFalse(t.handoffs().takeBack("r"), "a confirmed export is not taken back");
    }
  }
}
