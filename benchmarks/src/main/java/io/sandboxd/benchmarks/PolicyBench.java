package io.sandboxd.benchmarks;

import io.sandboxd.config.DaemonConfig;
import io.sandboxd.config.NodePolicy;
import io.sandboxd.daemon.run.Accounts;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.daemon.run.SubmitterPolicy;
import io.sandboxd.enforcer.Grants;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;

/**
 * What the node policy adds to one submission (issue 13: under 1 µs): the check admission makes
 * ({@code policyCheck}: the caller's rule among 16, the module size, the grants against the rule's
 * ceiling by the attenuation order, a place among the caller's runs in flight taken and given back)
 * against the same sequence under a policy without a ceiling ({@code unrestricted}, the empty
 * admission), with parsing the same grants ({@code parseGrants}, which every submission pays
 * anyway) for scale.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PolicyBench extends MicroBench {
  /** A typical requested grant: budgets, a few globs, endpoints, kv prefixes, two programs. */
  static final String REQUEST =
      "{\"compute\":{\"devices\":[\"Simd\"],\"energy_budget_uj\":5000000,\"cpu_time_ms\":2000,"
          + "\"memory_bytes\":1048576},\"storage\":{\"read\":[\"data/*\",\"cfg/app.json\","
          + "\"models/*.onnx\"],\"write\":[\"out/**\"],\"delete\":[\"out/tmp/*\"]},"
          + "\"network\":{\"outbound\":[\"api.example.com:443\",\"cache.example.com:6379\"]},"
          + "\"kv\":{\"read\":true,\"write\":true,\"prefixes\":[[117,47,49]]},"
          + "\"host\":{\"logging\":true,\"clock\":true,\"random\":true},"
          + "\"process\":{\"exec\":true,\"programs\":[\"ls\",\"cat\"],\"max_processes\":2}}";

  /** The rule's ceiling: wider on every part the request uses. */
  static final String CEILING =
      "{\"compute\":{\"devices\":[\"Simd\",\"Gpu\"],\"energy_budget_uj\":60000000,"
          + "\"cpu_time_ms\":60000,\"memory_bytes\":268435456},\"storage\":{\"read\":[\"**\"],"
          + "\"write\":[\"out/**\",\"tmp/**\"],\"delete\":[\"out/**\"]},"
          + "\"network\":{\"outbound\":[\"api.example.com:443\",\"cache.example.com:6379\","
          + "\"b.example.com:443\",\"c.example.com:443\"]},"
          + "\"kv\":{\"read\":true,\"write\":true,\"prefixes\":[[117,47]]},"
          + "\"host\":{\"logging\":true,\"clock\":true,\"random\":true},"
          + "\"process\":{\"exec\":true,\"programs\":[\"ls\",\"cat\",\"grep\",\"sed\"],"
          + "\"max_processes\":8}}";

  private SubmitterPolicy policy;
  private SubmitterPolicy unrestricted;
  private Caller caller;
  private Grants request;
  private byte[] requestBytes;

  @Setup
  public void setUp() {
    StringBuilder rules = new StringBuilder();
    for (int i = 0; i < 15; i++) {
      rules.append("{\"name\":\"team-").append(i).append("\",\"uids\":[").append(20_000 + i);
      rules.append("],\"ceiling\":").append(CEILING).append("},");
    }
    // the caller's rule is the last, matched by its group: the longest search
    rules.append("{\"name\":\"builders\",\"gids\":[700],\"max_concurrent_runs\":4,\"ceiling\":");
    rules.append(CEILING).append("}");
    NodePolicy p =
        DaemonConfig.parse(
                ("{\"max_concurrent_units\":8,\"policy\":{\"rules\":[" + rules + "]}}")
                    .getBytes(StandardCharsets.UTF_8))
            .policy();
    policy = SubmitterPolicy.resolve(p, new Accounts(Map.of(), Map.of(), Map.of(), Map.of()));
    unrestricted = SubmitterPolicy.unrestricted();
    caller = new Caller(1000, 700, 4242);
    requestBytes = REQUEST.getBytes(StandardCharsets.UTF_8);
    request = Grants.parse(requestBytes);
    check(policy); // refuses if the fixture were wrong: the bench must measure an admitted request
  }

  private int check(SubmitterPolicy p) {
    NodePolicy.Rule rule = p.ruleFor(caller);
    SubmitterPolicy.checkModule(rule, caller, 4096);
    SubmitterPolicy.checkGrants(rule, caller, request);
    try (SubmitterPolicy.Slot slot = p.acquire(rule, caller)) {
      return rule.maxConcurrentRuns();
    }
  }

  @Benchmark
  public int policyCheck() {
    return check(policy);
  }

  @Benchmark
  public int unrestricted() {
    return check(unrestricted);
  }

  @Benchmark
  public Grants parseGrants() {
    return Grants.parse(requestBytes);
  }
}
