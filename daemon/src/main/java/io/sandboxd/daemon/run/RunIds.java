package io.sandboxd.daemon.run;

import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * The node's source of run ids, shared by submitted and durable runs so that both kinds draw from
 * one space: time-ordered, unguessable, 12 hex digits of ms then 8 random hex digits.
 */
public final class RunIds {
  private static final HexFormat HEX = HexFormat.of();
  private static final String ZEROS = "000000000000";

  private final SecureRandom random = new SecureRandom();

  /** A fresh run id. */
  public String next() {
    byte[] b = new byte[4];
    random.nextBytes(b);
    // What %012x writes, without a Formatter (which parses its pattern on every run).
    String ms = Long.toHexString(System.currentTimeMillis());
    return ZEROS.substring(Math.min(ms.length(), ZEROS.length())) + ms + HEX.formatHex(b);
  }
}
