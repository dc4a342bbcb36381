package io.sandboxd.daemon;

import io.sandboxd.executor.HostFaults;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The daemon's log of host calls that failed on the node's side (a full disk under kv_put or
 * storage_write): one line when a call first fails, then one a period per call with how many more
 * there were, since a unit decides how often it calls.
 */
final class HostFaultLog implements HostFaults {
  private static final Logger LOG = Logger.getLogger(HostFaultLog.class.getName());

  // Keyed by import name: the executor passes only its own fixed names, so this stays small.
  private final Map<String, ReportPace> paces = new ConcurrentHashMap<>();

  @Override
  public void failed(String call, Exception cause) {
    paces
        .computeIfAbsent(call, c -> new ReportPace())
        .log(
            LOG,
            Level.WARNING,
            "host call "
                + call
                + " failed on this node, and the unit was answered UNAVAILABLE: "
                + cause,
            null);
  }
}
