package io.sandboxd.daemon.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Refusals, whose number a publisher decides, are kept in two files of bounded size, newest kept.
 */
class RefusalFileTest {
  @TempDir Path dir;

  @Test
  void aFloodOfRefusalsKeepsTheNewestInTwoBoundedFiles() throws Exception {
    RefusalFile refusals = new RefusalFile(dir, 1_000);
    java.util.Random random = new java.util.Random(67);
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      String line = "{\"n\":" + i + ",\"pad\":\"" + "x".repeat(random.nextInt(60)) + "\"}";
      refusals.append(line);
      lines.add(line);
      assertTrue(Files.size(refusals.file()) <= 1_000, "after " + i);
    }
    Path older = dir.resolve("refused.jsonl.1");
    assertTrue(Files.size(older) <= 1_000);
    List<String> kept = new ArrayList<>(Files.readAllLines(older));
    kept.addAll(Files.readAllLines(refusals.file()));
    // Whole lines, in order, ending with the newest, and nothing but the two files.
    assertEquals(lines.subList(lines.size() - kept.size(), lines.size()), kept);
    assertTrue(kept.size() > 20, "kept " + kept.size());
    try (var files = Files.list(dir)) {
      assertEquals(2, files.count());
    }
  }
}
