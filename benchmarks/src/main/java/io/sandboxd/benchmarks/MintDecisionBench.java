package io.sandboxd.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.JcpChild;
import io.sandboxd.attest.JcpEvent;
import io.sandboxd.attest.JcpMintPolicy;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.enforcer.Attenuation;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.StandingGrant;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;

/**
 * The JCP mint decision (issue 15), signing excluded: {@code decide} (expiry, parent held, ceiling
 * ⊑ parent, trigger match, count, a sliding window over 64 recent mints, child ⊑ ceiling) on the
 * PolicyBench-sized grants, against one attenuation check ({@code attenuation}, the decision's main
 * part) and signing the child it would mint ({@code signChild}, what the daemon adds) in the same
 * run.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MintDecisionBench extends MicroBench {
  private StandingGrant standing;
  private Grants child;
  private Grants ceiling;
  private JsonNode event;
  private StandingGrant.MintState state;
  private long now;
  private SigningKey holder;
  private JcpChild childRecord;

  @Setup
  public void setUp() {
    Grants parent = Grants.parse(PolicyBench.CEILING.getBytes(StandardCharsets.UTF_8));
    ceiling = parent;
    child = Grants.parse(PolicyBench.REQUEST.getBytes(StandardCharsets.UTF_8));
    byte[] seed = new byte[32];
    seed[0] = 0x10;
    SigningKey issuer = SigningKey.fromSeed(seed);
    seed[0] = 0x20;
    holder = SigningKey.fromSeed(seed);
    JcpMintPolicy p =
        new JcpMintPolicy(
            issuer.publicKey().hex(),
            holder.publicKey().hex(),
            parent.grantsId(),
            ceiling.canonicalTree(),
            1_000_000,
            60_000,
            1000,
            List.of(
                new JcpMintPolicy.Trigger("tag", CanonicalJson.parse("{\"repo\":\"x\"}")),
                new JcpMintPolicy.Trigger(
                    "push", CanonicalJson.parse("{\"repo\":\"sandboxd\",\"branch\":\"main\"}"))),
            4_000_000_000_000L);
    standing = StandingGrant.of(p, parent);
    JcpEvent ev =
        JcpEvent.parse(
            "{\"type\":\"push\",\"repo\":\"sandboxd\",\"branch\":\"main\",\"sha\":\"0123abcd\"}"
                .getBytes(StandardCharsets.UTF_8));
    event = ev.doc();
    now = 1_700_000_000_000L;
    List<Long> recent = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      recent.add(now - 60_000 + i * 900L);
    }
    state = new StandingGrant.MintState(500, recent);
    childRecord =
        new JcpChild(
            Envelope.addressOf(p.toCore()),
            500,
            ev.address(),
            ev.address(),
            child.canonicalTree(),
            child.grantsId(),
            now);
    if (!(standing.decide(event, child, state, true, now) instanceof StandingGrant.Mint)) {
      throw new IllegalStateException("the benchmark's mint must be allowed");
    }
  }

  @Benchmark
  public StandingGrant.Verdict decide() {
    return standing.decide(event, child, state, true, now);
  }

  @Benchmark
  public Attenuation.Verdict attenuation() {
    return Attenuation.check(child, ceiling);
  }

  @Benchmark
  public Envelope signChild() {
    return Envelope.sign(childRecord.toCore(), holder);
  }
}
