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
import io.sandboxd.attest.JcpEvent;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.JcpSignedEvent;
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

  final java.util.concurrent.atomic.AtomicInteger nonces =
      new java.util.concurrent.atomic.AtomicInteger();

  /** A fresh issuer-signed event (a new nonce each time), valid for a minute. */
  String event() {
    return event(issuer, "n" + nonces.incrementAndGet(), clock.get() + 60_000);
  }

  static String event(SigningKey signer, String nonce, long notAfterMs) {
    return Envelope.sign(
            new JcpSignedEvent(new JcpEvent(CanonicalJson.parse(EVENT)), nonce, notAfterMs)
                .toCore(),
            signer)
        .toJsonLine();
  }

  StandingGrants open(RunStore store, long maxPolicies) {
    return new StandingGrants(new JcpTable(store), holder, agent, maxPolicies, clock::get);
  }

  String policy(long maxChildren, long windowMs, long max) {
    return policy(maxChildren, windowMs, max, null);
  }

  /** The issuer's policy over PARENT with CEILING on push events; {@code use} null: no use cap. */
  String policy(long maxChildren, long windowMs, long max, JcpMintPolicy.ChildUse use) {
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
                    9_000_000,
                    use)
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
      sg.mint(addr, event(), "");
      clock.addAndGet(10);
      sg.mint(addr, event(), "");
      JcpRefusedException e =
          assertThrows(JcpRefusedException.Exhausted.class, () -> sg.mint(addr, event(), ""));
      assertEquals("rate", e.rule());
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, ErrorStatus.of(e).getCode());
    }
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      assertEquals(
          "rate", assertThrows(JcpRefusedException.class, () -> sg.mint(addr, event(), "")).rule());
      // The first mint leaves the window 1000 ms after it; the second is still inside.
      clock.addAndGet(991);
      StandingGrants.Minted m = sg.mint(addr, event(), "");
      assertEquals(2, m.seq());
      assertEquals(
          "rate", assertThrows(JcpRefusedException.class, () -> sg.mint(addr, event(), "")).rule());
      clock.addAndGet(5000);
      sg.mint(addr, event(), "");
      sg.mint(addr, event(), "");
      assertEquals(
          "max_children",
          assertThrows(JcpRefusedException.class, () -> sg.mint(addr, event(), "")).rule());
    }
  }

  @Test
  void aClockSteppedBackNeverDatesAChildBeforeItsPrev() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      String addr = sg.addPolicy(policy(5, 1, 5), PARENT).address();
      JcpChild a = JcpChild.fromCore(sg.mint(addr, event(), "").child().core());
      clock.addAndGet(-500);
      JcpChild b = JcpChild.fromCore(sg.mint(addr, event(), "").child().core());
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
          assertThrows(RuntimeException.class, () -> sg.mint("ab".repeat(32), event(), "")));
      assertThrows(AdmissionException.class, () -> sg.mint("not-hex", event(), ""));
    }
  }

  @Test
  void aMintedChildResolvesToItsGrantAndProvenance() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      String addr = sg.addPolicy(policy(5, 1, 5), PARENT).address();
      StandingGrants.Minted m = sg.mint(addr, event(), "");
      StandingGrants.Resolved r = sg.resolve("b3:" + m.grantsId());
      assertEquals(addr, r.policy());
      assertEquals(m.child().address(), r.child());
      assertEquals(issuer.publicKey().hex(), r.issuer());
      assertEquals(
          m.grantsId(), Grants.parse(r.grantsJson().getBytes(StandardCharsets.UTF_8)).grantsId());
      assertEquals(1, sg.release(Grants.parse(PARENT.getBytes(StandardCharsets.UTF_8)).grantsId()));
      assertEquals(
          "parent_held",
          assertThrows(JcpRefusedException.class, () -> sg.mint(addr, event(), "")).rule());
      assertEquals(
          Status.Code.PERMISSION_DENIED,
          ErrorStatus.of(new JcpRefusedException("x", "y")).getCode());
    }
  }

  String policyWithUse(long ttlMs, long maxUses) {
    return policy(50, 1, 50, new JcpMintPolicy.ChildUse(ttlMs, maxUses));
  }

  static String rule(Runnable call) {
    return assertThrows(JcpRefusedException.class, call::run).rule();
  }

  @Test
  void aReplayedEventMintsNothingAlsoAfterReopeningTheStore() {
    String addr;
    String once = event(issuer, "nonce-1", clock.get() + 60_000);
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      addr = sg.addPolicy(policy(5, 1, 5), PARENT).address();
      StandingGrants.Minted m = sg.mint(addr, once, "");
      // The child names the signed event, nonce and all.
      assertEquals(
          Envelope.fromJson(CanonicalJson.parse(once)).address(),
          JcpChild.fromCore(m.child().core()).event());
      clock.addAndGet(10);
      JcpRefusedException replay =
          assertThrows(JcpRefusedException.class, () -> sg.mint(addr, once, ""));
      assertEquals("event_nonce", replay.rule());
      assertTrue(replay.getMessage().contains("nonce-1"), replay.getMessage());
    }
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      assertEquals("event_nonce", rule(() -> sg.mint(addr, once, "")));
      assertEquals(1, new JcpTable(store).history(addr, 5).minted(), "one child in all");
    }
  }

  @Test
  void anEventIsRefusedUnlessSignedByTheIssuerOrAnEventSourceUnexpiredAndSigned() {
    SigningKey source = SigningKey.generate();
    SigningKey stranger = SigningKey.generate();
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg =
          new StandingGrants(
              new JcpTable(store),
              holder,
              agent,
              10,
              clock::get,
              List.of(source.publicKey().hex()));
      String addr = sg.addPolicy(policy(10, 1, 10), PARENT).address();
      JcpRefusedException bySigner =
          assertThrows(
              JcpRefusedException.class,
              () -> sg.mint(addr, event(stranger, "a", clock.get() + 1000), ""));
      assertEquals("event_signer", bySigner.rule());
      assertTrue(bySigner.getMessage().contains(stranger.publicKey().hex()), bySigner.getMessage());
      sg.mint(addr, event(source, "a", clock.get() + 1000), "");
      // The same nonce from another signer is another event.
      sg.mint(addr, event(issuer, "a", clock.get() + 1000), "");
      assertEquals(
          "event_not_after_ms", rule(() -> sg.mint(addr, event(issuer, "b", clock.get() - 1), "")));
      assertEquals(
          "event_not_after_ms",
          rule(
              () ->
                  sg.mint(
                      addr,
                      event(issuer, "c", clock.get() + StandingGrants.MAX_EVENT_TTL_MS + 1),
                      "")));
      AdmissionException bare =
          assertThrows(AdmissionException.class, () -> sg.mint(addr, EVENT, ""));
      assertTrue(bare.getMessage().contains("jcp.event/1"), bare.getMessage());
      // Signed, then edited: the address no longer holds.
      String edited = event(issuer, "d", clock.get() + 1000).replace("\"d\"", "\"e\"");
      assertThrows(AdmissionException.class, () -> sg.mint(addr, edited, ""));
    }
  }

  @Test
  void aChildIsCheckedAtEachUseForExpiryReleaseAndItsUseCount() {
    try (RunStore store = RunStore.open(tmp.resolve("runs.db"), node)) {
      StandingGrants sg = open(store, 10);
      String addr = sg.addPolicy(policyWithUse(1000, 2), PARENT).address();
      StandingGrants.Minted m = sg.mint(addr, event(), "");
      String ref = "b3:" + m.grantsId();
      sg.use(ref);
      sg.use(ref);
      JcpRefusedException used = assertThrows(JcpRefusedException.class, () -> sg.use(ref));
      assertEquals("child_use.max_uses", used.rule());
      assertEquals(Status.Code.PERMISSION_DENIED, ErrorStatus.of(used).getCode());
      // resolve (provenance for records) is no use and is never refused.
      assertEquals(m.child().address(), sg.resolve(ref).child());

      clock.addAndGet(10);
      StandingGrants.Minted fresh = sg.mint(addr, event(), CEILING.replace("500", "400"));
      String ref2 = "b3:" + fresh.grantsId();
      clock.addAndGet(1001);
      assertEquals("child_use.ttl_ms", rule(() -> sg.use(ref2)));

      StandingGrants.Minted third = sg.mint(addr, event(), CEILING.replace("500", "300"));
      String ref3 = "b3:" + third.grantsId();
      sg.use(ref3);
      assertEquals(1, sg.release(third.grantsId()), "releasing a child by its grants_id");
      assertEquals("released", rule(() -> sg.use(ref3)));

      StandingGrants.Minted fourth = sg.mint(addr, event(), CEILING.replace("500", "200"));
      sg.release(Grants.parse(PARENT.getBytes(StandardCharsets.UTF_8)).grantsId());
      assertEquals("parent_held", rule(() -> sg.use("b3:" + fourth.grantsId())));
    }
  }
}
