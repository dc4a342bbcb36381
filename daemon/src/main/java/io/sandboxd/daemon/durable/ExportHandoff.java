package io.sandboxd.daemon.durable;

import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.DurableRunTable.State;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;

/**
 * The hand-off of an exported run (issue 23 item 3): {@link DurableRuns#export} holds the run
 * {@code exporting}; it becomes {@code moved} only when the client confirms the bundle written with
 * the digest the stream's last message named, and goes back to {@code parked} (resumable here) when
 * the stream ends before its last chunk was sent or an operator takes the export back. So an
 * interrupted or oversized export never loses the run.
 */
public final class ExportHandoff {
  private static final Logger LOG = Logger.getLogger(ExportHandoff.class.getName());

  private final DurableRunTable table;

  /** The digest of each exporting run's bundle as streamed (lost on restart: then reclaim). */
  private final Map<String, String> digests = new ConcurrentHashMap<>();

  public ExportHandoff(DurableRunTable table) {
    this.table = table;
  }

  /** The whole bundle of {@code runId} was sent; its digest is what a confirm must name. */
  public void sent(String runId, String digest) {
    digests.put(runId, digest);
  }

  /** The stream ended before its last chunk: no whole bundle left this node, so it stays here. */
  public void abandoned(String runId) {
    digests.remove(runId);
    if (table.transition(runId, State.exporting, State.parked)) {
      LOG.info(() -> "durable run " + runId + ": export interrupted, parked here again");
    }
  }

  /** Marks the run moved: its bundle, {@code digest}, was written whole by the client. */
  public DurableRunTable.Run confirm(String runId, String digest) {
    DurableRunTable.Run run = require(runId);
    String sent = digests.get(runId);
    if (sent == null) {
      throw new DurableRunException.Refused(
          "run "
              + runId
              + ": no export of it was streamed whole since this daemon started; take it back"
              + " with `sandboxctl runs reclaim "
              + runId
              + "` and export again");
    }
    if (!sent.equals(digest)) {
      throw new DurableRunException.Refused(
          "digest: " + digest + " is not the exported bundle's (" + sent + ")");
    }
    if (!table.transition(runId, State.exporting, State.moved)) {
      throw new DurableRunException.Refused(
          "run " + runId + " is " + require(runId).state() + ", not exporting");
    }
    digests.remove(runId);
    LOG.info(() -> "durable run " + runId + " exported (confirmed, bundle " + digest + ")");
    return require(runId);
  }

  /** Takes an unconfirmed export back: the run is parked and resumable here again. */
  public DurableRunTable.Run reclaim(String runId) {
    DurableRunTable.Run run = require(runId);
    if (!table.transition(runId, State.exporting, State.parked)) {
      throw new DurableRunException.Refused(
          "run "
              + runId
              + " is "
              + run.state()
              + (run.exported() ? " (its export was confirmed)" : "")
              + ": only an unconfirmed export can be taken back");
    }
    digests.remove(runId);
    LOG.info(() -> "durable run " + runId + ": unconfirmed export taken back, parked here");
    return require(runId);
  }

  private DurableRunTable.Run require(String runId) {
    return table.run(runId).orElseThrow(() -> new RunNotFoundException(runId));
  }
}
