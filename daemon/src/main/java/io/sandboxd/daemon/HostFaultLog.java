package io.sandboxd.daemon;

import io.sandboxd.executor.HostFaults;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The daemon's log of what units cannot tell the operator (a full disk under kv_put or
 * storage_write, a write refused to keep the disk's reserve): one line when a call or store first
 * reports, then one a period for each with how many more there were, since a unit decides how often
 * it calls.
 */
final class HostFaultLog implements HostFaults {
  private static final Logger LOG = Logger.getLogger(HostFaultLog.class.getName());

  // Keyed by the executor's own fixed names (imports, stores), so this stays small.
  private final Map<String, ReportPace> paces = new ConcurrentHashMap<>();

  @Override
  public void told(String call, String what) {
    paces
        .computeIfAbsent(call, c -> new ReportPace())
        .log(LOG, Level.WARNING, LogLine.of(call + ": " + what), null);
  }
}
