package io.sandboxd.benchmarks;

import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.KvDirection;
import io.sandboxd.enforcer.PathMode;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;

/**
 * Cost of one Enforcer decision (issue 3: p50 ≤ 100 ns) against a plain {@code HashSet.contains} in
 * the same run, and of grants_id for a typical grant. SampleTime gives the p50; AverageTime the
 * mean without per-call timer overhead.
 */
@BenchmarkMode({Mode.SampleTime, Mode.AverageTime})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class EnforcerBench extends MicroBench {
  private Enforcer enforcer;
  private Grants typical;
  private Set<String> baseline;
  private String endpointHit;
  private String endpointMiss;
  private String pathHit;
  private String pathMiss;
  private byte[] keyHit;
  private byte[] keyMiss;

  @Setup
  public void setUp() {
    StringBuilder outbound = new StringBuilder();
    baseline = new HashSet<>();
    for (int i = 0; i < 100; i++) {
      String e = "svc" + i + ".example.com:" + (8000 + i);
      outbound.append(i == 0 ? "" : ",").append('"').append(e).append('"');
      baseline.add(e);
    }
    String globs =
        "\"data/*\",\"logs/**\",\"cache/*.bin\",\"*/cfg\",\"a/**/z\",\"tmp/*/x\","
            + "\"/abs/**\",\"models/*.onnx\",\"src/**\",\"inbox/*\"";
    StringBuilder prefixes = new StringBuilder();
    for (int i = 0; i < 10; i++) {
      prefixes.append(i == 0 ? "" : ",").append("[117,115,101,114,").append(48 + i).append(",47]");
    }
    String json =
        "{\"storage\":{\"read\":["
            + globs
            + "],\"write\":[\"out/**\"],\"max_iops\":1000},"
            + "\"network\":{\"outbound\":["
            + outbound
            + "]},"
            + "\"kv\":{\"read\":true,\"write\":true,\"prefixes\":["
            + prefixes
            + "]},"
            + "\"host\":{\"logging\":true,\"clock\":true},"
            + "\"compute\":{\"devices\":[\"Gpu\"],\"energy_budget_uj\":5000000000,"
            + "\"cpu_time_ms\":60000,\"memory_bytes\":1073741824},"
            + "\"process\":{\"exec\":true,\"programs\":[\"ls\",\"cat\",\"python3\"],\"max_processes\":4}}";
    typical = Grants.parse(json.getBytes(StandardCharsets.UTF_8));
    enforcer = new Enforcer(typical);
    endpointHit = "svc73.example.com:8073";
    endpointMiss = "evil.example.com:443";
    pathHit = "inbox/2026/05/m1.eml"; // matched by the last glob (reading B)
    pathMiss = "etc/shadow/x"; // scans all ten globs
    keyHit = "user9/profile".getBytes(StandardCharsets.UTF_8); // the last prefix
    keyMiss = "admin/x".getBytes(StandardCharsets.UTF_8);
    check(enforcer.mayEgress(endpointHit).allowed() && !enforcer.mayEgress(endpointMiss).allowed());
    check(enforcer.mayPath(PathMode.READ, pathHit).allowed());
    check(!enforcer.mayPath(PathMode.READ, pathMiss).allowed());
    check(enforcer.mayKv(KvDirection.READ, keyHit).allowed());
    check(!enforcer.mayKv(KvDirection.READ, keyMiss).allowed());
  }

  private static void check(boolean ok) {
    if (!ok) {
      throw new IllegalStateException("benchmark fixture does not decide as intended");
    }
  }

  @Benchmark
  public boolean baselineHashSetContains() {
    return baseline.contains(endpointHit);
  }

  @Benchmark
  public Decision mayPath10GlobsAllow() {
    return enforcer.mayPath(PathMode.READ, pathHit);
  }

  @Benchmark
  public Decision mayPath10GlobsDeny() {
    return enforcer.mayPath(PathMode.READ, pathMiss);
  }

  @Benchmark
  public Decision mayEgress100Allow() {
    return enforcer.mayEgress(endpointHit);
  }

  @Benchmark
  public Decision mayEgress100Deny() {
    return enforcer.mayEgress(endpointMiss);
  }

  @Benchmark
  public Decision mayKv10Allow() {
    return enforcer.mayKv(KvDirection.READ, keyHit);
  }

  @Benchmark
  public Decision mayKv10Deny() {
    return enforcer.mayKv(KvDirection.READ, keyMiss);
  }

  @Benchmark
  public String grantsIdTypical() {
    return typical.grantsId();
  }
}
