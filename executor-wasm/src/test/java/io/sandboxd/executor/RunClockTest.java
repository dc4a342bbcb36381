package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.CanonicalJson;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RunClockTest {
  static final String CLOCK =
      "{\"logging\":true,\"clock\":true,\"random\":false,\"inference\":false}";
  static final String NO_CLOCK =
      "{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}";

  @Test
  void everyReadingOfAnUngrantedClockIsTheConstant() {
    long seed = new Random().nextLong();
    Random rnd = new Random(seed);
    long wall = 1 + (rnd.nextLong() >>> 2);
    RunContext ctx = RunBindingTest.context(NO_CLOCK, wall);
    long constant = Executor.CLOCK_CONSTANT_MS * 1_000_000L;
    HostAnswer a = ctx.clock.read(ctx, CanonicalJson.mapper().createObjectNode(), 0, () -> wall);
    assertFalse(ctx.clock.granted(), "seed " + seed);
    assertEquals("Denied", a.decision(), "seed " + seed);
    assertArrayEquals(SandboxImports.le64(constant), a.payload(), "seed " + seed);
    assertEquals(constant, ctx.clock.shown(rnd.nextLong()), "seed " + seed);
    assertEquals(1, ctx.hostCalls());
  }

  @Test
  void aGrantedClockShowsWhatTheHostRead() {
    long seed = new Random().nextLong();
    Random rnd = new Random(seed);
    long wall = 1 + (rnd.nextLong() >>> 2);
    long mtime = rnd.nextLong();
    RunContext ctx = RunBindingTest.context(CLOCK, wall);
    HostAnswer a =
        ctx.clock.read(ctx, CanonicalJson.mapper().createObjectNode(), 0, ctx.clock::wallNanos);
    assertTrue(ctx.clock.granted(), "seed " + seed);
    assertEquals("Allow", a.decision(), "seed " + seed);
    assertArrayEquals(SandboxImports.le64(wall), a.payload(), "seed " + seed);
    assertEquals(mtime, ctx.clock.shown(mtime), "seed " + seed);
    assertEquals(1, ctx.journal.size());
  }
}
