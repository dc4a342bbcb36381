package io.sandboxd.daemon.fleet;

import io.sandboxd.attest.Blake3;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

/**
 * What the aggregator's fleet log costs as it grows: heap bytes a leaf (retained after a full GC,
 * leaves appended in batches of 512 with a force after each, as the aggregator does), an append, a
 * reopen of the whole log, and a lookup with a proof of a random leaf. In the daemon's package
 * because {@link FleetLog} is the aggregator's own. Run: {@code java -cp benchmarks.jar
 * io.sandboxd.daemon.fleet.FleetLogFootprint [leaves] [dir]}.
 */
public final class FleetLogFootprint {
  private static final int BATCH = 512;
  private static final int PROOFS = 200_000;

  private FleetLogFootprint() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    Path dir =
        Files.createTempDirectory(args.length > 1 ? Path.of(args[1]) : Path.of("/tmp"), "fl");
    Path file = dir.resolve("fleet.log");
    String node = "ab".repeat(32);
    try {
      long before = used();
      long t0 = System.nanoTime();
      long appended;
      try (FleetLog log = FleetLog.open(file)) {
        for (int i = 0; i < n; i++) {
          // A node key per record, as the aggregator takes each from its message's subject.
          log.append(address(i), new String(node.toCharArray()));
          if (i % BATCH == BATCH - 1) {
            log.sync();
          }
        }
        log.sync();
        appended = System.nanoTime() - t0;
        long perLeaf = (used() - before) / n;
        System.out.printf("fleet log: %d leaves, %d bytes of heap a leaf%n", n, perLeaf);
      }
      long t1 = System.nanoTime();
      try (FleetLog log = FleetLog.open(file)) {
        long reopened = System.nanoTime() - t1;
        Random random = new Random(1);
        long check = 0;
        long t2 = System.nanoTime();
        for (int k = 0; k < PROOFS; k++) {
          int i = random.nextInt(n);
          check += log.indexOf(address(i)).getAsLong() - i;
          check += log.prove(i).leafIndex() - i;
        }
        long proved = System.nanoTime() - t2;
        if (check != 0) {
          throw new IllegalStateException("a lookup or a proof named the wrong leaf");
        }
        System.out.printf(
            "append %.2f us a leaf; reopen %d ms; lookup + proof of a random leaf %.2f us%n",
            appended / 1e3 / n, reopened / 1_000_000, proved / 1e3 / PROOFS);
      }
    } finally {
      Files.deleteIfExists(file);
      Files.delete(dir);
    }
  }

  private static String address(int i) {
    return Blake3.hex(new byte[] {(byte) i, (byte) (i >> 8), (byte) (i >> 16), (byte) (i >> 24)});
  }

  private static long used() throws InterruptedException {
    Runtime r = Runtime.getRuntime();
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      Thread.sleep(100);
      best = Math.min(best, r.totalMemory() - r.freeMemory());
    }
    return best;
  }
}
