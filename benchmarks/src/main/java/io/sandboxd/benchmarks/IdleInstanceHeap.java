package io.sandboxd.benchmarks;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.InstanceShape;
import io.sandboxd.executor.PreparedInstance;
import io.sandboxd.executor.UnitCompiler;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Heap bytes one idle warm instance holds: retained heap after a full GC with {@code n} instances
 * alive, minus the same with none, divided by {@code n}; for the small benchmark module (one page)
 * and examples/hello.wasm's shape. Run: {@code java -cp benchmarks.jar
 * io.sandboxd.benchmarks.IdleInstanceHeap [n]}.
 */
public final class IdleInstanceHeap {
  private IdleInstanceHeap() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    CompiledUnit unit = new UnitCompiler(4).compile(Wat2Wasm.parse(WarmClaimBench.wat(1)));
    InstanceShape shape = new InstanceShape(1, 1 << 20);
    // Warm the code paths once so class loading is not counted.
    PreparedInstance.prepare(unit, shape);
    long before = used();
    List<PreparedInstance> alive = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      alive.add(PreparedInstance.prepare(unit, shape));
    }
    long after = used();
    long per = (after - before) / n;
    System.out.println(
        "idle instances: "
            + n
            + ", retained heap per instance: "
            + per
            + " bytes (linear memory "
            + alive.get(0).footprintBytes()
            + " bytes of it), overhead beyond memory: "
            + (per - alive.get(0).footprintBytes())
            + " bytes");
    if (alive.size() != n) {
      throw new IllegalStateException();
    }
  }

  private static long used() throws InterruptedException {
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(100);
      best = Math.min(best, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return best;
  }
}
