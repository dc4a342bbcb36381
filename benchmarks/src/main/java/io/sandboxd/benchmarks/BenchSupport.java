package io.sandboxd.benchmarks;

import com.dylibso.chicory.runtime.ByteArrayMemory;
import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import io.sandboxd.attest.Outcome;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.ExecutionResult;
import java.nio.charset.StandardCharsets;

/**
 * What the benchmarks share: a generous grant, the bare-Chicory baseline run, and the commands'
 * usage check.
 */
final class BenchSupport {
  private BenchSupport() {}

  /** For a command, not JMH: prints {@code usage} and exits 2 when fewer than {@code min} args. */
  static void usage(String[] args, int min, String usage) {
    if (args.length < min) {
      System.err.println("usage: " + usage);
      System.exit(2);
    }
  }

  /**
   * Budgets no benchmark run comes near (10 min of CPU, 256 MiB, 10^15 µJ), with {@code logging}
   * and {@code clock} granted as given; nothing else.
   */
  static Grants grants(boolean logging, boolean clock) {
    String json =
        "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000000000,"
            + "\"cpu_time_ms\":600000,\"memory_bytes\":268435456},"
            + "\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
            + "\"network\":{\"outbound\":[],\"inbound\":false},"
            + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
            + "\"host\":{\"logging\":"
            + logging
            + ",\"clock\":"
            + clock
            + ",\"random\":false,\"inference\":false}}";
    return Grants.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The baseline: a new instance of the unit's module on plain Chicory with the same compiled
   * machine factory the executor uses (one compile per module), {@code hostFunctions} as its only
   * imports, and its {@code run} export called on this thread.
   */
  static long bareRun(CompiledUnit unit, HostFunction... hostFunctions) {
    return run(
        Instance.builder(unit.module())
            .withImportValues(ImportValues.builder().addFunction(hostFunctions).build())
            .withMachineFactory(unit.machineFactory())
            .withStart(false)
            .build());
  }

  /**
   * As {@link #bareRun} with Chicory's {@link ByteArrayMemory} instead of its default ({@code
   * ByteBufferMemory}, which the executor uses too): a probe of what that Chicory option is worth.
   */
  static long bareRunByteArrayMemory(CompiledUnit unit) {
    return run(
        Instance.builder(unit.module())
            .withMachineFactory(unit.machineFactory())
            .withMemoryFactory(ByteArrayMemory::new)
            .withStart(false)
            .build());
  }

  private static long run(Instance instance) {
    long[] ret = instance.export("run").apply();
    return ret == null || ret.length == 0 ? 0 : ret[0];
  }

  /** Fails the benchmark unless the executor ran the unit to completion. */
  static ExecutionResult completed(ExecutionResult r) {
    if (!(r.outcome() instanceof Outcome.Completed)) {
      throw new IllegalStateException("unit did not complete: " + r.outcome());
    }
    return r;
  }

  /** Fails the benchmark unless the entry returned 0. */
  static long ok(long ret) {
    if (ret != 0) {
      throw new IllegalStateException("entry returned " + ret);
    }
    return ret;
  }
}
