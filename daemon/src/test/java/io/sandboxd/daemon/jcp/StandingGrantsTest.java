package io.sandboxd.daemon.jcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.rpc.ErrorStatus;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.store.JcpTable;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The daemon's standing grants over a real run store, with a clock the test moves. */
class StandingGrantsTest {
  static final String PARENT =
      "{\"compute\":{\"cpu_time_ms\":1000,\"memory_bytes\":65536},\"host\":{\"logging\":true}}";
  static final String CEILING = "{\"compute\":{\"cpu_time_ms\":500},\"host\":{\"logging\":true}}";
  static final String EVENT = "{\"type\":\"push\"}";

  @TempDir Path tmp;
  final SigningKey node = SigningKey.generate();
  final SigningKey issuer = SigningKey.generate();
  final SigningKey holder = SigningKey.generate();
  final SigningKey agent = SigningKey.generate();
  final AtomicLong clock = new AtomicLong(1_000_000);

  StandingGrants open(RunStore store, long maxPolicies) {
    return new StandingGrants(new JcpTable(store), holder, agent, maxPolicies, clock::get);
  }

  String policy(long maxChildren, long windowMs, long max) {
    return Envelope.sign(
            new JcpMintPolicy(
                    issuer.publicKey().hex(),
                    holder.publicKey().hex(),
                    Grants.parse(PARENT.getBytes(StandardCharsets.UTF_8)).grantsId(),
                    CanonicalJson.parse(CEILING),
                    maxChildren,
                    windowMs,
                    max,
                    List.of(new JcpMintPolicy.Trigger("push", CanonicalJson.parse("{}"))),
                    9_000_000)
                .toCore(),
            issuer)
        .toJsonLine();
  }

  @Test
  void theRateWindowSlidesWithTheClockAndSurvivesReopeningTheStore() {
    String addr;
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      addr = sg.addPolicy(policy(5, 1000, 2), PARENT).address();
      sg.mint(addr, EVENT, "");
      clock.addAndGet(10);
      sg.mint(addr, EVENT, "");
      JcpRefusedException e =
          assertThrows(JcpRefusedException.Exhausted.class, () -> sg.mint(addr, EVENT, ""));
      assertEquals("rate", e.rule());
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, ErrorStatus.of(e).getCode());
    }
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      assertEquals(
          "rate", assertThrows(JcpRefusedException.class, () -> sg.mint(addr, EVENT, "")).rule());
      // The first mint leaves the window 1000 ms after it; the second is still inside.
      clock.addAndGet(991);
      StandingGrants.Minted m = sg.mint(addr, EVENT, "");
      assertEquals(2, m.seq());
      assertEquals(
          "rate", assertThrows(JcpRefusedException.class, () -> sg.mint(addr, EVENT, "")).rule());
      clock.addAndGet(5000);
      sg.mint(addr, EVENT, "");
      sg.mint(addr, EVENT, "");
      assertEquals(
          "max_children",
          assertThrows(JcpRefusedException.class, () -> sg.mint(addr, EVENT, "")).rule());
    }
  }

  @Test
  void aClockSteppedBackNeverDatesAChildBeforeItsPrev() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      String addr = sg.addPolicy(policy(5, 1, 5), PARENT).address();
      JcpChild a = JcpChild.fromCore(sg.mint(addr, EVENT, "").child().core());
      clock.addAndGet(-500);
      JcpChild b = JcpChild.fromCore(sg.mint(addr, EVENT, "").child().core());
      assertTrue(b.mintedMs() >= a.mintedMs());
    }
  }

  @Test
  void registrationChecksHolderIssuerBoundsAndIsIdempotent() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 1);
      String p = policy(5, 1, 5);
      StandingGrants.Added first = sg.addPolicy(p, PARENT);
      assertFalse(first.alreadyHeld());
      assertTrue(sg.addPolicy(p, PARENT).alreadyHeld());
      JcpRefusedException full =
          assertThrows(JcpRefusedException.class, () -> sg.addPolicy(policy(6, 1, 5), PARENT));
      assertEquals("max_policies", full.rule());
      // Another parent than the one the policy names; a malformed parent; a huge rate.
      AdmissionException wrongParent =
          assertThrows(AdmissionException.class, () -> sg.addPolicy(p, CEILING));
      assertTrue(wrongParent.getMessage().contains("$.parent_grants_id"), wrongParent.getMessage());
      assertThrows(AdmissionException.class, () -> sg.addPolicy(p, "{\"host\":1}"));
      StandingGrants roomy = open(store, 10);
      AdmissionException rate =
          assertThrows(
              AdmissionException.class,
              () -> roomy.addPolicy(policy(5, 1, StandingGrants.MAX_RATE + 1), PARENT));
      assertTrue(rate.getMessage().startsWith("policy.rate.max"), rate.getMessage());
      assertInstanceOf(
          JcpRefusedException.NotFound.class,
          assertThrows(RuntimeException.class, () -> sg.mint("ab".repeat(32), EVENT, "")));
      assertThrows(AdmissionException.class, () -> sg.mint("not-hex", EVENT, ""));
    }
  }

  @Test
  void aMintedChildResolvesToItsGrantAndProvenance() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      String addr = sg.addPolicy(policy(5, 1, 5), PARENT).address();
      StandingGrants.Minted m = sg.mint(addr, EVENT, "");
      StandingGrants.Resolved r = sg.resolve("b3:" + m.grantsId());
      assertEquals(addr, r.policy());
      assertEquals(m.child().address(), r.child());
      assertEquals(issuer.publicKey().hex(), r.issuer());
      assertEquals(
          m.grantsId(), Grants.parse(r.grantsJson().getBytes(StandardCharsets.UTF_8)).grantsId());
      assertEquals(1, sg.release(Grants.parse(PARENT.getBytes(StandardCharsets.UTF_8)).grantsId()));
      assertEquals(
          "parent_held",
          assertThrows(JcpRefusedException.class, () -> sg.mint(addr, EVENT, "")).rule());
      assertEquals(
          Status.Code.PERMISSION_DENIED,
          ErrorStatus.of(new JcpRefusedException("x", "y")).getCode());
    }
  }
}
