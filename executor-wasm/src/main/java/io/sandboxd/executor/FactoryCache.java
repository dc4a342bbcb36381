package io.sandboxd.executor;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Compiled units (each holding its Chicory machine factory) by module address, least recently used
 * evicted past a fixed number of entries; a miss means the caller compiles again. Counts hits and
 * misses so that tests and operators can see whether a submission recompiled.
 */
public final class FactoryCache {
  private final int capacity;
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong misses = new AtomicLong();
  private final AtomicLong evictions = new AtomicLong();
  private final LinkedHashMap<String, CompiledUnit> units;

  public FactoryCache(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("factory cache capacity must be at least 1: " + capacity);
    }
    this.capacity = capacity;
    // Access order: a get moves the entry to the young end.
    this.units =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, CompiledUnit> eldest) {
            boolean full = size() > FactoryCache.this.capacity;
            if (full) {
              evictions.incrementAndGet();
            }
            return full;
          }
        };
  }

  /** The compiled unit of {@code address}, counted as a hit, or empty, counted as a miss. */
  public Optional<CompiledUnit> get(String address) {
    CompiledUnit u;
    synchronized (units) {
      u = units.get(address);
    }
    (u == null ? misses : hits).incrementAndGet();
    return Optional.ofNullable(u);
  }

  /**
   * Caches {@code unit} unless one of its address is cached already (two compilations raced);
   * returns the unit now cached.
   */
  public CompiledUnit put(CompiledUnit unit) {
    synchronized (units) {
      CompiledUnit held = units.putIfAbsent(unit.address(), unit);
      return held != null ? held : unit;
    }
  }

  /** Whether {@code address} is cached, without counting or touching its recency. */
  public boolean contains(String address) {
    synchronized (units) {
      return units.containsKey(address);
    }
  }

  /** Counters and size now. */
  public Stats stats() {
    int size;
    synchronized (units) {
      size = units.size();
    }
    return new Stats(hits.get(), misses.get(), evictions.get(), size, capacity);
  }

  /** What the cache has served: lookups that hit, that missed, entries evicted, size, capacity. */
  public record Stats(long hits, long misses, long evictions, int entries, int capacity) {}
}
