package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.DiskReserve;
import io.sandboxd.executor.HostFaults;
import java.nio.file.Path;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The daemon's disk reserve keeps at least the run store's log room, and says when it raises one.
 */
class DiskReserveWiringTest {
  @TempDir Path tmp;

  @Test
  void aConfiguredReserveBelowTheStoresLogRoomIsRaisedAndTheLogSaysSo() {
    try (LogCapture log = LogCapture.of(Daemon.class.getName())) {
      DiskReserve small = Daemon.diskReserve(4096, HostFaults.UNHEARD);
      assertEquals(RunStore.LOG_ROOM_BYTES, small.keptOn(tmp));
      assertEquals(1, log.records().size(), log.records().toString());
      assertEquals(Level.WARNING, log.records().get(0).getLevel());
      String said = log.records().get(0).getMessage();
      assertTrue(said.startsWith("quotas.reserve_bytes 4096 is less than"), said);
      assertTrue(said.contains(String.valueOf(RunStore.LOG_ROOM_BYTES)), said);

      // Off, the default, and a configured reserve above the room are taken as they are, unsaid.
      assertEquals(0, Daemon.diskReserve(0, HostFaults.UNHEARD).keptOn(tmp));
      long large = RunStore.LOG_ROOM_BYTES * 4;
      assertEquals(large, Daemon.diskReserve(large, HostFaults.UNHEARD).keptOn(tmp));
      assertTrue(Daemon.diskReserve(-1, HostFaults.UNHEARD).keptOn(tmp) >= RunStore.LOG_ROOM_BYTES);
      assertEquals(1, log.records().size(), log.records().toString());
    }
  }
}
