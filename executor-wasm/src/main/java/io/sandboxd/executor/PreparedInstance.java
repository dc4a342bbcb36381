package io.sandboxd.executor;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wasm.types.MemoryLimits;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An instance of a compiled unit, instantiated and initialized (data and element segments, no start
 * function) but never run, whose host functions are bound to a run only when one claims it. It
 * serves exactly one run: {@link #take()} (a pool handing it out) succeeds once, and so does
 * running it.
 */
public final class PreparedInstance {
  private final CompiledUnit unit;
  private final InstanceShape shape;
  private final Instance instance;
  private final RunBinding binding;
  private final boolean usesWasi;
  private final AtomicBoolean taken = new AtomicBoolean();
  private final AtomicBoolean used = new AtomicBoolean();

  private PreparedInstance(
      CompiledUnit unit,
      InstanceShape shape,
      Instance instance,
      RunBinding binding,
      boolean usesWasi) {
    this.unit = unit;
    this.shape = shape;
    this.instance = instance;
    this.binding = binding;
    this.usesWasi = usesWasi;
  }

  /**
   * Instantiates {@code unit} within {@code shape}'s memory limits, unbound.
   *
   * @throws MemoryBreachException when the module needs more at start than the shape allows
   */
  public static PreparedInstance prepare(CompiledUnit unit, InstanceShape shape) {
    return prepare(unit, shape, binding -> {});
  }

  /**
   * Instantiates {@code unit} for a run that is already known: {@code bindFirst} binds the instance
   * before instantiation, so a start function (which runs then, on the run's own thread under its
   * watchdog and budget) reaches the run's granted imports like the entry does.
   *
   * @throws MemoryBreachException when the module needs more at start than the shape allows
   */
  static PreparedInstance prepare(
      CompiledUnit unit, InstanceShape shape, java.util.function.Consumer<RunBinding> bindFirst) {
    int limitPages = shape.limitPages();
    long capBytes = shape.capBytes();
    if (unit.initialPages() > limitPages) {
      throw new MemoryBreachException(
          "module needs " + unit.initialPages() + " pages at start; the limit is " + limitPages);
    }
    InstanceFootprint footprint = unit.footprint();
    long atStart = footprint.staticBytes() + (long) unit.initialPages() * Memory.PAGE_SIZE;
    if (atStart > capBytes) {
      throw new MemoryBreachException(
          "module needs "
              + atStart
              + " bytes at start (tables "
              + footprint.tableBytes()
              + ", memory "
              + (long) unit.initialPages() * Memory.PAGE_SIZE
              + "); the limit is "
              + capBytes);
    }
    // What memory may not grow into is left for tables to grow into, and no more.
    AtomicLong tableBudget =
        new AtomicLong(
            Math.max(0, capBytes - footprint.staticBytes() - (long) limitPages * Memory.PAGE_SIZE));
    AtomicInteger tableIndex = new AtomicInteger();
    boolean usesWasi = WasiImports.imports(unit.module());
    RunBinding binding = new RunBinding();
    bindFirst.accept(binding);
    Instance.Builder b =
        Instance.builder(unit.module())
            .withImportValues(
                ImportValues.builder()
                    .addFunction(SandboxImports.functions(binding))
                    .addFunction(usesWasi ? WasiImports.functions(binding) : new HostFunction[0])
                    .build())
            .withMachineFactory(unit.machineFactory())
            .withTableFactory(
                (table, initRef) ->
                    BudgetedTable.of(
                        table,
                        initRef,
                        footprint,
                        tableIndex.getAndIncrement(),
                        tableBudget,
                        Integer.MAX_VALUE))
            // Chicory would otherwise run an exported `_start` while instantiating; the entry runs
            // once, when a run claims the instance, whichever export it is.
            .withStart(false);
    if (unit.module().memorySection().isPresent()) {
      b.withMemoryLimits(new MemoryLimits(unit.initialPages(), limitPages));
    }
    return new PreparedInstance(unit, shape, b.build(), binding, usesWasi);
  }

  /** Claims the instance for one run; false when something already took it. */
  public boolean take() {
    return taken.compareAndSet(false, true);
  }

  /** Marks the instance as running its one run; false when it already ran. */
  boolean use() {
    taken.set(true);
    return used.compareAndSet(false, true);
  }

  public CompiledUnit unit() {
    return unit;
  }

  public InstanceShape shape() {
    return shape;
  }

  /** Heap bytes the idle instance holds: its linear memory, tables and globals. */
  public long footprintBytes() {
    Memory m = instance.memory();
    long memory = m == null ? 0 : (long) m.pages() * Memory.PAGE_SIZE;
    return memory + unit.footprint().staticBytes();
  }

  /**
   * Calls {@code export} with no run bound (any host call traps): how benchmarks and tests reach
   * the guest's first instruction without a run. Takes the instance like a claim.
   */
  public long[] enterUnbound(String export) {
    if (!use()) {
      throw new IllegalStateException("the instance already served a run");
    }
    return instance.export(export).apply();
  }

  Instance instance() {
    return instance;
  }

  RunBinding binding() {
    return binding;
  }

  boolean usesWasi() {
    return usesWasi;
  }

  /** A unit that needs more memory at start than its limits allow. */
  public static final class MemoryBreachException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MemoryBreachException(String message) {
      super(message);
    }
  }
}
