package io.sandboxd.daemon.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.ReplayRefusedException;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.daemon.store.TamperedRunException;
import io.sandboxd.executor.ExecutorBusyException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** One exception kind, one status code, whichever call raised it. */
class ErrorStatusTest {
  @Test
  void eachKindHasItsCodeAndItsMessage() {
    assertEquals(
        Status.Code.INVALID_ARGUMENT,
        ErrorStatus.of(new AdmissionException("grants: $.x: unknown field")).getCode());
    assertEquals(
        "grants: $.x: unknown field",
        ErrorStatus.of(new AdmissionException("grants: $.x: unknown field")).getDescription());
    assertEquals(Status.Code.NOT_FOUND, ErrorStatus.of(new RunNotFoundException("r")).getCode());
    assertEquals(
        Status.Code.FAILED_PRECONDITION,
        ErrorStatus.of(new ReplayRefusedException("run r: journal pruned")).getCode());
    assertEquals(
        Status.Code.RESOURCE_EXHAUSTED,
        ErrorStatus.of(new ExecutorBusyException("node busy", null)).getCode());
    assertEquals(Status.Code.UNAVAILABLE, ErrorStatus.of(new StoreException("disk")).getCode());
  }

  @Test
  void aSubclassIsMappedBeforeItsParent() {
    StoreException tampered = new TamperedRunException("r", "outcome rewritten");
    assertEquals(Status.Code.DATA_LOSS, ErrorStatus.of(tampered).getCode());
    // Every row must be reachable: no earlier row may already match a later row's kind.
    List<Class<? extends Throwable>> seen = new ArrayList<>();
    for (ErrorStatus.Row r : ErrorStatus.TABLE) {
      for (Class<? extends Throwable> earlier : seen) {
        assertFalse(earlier.isAssignableFrom(r.kind()), r.kind() + " is shadowed by " + earlier);
      }
      seen.add(r.kind());
    }
  }

  @Test
  void anUnexpectedFailureIsInternalAndNamesItsType() {
    Status s = ErrorStatus.of(new IllegalStateException("bug"));
    assertEquals(Status.Code.INTERNAL, s.getCode());
    assertTrue(s.getDescription().contains("IllegalStateException"), s.getDescription());
    assertEquals(null, ErrorStatus.rowOf(new IllegalStateException("bug")));
  }
}
