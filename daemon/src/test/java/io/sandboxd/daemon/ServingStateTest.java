package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Whether the node is idle, as the store verifier's idle share asks it. */
class ServingStateTest {
  @Test
  void theNodeIsIdleOnlyOnceNoSubmissionHasBeenInFlightForTheWholeWhile() throws Exception {
    ServingState s = new ServingState();
    assertTrue(s.idleFor(0));
    s.enter();
    s.enter();
    assertFalse(s.idleFor(0), "two in flight");
    s.exit();
    assertFalse(s.idleFor(0), "one still in flight");
    s.exit();
    assertEquals(0, s.inFlight());
    assertTrue(s.idleFor(0));
    // The quiet spell starts when the last one ends, not when the state was made.
    assertFalse(s.idleFor(60_000), "quiet for a minute just after a submission ended");
    Thread.sleep(60);
    assertTrue(s.idleFor(50));
    // Serving begins: a new quiet spell, however long the start took.
    s.serving();
    assertFalse(s.idleFor(60_000), "quiet for a minute just after serving began");
  }
}
