package io.sandboxd.executor;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.TableInstance;
import com.dylibso.chicory.wasm.types.Table;
import com.dylibso.chicory.wasm.types.TableLimits;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A table whose growth is paid from the unit's memory budget: {@code table.grow} past what is left
 * fails (returns -1, as WebAssembly specifies for a refused growth) instead of allocating.
 */
final class BudgetedTable extends TableInstance {
  private final AtomicLong budgetBytes;
  private final long maxEntries;

  private BudgetedTable(Table table, int initRef, AtomicLong budgetBytes, long maxEntries) {
    super(table, initRef);
    this.budgetBytes = budgetBytes;
    this.maxEntries = maxEntries;
  }

  /**
   * Table {@code index} of a unit, at the initial size its module declared, sharing {@code
   * budgetBytes} with the unit's other tables.
   */
  static BudgetedTable of(
      Table declared,
      int initRef,
      InstanceFootprint footprint,
      int index,
      AtomicLong budgetBytes,
      long maxEntries) {
    long min = footprint.tableMins().get(index);
    long max = Math.min(footprint.tableMaxes().get(index), maxEntries);
    Table fresh =
        new Table(declared.elementType(), new TableLimits(min, max), declared.initialize());
    return new BudgetedTable(fresh, initRef, budgetBytes, max);
  }

  @Override
  public int grow(int size, int val, Instance instance) {
    if (size < 0 || (long) size() + size > maxEntries) {
      return -1;
    }
    long cost = size * InstanceFootprint.TABLE_SLOT_BYTES;
    if (budgetBytes.addAndGet(-cost) < 0) {
      budgetBytes.addAndGet(cost);
      return -1;
    }
    int old = super.grow(size, val, instance);
    if (old < 0) {
      budgetBytes.addAndGet(cost);
    }
    return old;
  }
}
