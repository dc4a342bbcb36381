package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.util.List;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * A chunk of ledger positions reads the same rows as reading each run on its own, and holds no more
 * than its bound in bytes: a run may journal 64 MiB, so 64 of them must not be read at once.
 */
class RunReadsTest extends StoreFileFixture {
  private static final int RUNS = 10;

  @Test
  void aChunkReadsWhatEachRunReadsAloneAndStopsAtItsBoundInBytes() throws Exception {
    try (RunStore store = RunStore.open(file(), key)) {
      fill(store, 0, RUNS);
      try (Connection db = store.openReader();
          Statements q = new Statements(db)) {
        RunReads.Chunk whole = RunReads.Chunk.read(q, 0);
        for (int p = 0; p < RUNS; p++) {
          assertTrue(whole.covers(p), "position " + p);
          assertSame(RunReads.of(q, String.format("run-%05d", p)), whole.at(p));
        }
        // Past the ledger's end: nothing, not an error.
        assertTrue(whole.at(RUNS).records().isEmpty());

        // A bound that fits some runs: the chunk ends before the first that would pass it.
        long oneRun = bytes(RunReads.of(q, "run-00000"));
        RunReads.Chunk some = RunReads.Chunk.read(q, 0, 3 * oneRun + oneRun / 2);
        assertTrue(some.covers(2));
        assertFalse(some.covers(3));
        for (int p = 0; p < 3; p++) {
          assertSame(RunReads.of(q, String.format("run-%05d", p)), some.at(p));
        }
        // A bound the first run alone passes: the chunk covers nothing (the audit then reads that
        // run on its own).
        assertFalse(RunReads.Chunk.read(q, 4, 1).covers(4));
      }
    }
  }

  /** What the chunk counts for a run's rows (as {@link RunReads.Chunk} sizes them). */
  private static long bytes(RunReads r) throws Exception {
    long n = 0;
    for (RunReads.RecordRow rec : r.records()) {
      n += rec.envelope().length + 128L;
    }
    for (RunReads.JournalRow j : r.journal()) {
      n += j.entry().length + 16L;
    }
    return n;
  }

  private static void assertSame(RunReads want, RunReads got) throws Exception {
    assertSameRows(want.records(), got.records(), RunReadsTest::assertSameRecord);
    assertSameRows(want.journal(), got.journal(), RunReadsTest::assertSameEntry);
  }

  private static void assertSameRecord(RunReads.RecordRow want, RunReads.RecordRow got) {
    assertEquals(want.kind(), got.kind());
    assertEquals(want.address(), got.address());
    assertArrayEquals(want.envelope(), got.envelope());
  }

  private static void assertSameEntry(RunReads.JournalRow want, RunReads.JournalRow got) {
    assertEquals(want.seq(), got.seq());
    assertArrayEquals(want.entry(), got.entry());
  }

  /** As many rows in {@code got} as in {@code want}, at least one, each the same by {@code row}. */
  private static <T> void assertSameRows(List<T> want, List<T> got, BiConsumer<T, T> row) {
    assertEquals(want.size(), got.size());
    assertFalse(want.isEmpty());
    for (int i = 0; i < want.size(); i++) {
      row.accept(want.get(i), got.get(i));
    }
  }
}
