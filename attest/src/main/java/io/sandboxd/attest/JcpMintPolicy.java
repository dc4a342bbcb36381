package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A standing grant's mint policy ({@code jcp.mint-policy/1}, WIRE.md §2.11), signed by the issuer:
 * the holder may mint children of the parent grant, each within {@code ceiling}, on matching
 * events, at most {@code maxChildren} in all and {@code rateMax} per sliding {@code rateWindowMs},
 * until {@code notAfterMs}; each child, when {@code childUse} is set, for at most {@code ttl_ms}
 * after it was minted and for at most {@code max_uses} runs. The ceiling is kept as its JSON tree:
 * the grant model lives in the enforcer.
 */
public record JcpMintPolicy(
    String issuer,
    String holder,
    String parentGrantsId,
    JsonNode ceiling,
    long maxChildren,
    long rateWindowMs,
    long rateMax,
    List<Trigger> triggers,
    long notAfterMs,
    ChildUse childUse) {

  public static final String SCHEMA = "jcp.mint-policy/1";

  /** Most triggers one policy may carry (each event is matched against all of them). */
  public static final int MAX_TRIGGERS = 64;

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "issuer",
          "holder",
          "parent_grants_id",
          "ceiling",
          "max_children",
          "rate",
          "triggers",
          "not_after_ms",
          "child_use");

  /** A policy whose children are bounded only by the policy's own {@code not_after_ms}. */
  public JcpMintPolicy(
      String issuer,
      String holder,
      String parentGrantsId,
      JsonNode ceiling,
      long maxChildren,
      long rateWindowMs,
      long rateMax,
      List<Trigger> triggers,
      long notAfterMs) {
    this(
        issuer,
        holder,
        parentGrantsId,
        ceiling,
        maxChildren,
        rateWindowMs,
        rateMax,
        triggers,
        notAfterMs,
        null);
  }

  /**
   * {@code child_use} (omitted when absent): a minted child may start runs for {@code ttlMs} after
   * its {@code minted_ms}, and at most {@code maxUses} of them.
   */
  public record ChildUse(long ttlMs, long maxUses) {
    static final Set<String> FIELDS = Set.of("ttl_ms", "max_uses");
  }

  public JcpMintPolicy {
    ceiling = ceiling.deepCopy();
    triggers = List.copyOf(triggers);
    if (triggers.size() > MAX_TRIGGERS) {
      throw new AttestException(
          "mint-policy.triggers: " + triggers.size() + " triggers, at most " + MAX_TRIGGERS);
    }
  }

  /**
   * One trigger: an event of exactly type {@code event} whose top-level fields equal every entry of
   * {@code match} (compared by canonical bytes).
   */
  public record Trigger(String event, JsonNode match) {
    private static final Set<String> FIELDS = Set.of("event", "match");

    public Trigger {
      match = match.deepCopy();
    }

    /** Whether {@code eventDoc} (an object with a string {@code type}) fires this trigger. */
    public boolean matches(JsonNode eventDoc) {
      JsonNode type = eventDoc.get("type");
      if (type == null || !type.isTextual() || !type.textValue().equals(event)) {
        return false;
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = match.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        JsonNode got = eventDoc.get(e.getKey());
        if (got == null
            || !java.util.Arrays.equals(
                CanonicalJson.canonicalize(got), CanonicalJson.canonicalize(e.getValue()))) {
          return false;
        }
      }
      return true;
    }

    ObjectNode toJson() {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("event", event);
      o.set("match", match.deepCopy());
      return o;
    }

    static Trigger fromJson(JsonNode n, String path) {
      JsonReader r = JsonReader.of(n, path, FIELDS, JsonReader.RECORD);
      String event = r.string("event");
      if (event.isEmpty()) {
        throw new AttestException(path + ".event: must not be empty");
      }
      return new Trigger(event, r.object("match").node());
    }
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("issuer", issuer);
    o.put("holder", holder);
    o.put("parent_grants_id", parentGrantsId);
    o.set("ceiling", ceiling.deepCopy());
    o.put("max_children", maxChildren);
    o.putObject("rate").put("window_ms", rateWindowMs).put("max", rateMax);
    ArrayNode t = o.putArray("triggers");
    triggers.forEach(x -> t.add(x.toJson()));
    o.put("not_after_ms", notAfterMs);
    if (childUse != null) {
      o.putObject("child_use").put("ttl_ms", childUse.ttlMs()).put("max_uses", childUse.maxUses());
    }
    return o;
  }

  /** Parses a policy core strictly: every field present, no other, integers only. */
  public static JcpMintPolicy fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "mint-policy", FIELDS, JsonReader.RECORD).schema(SCHEMA);
    JsonReader rate = r.object("rate", Set.of("window_ms", "max"));
    JsonNode triggers = r.required("triggers");
    if (!triggers.isArray() || triggers.isEmpty()) {
      throw new AttestException("mint-policy.triggers: expected a non-empty array");
    }
    long window = rate.u64("window_ms");
    if (window == 0) {
      throw new AttestException("mint-policy.rate.window_ms: must be at least 1");
    }
    return new JcpMintPolicy(
        key(r, "issuer"),
        key(r, "holder"),
        r.hex32("parent_grants_id"),
        r.object("ceiling").node(),
        r.u64("max_children"),
        window,
        rate.u64("max"),
        r.list("triggers", Trigger::fromJson),
        r.u64("not_after_ms"),
        r.optionalObject("child_use", ChildUse.FIELDS)
            .map(u -> new ChildUse(u.u64("ttl_ms"), u.u64("max_uses")))
            .orElse(null));
  }

  /** A required Ed25519 public key field, checked to be a valid point. */
  static String key(JsonReader r, String field) {
    String hex = r.hex32(field);
    PublicKey.ofHex(hex, r.pathOf(field));
    return hex;
  }

  /**
   * Reads and verifies a policy envelope: the core parses, the address and signature hold, and the
   * signer is the core's {@code issuer}.
   */
  public static JcpMintPolicy verified(Envelope env) {
    JcpMintPolicy p = fromCore(env.core());
    if (env.verify(java.util.Optional.of(PublicKey.ofHex(p.issuer, "issuer")))
        instanceof Verification.Invalid inv) {
      throw new AttestException("mint-policy: " + inv.reason());
    }
    return p;
  }
}
