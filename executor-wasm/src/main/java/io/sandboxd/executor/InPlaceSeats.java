package io.sandboxd.executor;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The unit threads allowed to run an executor's units in place: a deep guest recursion commits
 * pages of its thread's 8 MiB stack that stay resident until the thread ends, so the threads that
 * ever ran a unit must be bounded by the units that may run at once (a few for each), not by the
 * daemon's handler threads. A thread keeps its seat until it ends.
 */
final class InPlaceSeats {
  private final int seats;
  private final AtomicInteger taken = new AtomicInteger();

  InPlaceSeats(int seats) {
    this.seats = seats;
  }

  /** Takes a seat if one is free. */
  boolean tryTake() {
    while (true) {
      int now = taken.get();
      if (now >= seats) {
        return false;
      }
      if (taken.compareAndSet(now, now + 1)) {
        return true;
      }
    }
  }

  /** Gives a seat back: its thread ended. */
  void leave() {
    taken.decrementAndGet();
  }

  /** Seats taken now. */
  int taken() {
    return taken.get();
  }
}
