package io.sandboxd.daemon.run;

import java.security.SecureRandom;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The node's source of run ids, shared by submitted and durable runs so that both kinds draw from
 * one space: time-ordered, unguessable, 12 hex digits of ms then 8 random hex digits, and never the
 * same twice in one daemon. Two runs of one millisecond drew the same 32 random bits about once a
 * month at 2,000 runs a second, and the second was then not stored, after it had run.
 */
public final class RunIds {
  /**
   * Ids drawn under one millisecond before the next is taken early: bounds what is held when the
   * clock stands still or steps back, which the ids do not follow (they stay ordered).
   */
  static final int MAX_PER_MS = 4096;

  private static final HexFormat HEX = HexFormat.of();
  private static final String ZEROS = "000000000000";

  private final SecureRandom random = new SecureRandom();
  private final LongSupplier clockMs;
  // The millisecond ids are drawn under now, and the random parts drawn under it so far.
  private long ms = -1;
  private final Set<Integer> drawn = new HashSet<>();

  public RunIds() {
    this(System::currentTimeMillis);
  }

  /** Ids under {@code clockMs} (tests: a clock that stands still or steps back). */
  RunIds(LongSupplier clockMs) {
    this.clockMs = clockMs;
  }

  /** A fresh run id. */
  public String next() {
    long at;
    int part;
    do {
      part = random.nextInt();
      synchronized (this) {
        long now = clockMs.getAsLong();
        if (now > ms) {
          ms = now;
          drawn.clear();
        } else if (drawn.size() >= MAX_PER_MS) {
          ms++;
          drawn.clear();
        }
        at = drawn.add(part) ? ms : -1;
      }
    } while (at < 0);
    // What %012x writes, without a Formatter (which parses its pattern on every run).
    String hex = Long.toHexString(at);
    return ZEROS.substring(Math.min(hex.length(), ZEROS.length())) + hex + HEX.toHexDigits(part);
  }
}
