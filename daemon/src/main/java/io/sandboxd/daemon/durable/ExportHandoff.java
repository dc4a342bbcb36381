package io.sandboxd.daemon.durable;

import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.DurableRunTable.State;
import io.sandboxd.daemon.store.ExportHandoffTable;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The hand-off of an exported run (issue 23 item 3): {@link DurableRuns#export} holds the run
 * {@code exporting} and records the bundle's digest, size and destination in the same transaction;
 * it becomes {@code moved} only when the client confirms the bundle written with that digest, and
 * goes back to {@code parked} (resumable here) when the stream ends before its last chunk was sent
 * or an operator takes the export back. The record is in the run store, so a restarted daemon still
 * confirms or takes back an export started before it stopped: an interrupted export never loses the
 * run.
 */
public final class ExportHandoff {
  private static final Logger LOG = Logger.getLogger(ExportHandoff.class.getName());

  private final DurableRunTable table;
  private final Runnable ended;

  /** {@code ended} runs once a run has moved away (its snapshot blobs may then go). */
  public ExportHandoff(DurableRunTable table, Runnable ended) {
    this.table = table;
    this.ended = ended;
  }

  public ExportHandoff(DurableRunTable table) {
    this(table, () -> {});
  }

  /** The whole bundle of {@code runId} was sent with {@code digest} (as recorded at export). */
  public void sent(String runId, String digest) {
    Optional<ExportHandoffTable.Handoff> h = table.handoffs().handoff(runId);
    if (h.isEmpty() || !h.get().digest().equals(digest)) {
      LOG.warning(
          "durable run " + runId + ": streamed bundle " + digest + " is not the one recorded " + h);
    }
  }

  /** The stream ended before its last chunk: no whole bundle left this node, so it stays here. */
  public void abandoned(String runId) {
    if (table.handoffs().takeBack(runId)) {
      LOG.info(() -> "durable run " + runId + ": export interrupted, parked here again");
    }
  }

  /** Marks the run moved: its bundle, {@code digest}, was written whole by the client. */
  public DurableRunTable.Run confirm(String runId, String digest) {
    DurableRunTable.Run run = require(runId);
    if (run.state() != State.exporting) {
      throw new DurableRunException.Refused(
          stateOf(run) + ", not exporting: there is no export to confirm");
    }
    Optional<ExportHandoffTable.Handoff> h = table.handoffs().handoff(runId);
    if (h.isEmpty()) {
      // Only a run marked exporting by a daemon from before the hand-off was recorded.
      throw new DurableRunException.Refused(
          "run "
              + runId
              + ": no export of it is recorded; take it back with `sandboxctl runs reclaim "
              + runId
              + "` and export again");
    }
    String expected = h.get().digest();
    if (!expected.equals(digest)) {
      throw new DurableRunException.Refused(
          "digest: " + digest + " is not the exported bundle's (" + expected + ")");
    }
    if (!table.handoffs().confirm(runId, digest, System.currentTimeMillis())) {
      throw new DurableRunException.Refused(
          "run " + runId + " is " + require(runId).state() + ", not exporting");
    }
    LOG.info(() -> "durable run " + runId + " exported (confirmed, bundle " + digest + ")");
    ended.run();
    return require(runId);
  }

  /** Takes an unconfirmed export back: the run is parked and resumable here again. */
  public DurableRunTable.Run reclaim(String runId) {
    DurableRunTable.Run run = require(runId);
    if (!table.handoffs().takeBack(runId)) {
      throw new DurableRunException.Refused(
          stateOf(run) + ": only an unconfirmed export can be taken back");
    }
    LOG.info(() -> "durable run " + runId + ": unconfirmed export taken back, parked here");
    return require(runId);
  }

  /** "run ID is STATE", saying when that state is a confirmed export's (a refusal starts so). */
  private static String stateOf(DurableRunTable.Run run) {
    return "run "
        + run.runId()
        + " is "
        + run.state()
        + (run.exported() ? " (its export was confirmed)" : "");
  }

  private DurableRunTable.Run require(String runId) {
    return table.run(runId).orElseThrow(() -> new RunNotFoundException(runId));
  }
}
