package io.sandboxd.daemon.jcp;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.JcpSignedEvent;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.store.JcpTable;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.enforcer.ChildUse;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import io.sandboxd.enforcer.MintRule;
import io.sandboxd.enforcer.StandingGrant;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * The node's standing grants (WIRE.md §2.11): it registers issuer-signed mint policies, holds the
 * holder key that mints children, and decides each mint with {@link StandingGrant} against the
 * policy's history in the run store, so the count and the rate window survive a restart. Minting is
 * serialized: decide, sign, and store (fsynced) happen under one lock, so two events never both
 * take the last place.
 */
public final class StandingGrants {
  /** Largest {@code rate.max} accepted: the decision reads that many mint times. */
  static final long MAX_RATE = 1 << 16;

  /** Furthest ahead an event's {@code not_after_ms} may be: its nonce is remembered that long. */
  static final long MAX_EVENT_TTL_MS = 24L * 60 * 60 * 1000;

  /** Most event nonces remembered at once (expired ones are forgotten first). */
  static final long MAX_NONCES = 1 << 16;

  private final JcpTable table;
  private final SigningKey holder;
  private final SigningKey agent;
  private final long maxPolicies;
  private final LongSupplier clock;
  private final java.util.Set<String> eventSources;

  StandingGrants(
      JcpTable table, SigningKey holder, SigningKey agent, long maxPolicies, LongSupplier clock) {
    this(table, holder, agent, maxPolicies, clock, java.util.List.of());
  }

  StandingGrants(
      JcpTable table,
      SigningKey holder,
      SigningKey agent,
      long maxPolicies,
      LongSupplier clock,
      java.util.List<String> eventSources) {
    this.eventSources = java.util.Set.copyOf(eventSources);
    if (holder.publicKey().equals(agent.publicKey())) {
      throw new IllegalArgumentException("holder and agent keys must differ");
    }
    this.table = table;
    this.holder = holder;
    this.agent = agent;
    this.maxPolicies = maxPolicies;
    this.clock = clock;
  }

  /**
   * Loads (creating on first start, mode 0600) {@code keys/holder.ed25519} and {@code
   * keys/agent.ed25519} beside the node key: three distinct keys, so a minted child, a checkpoint
   * and a run record are never signed by the same principal.
   */
  public static StandingGrants open(
      Path keyDir, RunStore store, long maxPolicies, java.util.List<String> eventSources)
      throws IOException {
    return new StandingGrants(
        new JcpTable(store),
        KeyFile.loadOrCreate(keyDir.resolve("holder.ed25519")),
        KeyFile.loadOrCreate(keyDir.resolve("agent.ed25519")),
        maxPolicies,
        System::currentTimeMillis,
        eventSources);
  }

  public PublicKey holderKey() {
    return holder.publicKey();
  }

  public PublicKey agentKey() {
    return agent.publicKey();
  }

  /** Signs a checkpoint core with the agent key (never the node's or the holder's). */
  Envelope signAsAgent(JcpCheckpoint checkpoint) {
    return Envelope.sign(checkpoint.toCore(), agent);
  }

  /** The milliseconds clock the JCP records use. */
  long nowMs() {
    return clock.getAsLong();
  }

  SigningKey agent() {
    return agent;
  }

  public JcpTable table() {
    return table;
  }

  /** A registered policy's address and whether it was registered before. */
  public record Added(String address, boolean alreadyHeld) {}

  /** Registers an issuer-signed policy over {@code parentJson}, the parent grant it names. */
  public synchronized Added addPolicy(String policyJson, String parentJson) {
    Envelope env;
    JcpMintPolicy p;
    try {
      env = Envelope.fromJson(CanonicalJson.parse(policyJson));
      p = JcpMintPolicy.verified(env);
    } catch (AttestException e) {
      throw new AdmissionException("policy: " + e.getMessage(), e);
    }
    if (!p.holder().equals(holder.publicKey().hex())) {
      throw new AdmissionException(
          "policy.holder: is "
              + p.holder()
              + ", this node's holder key is "
              + holder.publicKey().hex()
              + " (sandboxctl jcp keys)");
    }
    if (p.issuer().equals(holder.publicKey().hex()) || p.issuer().equals(agent.publicKey().hex())) {
      throw new AdmissionException(
          "policy.issuer: must be a principal other than this node's keys");
    }
    if (p.rateMax() > MAX_RATE) {
      throw new AdmissionException("policy.rate.max: at most " + MAX_RATE + " on this node");
    }
    Grants parent = parseGrants("parent", parentJson);
    StandingGrant sg = standing(p, parent);
    Optional<MintRule> refused = sg.policyRule();
    if (refused.isPresent()) {
      throw refusal(refused.get());
    }
    if (table.policy(env.address()).isEmpty() && table.policies() >= maxPolicies) {
      throw new JcpRefusedException.Exhausted(
          "max_policies", "this node holds its " + maxPolicies + " mint policies");
    }
    boolean held =
        table.addPolicy(
            parent.grantsId(),
            new String(parent.canonicalBytes(), StandardCharsets.UTF_8),
            env,
            clock.getAsLong());
    return new Added(env.address(), held);
  }

  /** A minted child: its envelope and grants_id. */
  public record Minted(Envelope child, String grantsId, long seq) {}

  /**
   * Offers {@code eventJson} to the policy at {@code policyRef}, asking for {@code grantsJson} (the
   * ceiling when empty): mints, signs and stores a child when every rule holds, else throws the
   * refusal naming the rule and changes nothing.
   */
  public synchronized Minted mint(String policyRef, String eventJson, String grantsJson) {
    String address = address("policy", policyRef);
    JcpTable.Policy row =
        held(table.policy(address), "policy: no mint policy " + address + " on this node");
    JcpMintPolicy p = JcpMintPolicy.verified(row.envelope());
    StandingGrant sg = standing(p, parseGrants("parent", row.parentJson()));
    Envelope eventEnv;
    JcpSignedEvent signed;
    try {
      eventEnv = Envelope.fromJson(CanonicalJson.parse(eventJson));
      signed = JcpSignedEvent.verified(eventEnv);
    } catch (AttestException | IllegalArgumentException e) {
      throw new AdmissionException(
          "event: an event that mints is a jcp.event/1 envelope signed by the policy's issuer or"
              + " a standing.event_sources key (WIRE.md 2.14): "
              + e.getMessage(),
          e);
    }
    Grants child = grantsJson.isEmpty() ? sg.ceiling() : parseGrants("grants", grantsJson);
    JcpTable.History h = table.history(address, p.rateMax());
    // Children are chained in time: a clock stepped back never dates one before its prev.
    long now = Math.max(clock.getAsLong(), h.lastMintedMs());
    JcpTable.Nonce nonce = authenticate(p, eventEnv, signed, now);
    StandingGrant.Verdict v =
        sg.decide(
            signed.event().doc(),
            child,
            new StandingGrant.MintState(h.minted(), h.recentMs()),
            row.parentHeld(),
            now);
    if (v instanceof StandingGrant.Refused r) {
      throw refusal(r.rule());
    }
    StandingGrant.Mint m = (StandingGrant.Mint) v;
    JcpChild c =
        new JcpChild(
            address,
            m.seq(),
            h.lastAddress(),
            eventEnv.address(),
            m.grants().canonicalTree(),
            m.grants().grantsId(),
            now);
    Envelope env = Envelope.sign(c.toCore(), holder);
    table.appendChild(address, m.seq(), env, c.grantsId(), now, nonce);
    return new Minted(env, c.grantsId(), m.seq());
  }

  /**
   * The event's authentication (issue 23): its signer is the policy's issuer or a configured event
   * source, it has not expired and expires within {@link #MAX_EVENT_TTL_MS}, and its signer never
   * used its nonce; returns the nonce to remember with the child.
   */
  private JcpTable.Nonce authenticate(
      JcpMintPolicy p, Envelope eventEnv, JcpSignedEvent e, long now) {
    String signer = eventEnv.publicKey();
    if (!signer.equals(p.issuer()) && !eventSources.contains(signer)) {
      throw new JcpRefusedException(
          "event_signer",
          "the event is signed by "
              + signer
              + ", neither the policy's issuer "
              + p.issuer()
              + " nor a standing.event_sources key");
    }
    if (e.notAfterMs() < now) {
      throw new JcpRefusedException(
          "event_not_after_ms",
          "the event expired at not_after_ms " + e.notAfterMs() + " (now " + now + ")");
    }
    if (e.notAfterMs() - now > MAX_EVENT_TTL_MS) {
      throw new JcpRefusedException(
          "event_not_after_ms",
          "not_after_ms "
              + e.notAfterMs()
              + " is more than "
              + MAX_EVENT_TTL_MS
              + " ms ahead: its nonce is remembered only that long");
    }
    JcpTable.Nonces n = table.nonces(signer, e.nonce(), now);
    if (n.seen()) {
      throw new JcpRefusedException(
          "event_nonce",
          "nonce "
              + e.nonce()
              + " of key "
              + signer
              + " minted already: a replayed event mints nothing");
    }
    if (n.remembered() >= MAX_NONCES) {
      throw new JcpRefusedException.Exhausted(
          "event_nonces",
          "this node remembers " + MAX_NONCES + " unexpired event nonces; retry when some expire");
    }
    return new JcpTable.Nonce(signer, e.nonce(), e.notAfterMs());
  }

  /**
   * Stops holding the parent grant {@code grantsId}, or releases the children minted with it;
   * returns how many policies (or children) it names. A released grant's children start no run.
   */
  public int release(String grantsId) {
    String id = address("parent_grants_id", grantsId);
    int n = table.releaseParent(id);
    if (n < 0) {
      n = table.releaseChildren(id);
      if (n == 0) {
        throw new JcpRefusedException.NotFound(
            "parent_grants_id: no parent grant or minted child " + id + " is held here");
      }
    }
    return n;
  }

  /**
   * {@link #resolve} for a run about to start under the child: refused (naming the rule) when the
   * child or its parent was released, the policy or the child ({@code child_use.ttl_ms}) expired,
   * or it started {@code child_use.max_uses} runs already; else the use is counted, fsynced.
   */
  public synchronized Resolved use(String ref) {
    Resolved r = check(ref, true);
    table.countUse(r.child());
    return r;
  }

  /**
   * Refuses, as {@link #use} does but counting nothing, when the child minted here with {@code
   * grantsId} was released or expired; a grant minted elsewhere (or none) passes.
   */
  public synchronized void checkHeld(String grantsId) {
    if (table.childByGrantsId(grantsId).isPresent()) {
      check(grantsId, false);
    }
  }

  private Resolved check(String ref, boolean counted) {
    Resolved r = resolve(ref);
    JcpMintPolicy p = JcpMintPolicy.verified(table.record(r.policy()).orElseThrow());
    JcpChild child = JcpChild.fromCore(table.record(r.child()).orElseThrow().core());
    JcpTable.Use u = table.use(r.child());
    boolean parentHeld = table.policy(r.policy()).map(JcpTable.Policy::parentHeld).orElse(false);
    Optional<ChildUse.Refused> refused =
        ChildUse.check(
            p,
            child,
            new ChildUse.State(counted ? u.uses() : 0, u.released(), parentHeld),
            clock.getAsLong());
    if (refused.isPresent()) {
      throw new JcpRefusedException(
          refused.get().rule(), "child " + r.child() + ": " + refused.get().detail());
    }
    return r;
  }

  /**
   * What {@code found} holds; else a request naming what this node does not hold, {@code missing}.
   */
  private static <T> T held(Optional<T> found, String missing) {
    return found.orElseThrow(() -> new JcpRefusedException.NotFound(missing));
  }

  /** A minted child resolved for a run: its grant document and where it came from. */
  public record Resolved(String grantsJson, String policy, String child, String issuer) {}

  /** The child grant minted here whose grants_id {@code ref} names ({@code b3:<hex>} or hex). */
  public Resolved resolve(String ref) {
    String id = address("minted_grants", ref);
    JcpTable.Child c =
        held(
            table.childByGrantsId(id),
            "minted_grants: no child grant " + id + " was minted on this node");
    JcpMintPolicy p = JcpMintPolicy.verified(c.policy());
    if (c.envelope().verify(Optional.of(PublicKey.ofHex(p.holder(), "holder")))
        instanceof io.sandboxd.attest.Verification.Invalid inv) {
      throw new io.sandboxd.daemon.store.StoreException(
          "minted child " + c.envelope().address() + ": " + inv.reason());
    }
    JcpChild child = JcpChild.fromCore(c.envelope().core());
    return new Resolved(
        CanonicalJson.canonicalString(child.grants()),
        c.policy().address(),
        c.envelope().address(),
        p.issuer());
  }

  /**
   * A run's JCP records, as an offline verifier needs them beside its segments (WIRE.md §2.14): the
   * policy and child of the minted grant it started under ({@code startGrantsId}, when one was
   * minted here, or carried in by the bundle of an imported run), its checkpoints, then its
   * amendments in the order they were applied.
   */
  public java.util.List<Envelope> runRecords(String runId, String startGrantsId) {
    java.util.List<Envelope> out = new java.util.ArrayList<>();
    table
        .childByGrantsId(startGrantsId)
        .ifPresentOrElse(
            c -> {
              out.add(c.policy());
              out.add(c.envelope());
            },
            // A run imported here carried its policy and child in its bundle.
            () -> out.addAll(table.carried(runId)));
    out.addAll(table.checkpoints(runId));
    out.addAll(table.amendments(runId));
    return out;
  }

  private static StandingGrant standing(JcpMintPolicy p, Grants parent) {
    try {
      return StandingGrant.of(p, parent);
    } catch (GrantsException e) {
      throw new AdmissionException("policy: " + e.getMessage(), e);
    }
  }

  private static Grants parseGrants(String field, String json) {
    try {
      return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
    } catch (GrantsException e) {
      throw new AdmissionException(field + ": " + e.getMessage(), e);
    }
  }

  /** A 64-hex address, {@code b3:} prefix allowed (the CLI's spelling). */
  static String address(String field, String ref) {
    String hex = ref.startsWith("b3:") ? ref.substring(3) : ref;
    if (!io.sandboxd.attest.Hex.isHex(hex, 32)) {
      throw new AdmissionException(field + ": expected 64 lowercase hex digits (or b3:<hex>)");
    }
    return hex;
  }

  static JcpRefusedException refusal(MintRule rule) {
    return rule instanceof MintRule.MaxChildren || rule instanceof MintRule.RateWindow
        ? new JcpRefusedException.Exhausted(rule.rule(), rule.detail())
        : new JcpRefusedException(rule.rule(), rule.detail());
  }
}
