package io.sandboxd.daemon.durable;

import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.daemon.store.DurableBlobs;
import io.sandboxd.daemon.store.DurableRunTable;
import io.sandboxd.daemon.store.DurableRunTable.State;
import io.sandboxd.executor.SnapshotException;
import io.sandboxd.executor.SnapshotStore;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Deletes the snapshot blobs no live durable run refers to any more (issue 23): once a run has
 * ended (completed, failed, terminated) or moved away, the blobs only it referred to go; a blob
 * another running, parked or exporting run refers to stays. The blobs are deleted first, then the
 * ended runs' references, so a crash between the two is finished by the next sweep (one runs at
 * start-up). Parks and imports hold {@link #lock} from weighing their blobs to committing their
 * references, so a sweep never deletes a blob they count on.
 */
final class SnapshotSweep {
  private static final Logger LOG = Logger.getLogger(SnapshotSweep.class.getName());

  private final DurableRunTable table;
  private final SnapshotStore snapshots;
  private final ReentrantLock lock = new ReentrantLock();

  SnapshotSweep(DurableRunTable table, SnapshotStore snapshots) {
    this.table = table;
    this.snapshots = snapshots;
  }

  /** Held while blobs are written and the references to them committed. */
  ReentrantLock lock() {
    return lock;
  }

  /** The sizes of {@code blobs}, as references record them. */
  static Map<String, Long> sizes(Map<String, byte[]> blobs) {
    Map<String, Long> out = new LinkedHashMap<>();
    blobs.forEach((a, b) -> out.put(a, (long) b.length));
    return out;
  }

  /**
   * Records the blobs of live runs stored before references were (a store upgraded to version 15),
   * so that no sweep deletes a blob they need.
   */
  void recordUnrecorded() {
    for (DurableRunTable.Run run : table.list(Integer.MAX_VALUE)) {
      if ((run.state() != State.parked
              && run.state() != State.exporting
              && run.state() != State.running)
          || table.blobs().recorded(run.runId())) {
        continue;
      }
      List<DurableRunTable.Segment> segs = table.segments(run.runId());
      for (int i = segs.size() - 1; i >= 0; i--) {
        Envelope e = segs.get(i).envelope();
        RunSegment seg = RunSegment.fromCore(e.core());
        if (seg.kind() == RunSegment.Kind.suspend) {
          try {
            Map<String, byte[]> blobs =
                new LinkedHashMap<>(snapshots.blobs(seg.snapshot().memory()));
            blobs.putAll(snapshots.blobs(seg.snapshot().fs()));
            table.blobs().record(run.runId(), sizes(blobs));
          } catch (SnapshotException ex) {
            LOG.warning(
                "durable run " + run.runId() + ": snapshot not readable: " + ex.getMessage());
          }
          break;
        }
      }
    }
  }

  /** Deletes what only ended runs refer to; returns the bytes deleted. Never throws. */
  long sweep() {
    lock.lock();
    try {
      DurableBlobs.Stale stale = table.blobs().stale();
      Set<String> dead = stale.unreferenced();
      long freed = dead.isEmpty() ? 0 : snapshots.drop(dead);
      if (!stale.rows().isEmpty()) {
        table.blobs().forget(stale.rows());
      }
      if (freed > 0) {
        LOG.info(
            () ->
                "snapshot store: "
                    + dead.size()
                    + " blobs ("
                    + freed
                    + " bytes) of ended runs deleted");
      }
      return freed;
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING, "snapshot store: ended runs' blobs not deleted (next sweep retries)", e);
      return 0;
    } finally {
      lock.unlock();
    }
  }
}
