package io.sandboxd.enforcer;

import static io.sandboxd.enforcer.JcpFixtures.AGENT;
import static io.sandboxd.enforcer.JcpFixtures.HOLDER;
import static io.sandboxd.enforcer.JcpFixtures.ISSUER;
import static io.sandboxd.enforcer.JcpFixtures.STRANGER;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.JcpAmendment;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpEvent;
import io.sandboxd.attest.SeededKeys;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The tool that makes vectors/standing/standing.json (WIRE.md §2.11): fixed keys, grants, a signed
 * mint policy, a chain of minted children, a checkpoint chain and amendments (canonical core bytes,
 * addresses, signatures), and the expected verdict of every mint and amendment refusal rule. {@code
 * StandingVectorsTest} regenerates and compares byte for byte, and checks each vector on its own;
 * run {@code main} (or that test with {@code -Dsandboxd.vectors.write=true}) to rewrite it.
 */
public final class StandingVectors {
  private StandingVectors() {}

  /** Mint time of the first child; later ones follow at the rate the policy allows. */
  static final long T0 = 1_700_000_000_000L;

  static final String RUN_ID = "run-standing-1";

  /** The grants the vectors name, by name. */
  static Map<String, String> grants() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("parent", JcpFixtures.PARENT_JSON);
    m.put("ceiling", JcpFixtures.CEILING_JSON);
    m.put("child", JcpFixtures.CHILD_JSON);
    m.put("wide_child", JcpFixtures.WIDE_CHILD_JSON);
    m.put("wide_ceiling", JcpFixtures.WIDE_CEILING_JSON);
    return m;
  }

  static Envelope policy() {
    return Envelope.sign(JcpFixtures.policy().toCore(), ISSUER);
  }

  static Envelope widePolicy() {
    return Envelope.sign(JcpFixtures.policy(JcpFixtures.WIDE_CEILING_JSON).toCore(), ISSUER);
  }

  /** The children minted under {@link #policy()}: max_children of them, at T0, T0+1, T0+1000. */
  static List<Envelope> children() {
    Envelope pe = policy();
    StandingGrant sg = StandingGrant.of(JcpFixtures.policy(), JcpFixtures.PARENT);
    List<Envelope> out = new ArrayList<>();
    List<Long> times = new ArrayList<>();
    long[] at = {T0, T0 + 1, T0 + 1000};
    String prev = null;
    for (long now : at) {
      JcpEvent ev = event(out.size());
      StandingGrant.Verdict v =
          sg.decide(
              ev.doc(),
              JcpFixtures.CHILD,
              new StandingGrant.MintState(out.size(), times),
              true,
              now);
      StandingGrant.Mint m = (StandingGrant.Mint) v;
      JcpChild c =
          new JcpChild(
              pe.address(),
              m.seq(),
              prev,
              ev.address(),
              m.grants().canonicalTree(),
              m.grants().grantsId(),
              now);
      Envelope e = Envelope.sign(c.toCore(), HOLDER);
      out.add(e);
      times.add(now);
      prev = e.address();
    }
    return out;
  }

  static JcpEvent event(int n) {
    return JcpEvent.parse(
        ("{\"type\":\"push\",\"repo\":\"sandboxd\",\"n\":" + n + "}")
            .getBytes(StandardCharsets.UTF_8));
  }

  /** One mint case: the inputs of {@link StandingGrant#decide} and its verdict. */
  record MintCase(
      String name,
      boolean widePolicy,
      String event,
      String child,
      long minted,
      List<Long> recentMintsMs,
      boolean parentHeld,
      long nowMs) {}

  /** A case with nothing minted yet, the parent held, decided at {@code T0}. */
  private static MintCase fresh(String name, boolean widePolicy, String event, String child) {
    return new MintCase(name, widePolicy, event, child, 0, List.of(), true, T0);
  }

  static List<MintCase> mintCases() {
    String ev = JcpFixtures.EVENT_JSON;
    List<MintCase> c = new ArrayList<>();
    c.add(fresh("mint", false, ev, "child"));
    c.add(fresh("mint-ceiling-itself", false, ev, "ceiling"));
    c.add(fresh("child-wider-than-ceiling", false, ev, "wide_child"));
    c.add(fresh("ceiling-wider-than-parent", true, ev, "child"));
    c.add(
        new MintCase(
            "beyond-max-children",
            false,
            ev,
            "child",
            3,
            List.of(T0 - 5000, T0 - 4000, T0 - 3000),
            true,
            T0));
    c.add(
        new MintCase(
            "rate-window-full", false, ev, "child", 2, List.of(T0 - 999, T0 - 1), true, T0));
    c.add(
        new MintCase(
            "rate-window-slid", false, ev, "child", 2, List.of(T0 - 1000, T0 - 1), true, T0));
    c.add(fresh("no-matching-trigger", false, JcpFixtures.OTHER_EVENT_JSON, "child"));
    c.add(fresh("other-event-type", false, "{\"type\":\"pull\",\"repo\":\"sandboxd\"}", "child"));
    c.add(
        new MintCase(
            "expired", false, ev, "child", 0, List.of(), true, JcpFixtures.NOT_AFTER_MS + 1));
    c.add(
        new MintCase(
            "at-expiry", false, ev, "child", 0, List.of(), true, JcpFixtures.NOT_AFTER_MS));
    c.add(new MintCase("parent-not-held", false, ev, "child", 0, List.of(), false, T0));
    return c;
  }

  /** Runs a mint case; returns "mint" or the refusal's rule, and the widening path if any. */
  static String[] verdict(MintCase c) {
    StandingGrant sg =
        StandingGrant.of(
            c.widePolicy()
                ? JcpFixtures.policy(JcpFixtures.WIDE_CEILING_JSON)
                : JcpFixtures.policy(),
            JcpFixtures.PARENT);
    StandingGrant.Verdict v =
        sg.decide(
            JcpEvent.parse(c.event().getBytes(StandardCharsets.UTF_8)).doc(),
            JcpFixtures.grants(grants().get(c.child())),
            new StandingGrant.MintState(c.minted(), c.recentMintsMs()),
            c.parentHeld(),
            c.nowMs());
    if (v instanceof StandingGrant.Mint) {
      return new String[] {"mint", null};
    }
    MintRule r = ((StandingGrant.Refused) v).rule();
    String path =
        r instanceof MintRule.ChildWiderThanCeiling w
            ? w.wider().path()
            : r instanceof MintRule.CeilingWiderThanParent p ? p.wider().path() : null;
    return new String[] {r.rule(), path};
  }

  static List<Envelope> checkpoints() {
    return JcpFixtures.checkpoints(RUN_ID, 2, JcpFixtures.CEILING.grantsId());
  }

  /** One amendment case: who signs, whom the core names, what it targets, what was applied. */
  record AmendCase(
      String name,
      SigningKey signer,
      SigningKey namedIssuer,
      String checkpoint,
      String newGrants,
      String inForce,
      boolean replay) {}

  static List<AmendCase> amendCases() {
    String cp = checkpoints().get(1).address();
    String cp0 = checkpoints().get(0).address();
    String foreign =
        JcpFixtures.checkpoints("run-other", 1, JcpFixtures.CEILING.grantsId()).get(0).address();
    List<AmendCase> c = new ArrayList<>();
    c.add(new AmendCase("issuer-tightens", ISSUER, ISSUER, cp, "child", "ceiling", false));
    c.add(
        new AmendCase(
            "issuer-tightens-at-checkpoint-0", ISSUER, ISSUER, cp0, "child", "ceiling", false));
    c.add(new AmendCase("signed-by-agent", AGENT, AGENT, cp, "child", "ceiling", false));
    c.add(
        new AmendCase(
            "signed-by-agent-naming-issuer", AGENT, ISSUER, cp, "child", "ceiling", false));
    c.add(new AmendCase("signed-by-stranger", STRANGER, STRANGER, cp, "child", "ceiling", false));
    c.add(new AmendCase("issuer-widens", ISSUER, ISSUER, cp, "parent", "ceiling", false));
    c.add(
        new AmendCase(
            "widens-an-earlier-amendment", ISSUER, ISSUER, cp, "ceiling", "child", false));
    c.add(
        new AmendCase(
            "checkpoint-not-in-chain", ISSUER, ISSUER, foreign, "child", "ceiling", false));
    c.add(new AmendCase("replayed", ISSUER, ISSUER, cp, "child", "child", true));
    return c;
  }

  static Envelope amendment(AmendCase c) {
    Grants g = JcpFixtures.grants(grants().get(c.newGrants()));
    return Envelope.sign(
        new JcpAmendment(
                c.checkpoint(),
                c.namedIssuer().publicKey().hex(),
                g.canonicalTree(),
                g.grantsId(),
                c.name())
            .toCore(),
        c.signer());
  }

  static String amendVerdict(AmendCase c, Envelope e) {
    Map<String, Grants> byId = new LinkedHashMap<>();
    byId.put(JcpFixtures.CEILING.grantsId(), JcpFixtures.CEILING);
    Amendments.RunState run =
        new Amendments.RunState(
            ISSUER.publicKey().hex(),
            checkpoints(),
            byId,
            JcpFixtures.grants(grants().get(c.inForce())),
            c.replay() ? Set.of(e.address()) : Set.of());
    Amendments.Verdict v = Amendments.decide(e, run);
    return v instanceof Amendments.Accepted ? "accepted" : ((Amendments.Refused) v).rule().rule();
  }

  /** Writes {@code e} into {@code into}: canonical core text, address, signature, public key. */
  static ObjectNode envelopeJson(ObjectNode into, Envelope e) {
    into.put("core", CanonicalJson.canonicalString(e.core()));
    into.put("address", e.address());
    into.put("signature", e.signature());
    into.put("public_key", e.publicKey());
    return into;
  }

  /** The hex of the seed {@link JcpFixtures#key} counts from {@code first}. */
  static String seedHex(int first) {
    return Hex.encode(SeededKeys.countingSeed(first));
  }

  /** The vectors file's text. */
  public static String generate() {
    ObjectNode root = CanonicalJson.mapper().createObjectNode();
    root.put(
        "description",
        "JCP standing grants and amendments (WIRE.md 2.11): fixed Ed25519 keys (seed byte i = first"
            + " + i), grants with their canonical bytes and grants_id, a jcp.mint-policy/1 signed by"
            + " the issuer, the jcp.child/1 chain the holder mints under it, a jcp.checkpoint/1 chain"
            + " signed by the agent, jcp.amendment/1 records, and the expected verdict of every mint"
            + " and amendment rule; a run's segment chain with its JCP records in variants and the"
            + " verdict of the offline amendment check (amendment_chain), and uses of a child whose"
            + " policy bounds them (child_uses). Cores are canonical JSON text. Generated by"
            + " enforcer/src/test/java/io/sandboxd/enforcer/StandingVectors.java.");
    ObjectNode keys = root.putObject("keys");
    Object[][] ks = {
      {"issuer", 0x10, ISSUER},
      {"holder", 0x20, HOLDER},
      {"agent", 0x30, AGENT},
      {"stranger", 0x40, STRANGER}
    };
    for (Object[] k : ks) {
      keys.putObject((String) k[0])
          .put("seed", seedHex((Integer) k[1]))
          .put("public_key", ((SigningKey) k[2]).publicKey().hex());
    }
    ObjectNode gs = root.putObject("grants");
    for (Map.Entry<String, String> e : grants().entrySet()) {
      Grants g = JcpFixtures.grants(e.getValue());
      gs.putObject(e.getKey())
          .put("input", e.getValue())
          .put("canonical", new String(g.canonicalBytes(), StandardCharsets.UTF_8))
          .put("grants_id", g.grantsId());
    }
    envelopeJson(root.putObject("policy"), policy());
    envelopeJson(root.putObject("wide_ceiling_policy"), widePolicy());
    ArrayNode children = root.putArray("children");
    List<Envelope> ch = children();
    for (int i = 0; i < ch.size(); i++) {
      JcpEvent ev = event(i);
      envelopeJson(children.addObject(), ch.get(i))
          .put("event", CanonicalJson.canonicalString(ev.doc()));
    }
    ArrayNode mints = root.putArray("mints");
    for (MintCase c : mintCases()) {
      String[] v = verdict(c);
      ObjectNode o = mints.addObject();
      o.put("name", c.name());
      o.put("policy", c.widePolicy() ? "wide_ceiling_policy" : "policy");
      o.put("event", c.event());
      o.put("child", c.child());
      o.put("minted", c.minted());
      ArrayNode r = o.putArray("recent_mints_ms");
      c.recentMintsMs().forEach(r::add);
      o.put("parent_held", c.parentHeld());
      o.put("now_ms", c.nowMs());
      o.put("expected", v[0]);
      if (v[1] != null) {
        o.put("wider_path", v[1]);
      }
    }
    ArrayNode cps = root.putArray("checkpoints");
    checkpoints().forEach(e -> envelopeJson(cps.addObject(), e));
    ObjectNode run = root.putObject("amendment_run");
    run.put("issuer", "issuer");
    run.put("checkpoints", "checkpoints");
    run.put("grants_at_checkpoints", "ceiling");
    ArrayNode ams = root.putArray("amendments");
    for (AmendCase c : amendCases()) {
      Envelope e = amendment(c);
      ObjectNode o = ams.addObject();
      o.put("name", c.name());
      envelopeJson(o, e);
      o.put("in_force", c.inForce());
      o.put("already_applied", c.replay());
      o.put("expected", amendVerdict(c, e));
    }
    AmendmentChainVectors.addTo(root);
    try {
      return CanonicalJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(root)
          + "\n";
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes the vectors file to {@code args[0]}. */
  public static void main(String[] args) throws IOException {
    Path out = Path.of(args.length > 0 ? args[0] : "vectors/standing/standing.json");
    Files.createDirectories(out.toAbsolutePath().getParent());
    Files.writeString(out, generate(), StandardCharsets.UTF_8);
    System.out.println(out);
  }
}
