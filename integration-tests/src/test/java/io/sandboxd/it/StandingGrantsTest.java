package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpChain;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.AddMintPolicyRequest;
import io.sandboxd.daemon.rpc.JcpKeysReply;
import io.sandboxd.daemon.rpc.JcpKeysRequest;
import io.sandboxd.daemon.rpc.MintEventReply;
import io.sandboxd.daemon.rpc.MintEventRequest;
import io.sandboxd.daemon.rpc.SubmitRequest;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15 items 2 and 3 through the running daemon: mint policies registered with `sandboxctl jcp
 * policy add`, children minted on events (`jcp event`) and refused naming each rule of WIRE.md
 * §2.11 / §5 check 25, a minted child run at once (`run --grants b3:<grants_id>`) with the policy
 * and child in its attestation, and mint state that a restart does not reset.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class StandingGrantsTest {
  static final String CEILING =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":5000000,\"cpu_time_ms\":2000,"
          + "\"memory_bytes\":131072},\"host\":{\"logging\":true}}";
  static final String PARENT =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":50000000,\"cpu_time_ms\":10000,"
          + "\"memory_bytes\":1048576},\"host\":{\"logging\":true,\"clock\":true,\"random\":true}}";

  /** Wider than the ceiling (randomness), within the parent. */
  static final String WIDE_CHILD =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":5000000,\"cpu_time_ms\":2000,"
          + "\"memory_bytes\":131072},\"host\":{\"logging\":true,\"random\":true}}";

  /** Wider than the parent (inference). */
  static final String WIDE_CEILING =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":5000000,\"cpu_time_ms\":2000,"
          + "\"memory_bytes\":131072},\"host\":{\"logging\":true,\"inference\":true}}";

  static final String EVENT = "{\"type\":\"push\",\"repo\":\"sandboxd\"}";

  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static SigningKey issuer;
  static String holder;
  static String agent;

  @BeforeAll
  static void start() throws Exception {
    byte[] seed = new byte[32];
    for (int i = 0; i < 32; i++) {
      seed[i] = (byte) (0x10 + i);
    }
    issuer = SigningKey.fromSeed(seed);
    daemon = startDaemon();
    client = new DaemonClient(daemon.socket);
    JcpKeysReply keys = client.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance());
    holder = keys.getHolder();
    agent = keys.getAgent();
  }

  static DaemonProcess startDaemon() throws Exception {
    return DaemonProcess.start(dir.resolve("state"), dir.resolve("run/sandboxd.sock"));
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static Envelope policy(String ceiling, long maxChildren, long windowMs, long max, long notAfter) {
    return signedPolicy(
        issuer,
        holder,
        PARENT,
        ceiling,
        maxChildren,
        windowMs,
        max,
        "{\"repo\":\"sandboxd\"}",
        notAfter,
        null);
  }

  /**
   * {@code issuer}'s policy for {@code holder} over {@code parent}, signed: children of at most
   * {@code ceiling}, minted on push events matching {@code trigger}, used as {@code use} says
   * (null: any).
   */
  static Envelope signedPolicy(
      SigningKey issuer,
      String holder,
      String parent,
      String ceiling,
      long maxChildren,
      long windowMs,
      long max,
      String trigger,
      long notAfter,
      JcpMintPolicy.ChildUse use) {
    JcpMintPolicy p =
        new JcpMintPolicy(
            issuer.publicKey().hex(),
            holder,
            Grants.parse(parent.getBytes(StandardCharsets.UTF_8)).grantsId(),
            CanonicalJson.parse(ceiling),
            maxChildren,
            windowMs,
            max,
            List.of(new JcpMintPolicy.Trigger("push", CanonicalJson.parse(trigger))),
            notAfter,
            use);
    return Envelope.sign(p.toCore(), issuer);
  }

  static final long FAR = 4_000_000_000_000L;

  static String add(Envelope policy) {
    return addPolicy(client, policy, PARENT);
  }

  /** Adds the signed {@code policy} over the parent grant {@code parentJson} on {@code c}. */
  static String addPolicy(DaemonClient c, Envelope policy, String parentJson) {
    return c.jcp()
        .addMintPolicy(
            AddMintPolicyRequest.newBuilder()
                .setPolicy(policy.toJsonLine())
                .setParentJson(parentJson)
                .build())
        .getAddress();
  }

  static MintEventReply mint(String policy, String event, String grants) {
    return client
        .jcp()
        .mintEvent(
            MintEventRequest.newBuilder()
                .setPolicy(policy)
                .setEventJson(event.contains("\"signature\"") ? event : signed(event))
                .setGrantsJson(grants)
                .build());
  }

  static final java.util.concurrent.atomic.AtomicInteger NONCES =
      new java.util.concurrent.atomic.AtomicInteger();

  /** {@code doc} as an authenticated event: issuer-signed, a fresh nonce, ten minutes to live. */
  static String signed(String doc) {
    return signedBy(
        issuer, doc, "it-" + NONCES.incrementAndGet(), System.currentTimeMillis() + 600_000);
  }

  static String signedBy(SigningKey key, String doc, String nonce, long notAfterMs) {
    ObjectNode core = CanonicalJson.mapper().createObjectNode();
    core.put("schema", "jcp.event/1");
    core.set("event", CanonicalJson.parse(doc));
    core.put("nonce", nonce);
    core.put("not_after_ms", notAfterMs);
    return Envelope.sign(core, key).toJsonLine();
  }

  /** The refusal's code, and that its message names {@code rule}. */
  static Status.Code refused(String rule, Runnable call) {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call::run);
    String d = e.getStatus().getDescription();
    assertTrue(d != null && d.startsWith("rule " + rule + ":"), rule + " <- " + d);
    return e.getStatus().getCode();
  }

  static DaemonProcess.Result ctl(String... args) throws Exception {
    return daemon.ctl(args);
  }

  static Path write(String name, String text) throws Exception {
    Path f = dir.resolve(name);
    Files.writeString(f, text, StandardCharsets.UTF_8);
    return f;
  }

  @Test
  @Order(1)
  void theKeysAreThreeDistinctPrincipalsAndTheHolderKeyFileIsPrivate() throws Exception {
    Path keys = dir.resolve("state/keys");
    assertFalse(holder.equals(agent));
    for (String f : List.of("holder.ed25519", "agent.ed25519", "node.ed25519")) {
      assertEquals(
          "rw-------",
          java.nio.file.attribute.PosixFilePermissions.toString(
              Files.getPosixFilePermissions(keys.resolve(f))),
          f);
    }
    DaemonProcess.Result r = ctl("jcp", "keys");
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("holder " + holder) && r.out().contains("agent " + agent), r.out());
  }

  @Test
  @Order(2)
  void aMintedChildRunsAtOnceAndItsAttestationNamesPolicyAndChild() throws Exception {
    Envelope p = policy(CEILING, 10, 60_000, 10, FAR);
    Path pf = write("policy.json", p.toJsonLine());
    Path parent = write("parent.json", PARENT);
    DaemonProcess.Result added =
        ctl("jcp", "policy", "add", pf.toString(), "--parent", parent.toString());
    assertEquals(0, added.exit(), added.err());
    assertEquals(p.address(), added.out().strip());

    DaemonProcess.Result minted =
        ctl("jcp", "event", p.address(), write("event.json", signed(EVENT)).toString());
    assertEquals(0, minted.exit(), minted.err());
    String grantsId = minted.out().strip();
    assertEquals(Grants.parse(CEILING.getBytes(StandardCharsets.UTF_8)).grantsId(), grantsId);

    Path hello = DaemonProcess.ROOT.resolve("examples/hello.wasm");
    DaemonProcess.Result run = ctl("run", hello.toString(), "--grants", "b3:" + grantsId, "--json");
    assertEquals(0, run.exit(), run.err());
    JsonNode out = CanonicalJson.parse(run.out().strip());
    Envelope att = Envelope.fromJson(out.get("attestation"));
    Attestation a = Attestation.fromCore(att.core());
    assertEquals(grantsId, a.grantsId());
    assertEquals(p.address(), a.jcp().policy());
    JcpChild child =
        JcpChild.fromCore(CanonicalJson.parse(mint(p.address(), EVENT, "").getChild()).get("core"));
    // The run names the latest child with that grants_id: the one just minted (seq 1).
    assertEquals(1, child.seq());

    // A grants_id nothing minted is NOT_FOUND; a minted child cannot be given twice over.
    StatusRuntimeException nf =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                client
                    .stub()
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .submit(
                        SubmitRequest.newBuilder()
                            .setModule(
                                com.google.protobuf.ByteString.copyFrom(Files.readAllBytes(hello)))
                            .setMintedGrants("b3:" + "ab".repeat(32))
                            .build()));
    assertEquals(Status.Code.NOT_FOUND, nf.getStatus().getCode());
  }

  @Test
  @Order(3)
  void aChildWiderThanTheCeilingIsRefusedAndNothingIsMinted() throws Exception {
    Envelope p = policy(CEILING, 11, 60_000, 10, FAR);
    String addr = add(p);
    DaemonProcess.Result r =
        ctl(
            "jcp",
            "event",
            addr,
            write("event.json", signed(EVENT)).toString(),
            "--grants",
            write("wide.json", WIDE_CHILD).toString());
    assertEquals(1, r.exit(), r.err());
    assertTrue(
        r.err().contains("rule child_within_ceiling") && r.err().contains("$.host.random"),
        r.err());
    // Nothing changed: the next good mint is this policy's first child.
    JcpChild c =
        JcpChild.fromCore(CanonicalJson.parse(mint(addr, EVENT, "").getChild()).get("core"));
    assertEquals(0, c.seq());
    assertEquals(null, c.prev());
  }

  @Test
  @Order(4)
  void aCeilingWiderThanTheParentIsRefusedAtRegistration() {
    assertEquals(
        Status.Code.PERMISSION_DENIED,
        refused("ceiling_within_parent", () -> add(policy(WIDE_CEILING, 10, 60_000, 10, FAR))));
  }

  @Test
  @Order(5)
  void theMaxPlusFirstMintInTheWindowIsRefused() {
    String addr = add(policy(CEILING, 100, 600_000, 2, FAR));
    mint(addr, EVENT, "");
    mint(addr, EVENT, "");
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused("rate", () -> mint(addr, EVENT, "")));
  }

  @Test
  @Order(6)
  void aMintBeyondMaxChildrenIsRefused() {
    String addr = add(policy(CEILING, 3, 1, 100, FAR));
    for (int i = 0; i < 3; i++) {
      mint(addr, EVENT, "");
    }
    assertEquals(
        Status.Code.RESOURCE_EXHAUSTED, refused("max_children", () -> mint(addr, EVENT, "")));
  }

  @Test
  @Order(7)
  void anExpiredPolicyAnEventMatchingNoTriggerAndAReleasedParentAreRefused() throws Exception {
    String expired = add(policy(CEILING, 10, 1, 10, 1));
    refused("not_after_ms", () -> mint(expired, EVENT, ""));
    String addr = add(policy(CEILING, 10, 1, 10, FAR - 1));
    refused("trigger", () -> mint(addr, "{\"type\":\"push\",\"repo\":\"other\"}", ""));
    refused("trigger", () -> mint(addr, "{\"type\":\"tag\",\"repo\":\"sandboxd\"}", ""));
    // Malformed events and grants are INVALID_ARGUMENT naming the field, not a rule.
    StatusRuntimeException bad =
        assertThrows(StatusRuntimeException.class, () -> mint(addr, "{\"repo\":1}", ""));
    assertEquals(Status.Code.INVALID_ARGUMENT, bad.getStatus().getCode());
    assertTrue(
        bad.getStatus().getDescription().contains("event.type"), bad.getStatus().getDescription());
    StatusRuntimeException badGrants =
        assertThrows(StatusRuntimeException.class, () -> mint(addr, EVENT, "{\"host\":{\"x\":1}}"));
    assertEquals(Status.Code.INVALID_ARGUMENT, badGrants.getStatus().getCode());
    assertTrue(badGrants.getStatus().getDescription().contains("$.host.x"));
    // A policy for another holder, or signed by someone other than its issuer: INVALID_ARGUMENT.
    Envelope p = policy(CEILING, 10, 1, 10, FAR - 2);
    ObjectNode core = (ObjectNode) p.core().deepCopy();
    core.put("holder", issuer.publicKey().hex());
    StatusRuntimeException otherHolder =
        assertThrows(StatusRuntimeException.class, () -> add(Envelope.sign(core, issuer)));
    assertTrue(otherHolder.getStatus().getDescription().startsWith("policy.holder"));
    StatusRuntimeException forged =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                add(
                    new Envelope(
                        p.core(),
                        p.address(),
                        p.signature().replace('a', 'b').replace('0', '1'),
                        p.publicKey())));
    assertEquals(Status.Code.INVALID_ARGUMENT, forged.getStatus().getCode());

    mint(addr, EVENT, "");
    DaemonProcess.Result rel =
        ctl("jcp", "release", Grants.parse(PARENT.getBytes(StandardCharsets.UTF_8)).grantsId());
    assertEquals(0, rel.exit(), rel.err());
    refused("parent_held", () -> mint(addr, EVENT, ""));
  }

  @Test
  @Order(8)
  void mintStateSurvivesARestartAndTheChildChainVerifies() throws Exception {
    // The parent was released above: a fresh parent for this test (another budget, another id).
    String parent2 = PARENT.replace("10000,", "10001,");
    Envelope rateP = policyOver(parent2, 100, 600_000, 2);
    Envelope countP = policyOver(parent2, 2, 1, 100);
    String rate = addOver(rateP, parent2);
    String count = addOver(countP, parent2);
    Envelope c0 = Envelope.fromJson(CanonicalJson.parse(mint(count, EVENT, "").getChild()));
    mint(rate, EVENT, "");
    mint(rate, EVENT, "");
    refused("rate", () -> mint(rate, EVENT, ""));

    client.close();
    daemon.stop();
    daemon = startDaemon();
    client = new DaemonClient(daemon.socket);

    // The window was not reset by the restart, nor the count; the chain continues from seq 1.
    refused("rate", () -> mint(rate, EVENT, ""));
    Envelope c1 = Envelope.fromJson(CanonicalJson.parse(mint(count, EVENT, "").getChild()));
    assertEquals(c0.address(), JcpChild.fromCore(c1.core()).prev());
    refused("max_children", () -> mint(count, EVENT, ""));
    assertEquals(
        new JcpChain.Verdict.Valid(2, c1.address()), JcpChain.children(countP, List.of(c0, c1)));
    assertEquals(holder, c1.publicKey());
  }

  static Envelope policyOver(String parent, long maxChildren, long windowMs, long max) {
    return signedPolicy(
        issuer, holder, parent, CEILING, maxChildren, windowMs, max, "{}", FAR, null);
  }

  static String addOver(Envelope policy, String parent) {
    return addPolicy(client, policy, parent);
  }

  /**
   * Mints per second through the daemon (gRPC, one client, sequential), against the same number of
   * JcpKeys calls (a no-op round trip) in the same run: printed, not asserted.
   */
  @Test
  @Order(9)
  void mintsPerSecondThroughTheDaemon() {
    String parent3 = PARENT.replace("10000,", "10002,");
    String addr = addOver(policyOver(parent3, 1_000_000, 1, 65536), parent3);
    int n = Integer.getInteger("sandboxd.jcp.mints", 300);
    for (int i = 0; i < 30; i++) {
      mint(addr, EVENT, "");
      client.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance());
    }
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      client.jcp().jcpKeys(JcpKeysRequest.getDefaultInstance());
    }
    long keysNs = System.nanoTime() - t0;
    t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      mint(addr, EVENT, "");
    }
    long mintNs = System.nanoTime() - t0;
    double mintsPerS = n * 1e9 / mintNs;
    double rpcPerS = n * 1e9 / keysNs;
    System.out.printf(
        "JCP mints through the daemon: %.0f mints/s (%d mints), no-op JcpKeys baseline %.0f calls/s;"
            + " ratio %.2f%n",
        mintsPerS, n, rpcPerS, mintsPerS / rpcPerS);
    assertTrue(mintNs > 0);
  }

  static Envelope policyWithUse(String parent, long ttlMs, long maxUses) {
    return signedPolicy(
        issuer,
        holder,
        parent,
        CEILING,
        100,
        1,
        100,
        "{}",
        FAR,
        new JcpMintPolicy.ChildUse(ttlMs, maxUses));
  }

  /** Runs hello.wasm under the minted child, through the CLI. */
  static DaemonProcess.Result runUnder(String grantsId) throws Exception {
    Path hello = DaemonProcess.ROOT.resolve("examples/hello.wasm");
    return ctl("run", hello.toString(), "--grants", "b3:" + grantsId);
  }

  /** A run under the minted child is refused (exit 2) naming {@code rule}. */
  static void assertRunRefused(String grantsId, String rule) throws Exception {
    DaemonProcess.Result r = runUnder(grantsId);
    assertEquals(2, r.exit(), r.out());
    assertTrue(r.err().contains("rule " + rule + ":"), r.err());
  }

  @Test
  @Order(10)
  void aReplayedOrUnauthenticatedEventMintsNothing() throws Exception {
    String parent4 = PARENT.replace("10000,", "10003,");
    String addr = addOver(policyOver(parent4, 100, 1, 100), parent4);
    String once = signed(EVENT);
    Envelope first = Envelope.fromJson(CanonicalJson.parse(mint(addr, once, "").getChild()));
    // The identical event again, also through the CLI: refused naming the nonce, nothing minted.
    StatusRuntimeException replay =
        assertThrows(StatusRuntimeException.class, () -> mint(addr, once, ""));
    assertEquals(Status.Code.PERMISSION_DENIED, replay.getStatus().getCode());
    assertTrue(
        replay.getStatus().getDescription().startsWith("rule event_nonce:")
            && replay.getStatus().getDescription().contains("it-"),
        replay.getStatus().getDescription());
    DaemonProcess.Result cli = ctl("jcp", "event", addr, write("replay.json", once).toString());
    assertEquals(1, cli.exit(), cli.out());
    assertTrue(cli.err().contains("rule event_nonce:"), cli.err());
    // A key that is neither the issuer nor a configured event source; an expired event; a bare one.
    SigningKey stranger = SigningKey.generate();
    StatusRuntimeException bySigner =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                mint(
                    addr,
                    signedBy(stranger, EVENT, "s-1", System.currentTimeMillis() + 60_000),
                    ""));
    assertTrue(
        bySigner.getStatus().getDescription().startsWith("rule event_signer:")
            && bySigner.getStatus().getDescription().contains(stranger.publicKey().hex()),
        bySigner.getStatus().getDescription());
    refused(
        "event_not_after_ms",
        () -> mint(addr, signedBy(issuer, EVENT, "x-1", System.currentTimeMillis() - 1), ""));
    StatusRuntimeException bare =
        assertThrows(
            StatusRuntimeException.class,
            () ->
                client
                    .jcp()
                    .mintEvent(
                        MintEventRequest.newBuilder().setPolicy(addr).setEventJson(EVENT).build()));
    assertEquals(Status.Code.INVALID_ARGUMENT, bare.getStatus().getCode());
    // Exactly one child was minted: the next is seq 1 after the first.
    Envelope next = Envelope.fromJson(CanonicalJson.parse(mint(addr, EVENT, "").getChild()));
    assertEquals(1, JcpChild.fromCore(next.core()).seq());
    assertEquals(first.address(), JcpChild.fromCore(next.core()).prev());
  }

  @Test
  @Order(11)
  void aChildIsRefusedOnceUsedUpExpiredOrReleased() throws Exception {
    String parent5 = PARENT.replace("10000,", "10004,");
    // One run per child: the second is refused naming child_use.max_uses.
    String once = addOver(policyWithUse(parent5, 600_000, 1), parent5);
    String g1 = mint(once, EVENT, "").getGrantsId();
    DaemonProcess.Result ok = runUnder(g1);
    assertEquals(0, ok.exit(), ok.err());
    assertRunRefused(g1, "child_use.max_uses");
    // A child living 1 ms: used after that, refused naming child_use.ttl_ms.
    String parent6 = PARENT.replace("10000,", "10005,");
    String brief = addOver(policyWithUse(parent6, 1, 10), parent6);
    String g2 = mint(brief, EVENT, "").getGrantsId();
    Thread.sleep(20);
    assertRunRefused(g2, "child_use.ttl_ms");
    // `jcp release` of the child itself, then of a parent: each refuses the next run.
    String parent7 = PARENT.replace("10000,", "10006,");
    String roomy = addOver(policyWithUse(parent7, 600_000, 10), parent7);
    String g3 = mint(roomy, EVENT, "").getGrantsId();
    assertEquals(0, runUnder(g3).exit());
    DaemonProcess.Result rel = ctl("jcp", "release", g3);
    assertEquals(0, rel.exit(), rel.err());
    assertRunRefused(g3, "released");
    String g4 = mint(roomy, EVENT, CEILING.replace("2000,", "1999,")).getGrantsId();
    assertEquals(
        0,
        ctl("jcp", "release", Grants.parse(parent7.getBytes(StandardCharsets.UTF_8)).grantsId())
            .exit());
    assertRunRefused(g4, "parent_held");
  }
}
