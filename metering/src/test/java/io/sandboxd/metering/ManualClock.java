package io.sandboxd.metering;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/** A nanosecond clock the test moves by hand. */
final class ManualClock implements LongSupplier {
  private final AtomicLong now = new AtomicLong();

  @Override
  public long getAsLong() {
    return now.get();
  }

  void advance(long ns) {
    now.addAndGet(ns);
  }
}
