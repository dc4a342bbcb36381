package io.sandboxd.executor;

import java.util.List;

/**
 * What one instance of a module holds on the daemon's heap besides its linear memory, read from the
 * module's declarations when it is compiled (Chicory's own table limits change as tables grow, so
 * instances are sized from these, never from the shared parsed module).
 *
 * @param tableMins each table's declared initial size, in entries
 * @param tableMaxes each table's declared maximum, in entries
 * @param globals globals the module defines
 */
public record InstanceFootprint(List<Long> tableMins, List<Long> tableMaxes, int globals) {
  /** Heap bytes per table slot: Chicory keeps an int and an object reference for each. */
  public static final long TABLE_SLOT_BYTES = 12;

  /** Heap bytes per global instance, rounded up. */
  public static final long GLOBAL_BYTES = 48;

  public InstanceFootprint {
    tableMins = List.copyOf(tableMins);
    tableMaxes = List.copyOf(tableMaxes);
  }

  /** Bytes of tables at their initial sizes. */
  public long tableBytes() {
    long entries = 0;
    for (long m : tableMins) {
      entries += m;
    }
    return entries * TABLE_SLOT_BYTES;
  }

  /** Bytes of everything but linear memory, at instantiation. */
  public long staticBytes() {
    return tableBytes() + globals * GLOBAL_BYTES;
  }
}
