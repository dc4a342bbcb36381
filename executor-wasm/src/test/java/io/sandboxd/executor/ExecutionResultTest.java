package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Outcome;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ExecutionResultTest {
  @Test
  void aDeclinedRunUsedNothingAndJournaledNothing() {
    ExecutionResult r =
        ExecutionResult.declined("no meter", Set.of(DeviceClass.Cpu, DeviceClass.Gpu), true, 1234);
    assertEquals(new Outcome.Declined("no meter"), r.outcome());
    assertEquals(Set.of(DeviceClass.Cpu, DeviceClass.Gpu), r.energy().keySet());
    assertTrue(r.energy().values().stream().allMatch(e -> e.uj() == 0), r.energy().toString());
    assertEquals(1234, r.startedMs());
    assertEquals(1234, r.endedMs());
    assertEquals(0, r.cpuTimeNanos());
    assertEquals(Journal.rootOf(List.of()), r.journalRoot());
    assertTrue(r.journal().isEmpty());
    assertTrue(r.clockGranted());
    assertEquals(Executor.CLOCK_CONSTANT_MS, r.clockConstantMs());
    assertEquals(ExecutionResult.IoCounts.NONE, r.io());
    assertEquals("", r.log());
  }

  @Test
  void theEndIsTheStartPlusTheWallTime() {
    ExecutionResult r =
        ExecutionResult.builder().outcome(new Outcome.Completed()).wall(5_000, 2_500_000).build();
    assertEquals(5_000, r.startedMs());
    assertEquals(5_002, r.endedMs());
    assertEquals(2_500_000, r.wallNanos());
  }

  @Test
  void aResultNeedsAnOutcome() {
    assertThrows(NullPointerException.class, () -> ExecutionResult.builder().build());
  }
}
