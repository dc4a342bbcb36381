package io.sandboxd.enforcer;

import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpCheckpoint;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.SeededKeys;
import io.sandboxd.attest.SigningKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Fixed JCP test material shared by the unit tests and the standing.json generator: keys from fixed
 * seeds (issuer 0x10.., holder 0x20.., agent 0x30.., stranger 0x40..: byte i of the seed is first +
 * i), a parent grant, a ceiling within it, and a policy over them.
 */
public final class JcpFixtures {
  private JcpFixtures() {}

  public static SigningKey key(int first) {
    return SeededKeys.counting(first);
  }

  public static final SigningKey ISSUER = key(0x10);
  public static final SigningKey HOLDER = key(0x20);
  public static final SigningKey AGENT = key(0x30);
  public static final SigningKey STRANGER = key(0x40);

  /** The policy's not_after_ms: 2033-05-18. */
  public static final long NOT_AFTER_MS = 2_000_000_000_000L;

  public static Grants grants(String json) {
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  public static final String PARENT_JSON =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":100000000,\"cpu_time_ms\":10000,"
          + "\"memory_bytes\":67108864},\"storage\":{\"read\":[\"data/**\"],\"write\":[\"out/**\"]},"
          + "\"host\":{\"logging\":true,\"clock\":true,\"random\":true}}";
  public static final String CEILING_JSON =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":50000000,\"cpu_time_ms\":5000,"
          + "\"memory_bytes\":33554432},\"storage\":{\"read\":[\"data/**\"]},"
          + "\"host\":{\"logging\":true,\"clock\":true}}";
  public static final String CHILD_JSON =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":10000000,\"cpu_time_ms\":1000,"
          + "\"memory_bytes\":16777216},\"storage\":{\"read\":[\"data/a/**\"]},"
          + "\"host\":{\"logging\":true}}";

  /** Wider than the ceiling: randomness, which the parent has and the ceiling does not. */
  public static final String WIDE_CHILD_JSON =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":10000000,\"cpu_time_ms\":1000,"
          + "\"memory_bytes\":16777216},\"host\":{\"logging\":true,\"random\":true}}";

  /** Wider than the parent: inference. */
  public static final String WIDE_CEILING_JSON =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":50000000,\"cpu_time_ms\":5000,"
          + "\"memory_bytes\":33554432},\"host\":{\"logging\":true,\"inference\":true}}";

  public static final Grants PARENT = grants(PARENT_JSON);
  public static final Grants CEILING = grants(CEILING_JSON);
  public static final Grants CHILD = grants(CHILD_JSON);
  public static final Grants WIDE_CHILD = grants(WIDE_CHILD_JSON);

  public static final String EVENT_JSON = "{\"type\":\"push\",\"repo\":\"sandboxd\",\"n\":1}";
  public static final String OTHER_EVENT_JSON = "{\"type\":\"push\",\"repo\":\"other\"}";

  /** A policy: 3 children, 2 per 1000 ms, on {@code push} events of repo sandboxd. */
  public static JcpMintPolicy policy(String ceilingJson) {
    return new JcpMintPolicy(
        ISSUER.publicKey().hex(),
        HOLDER.publicKey().hex(),
        PARENT.grantsId(),
        grants(ceilingJson).canonicalTree(),
        3,
        1000,
        2,
        List.of(new JcpMintPolicy.Trigger("push", CanonicalJson.parse("{\"repo\":\"sandboxd\"}"))),
        NOT_AFTER_MS);
  }

  public static JcpMintPolicy policy() {
    return policy(CEILING_JSON);
  }

  /**
   * {@code n} checkpoints of run {@code runId} under {@code agent}, all naming {@code grantsId}.
   */
  public static List<Envelope> checkpoints(String runId, int n, String grantsId) {
    List<Envelope> out = new ArrayList<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      JcpCheckpoint c =
          new JcpCheckpoint(
              runId,
              i,
              prev,
              io.sandboxd.attest.Blake3.hex(("state " + i).getBytes(StandardCharsets.UTF_8)),
              grantsId,
              AGENT.publicKey().hex());
      Envelope e = Envelope.sign(c.toCore(), AGENT);
      out.add(e);
      prev = e.address();
    }
    return out;
  }
}
