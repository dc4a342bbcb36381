package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GrantsTextsTest extends StoreFileFixture {
  private static final String SHARED = "{\"compute\":{\"cpu_time_ms\":2000},\"host\":{}}";

  private RunRecord run(String runId, long createdMs, String grants) {
    return TestRuns.builder(
            key,
            runId,
            createdMs,
            List.of(),
            Map.of(),
            ("module " + runId).getBytes(StandardCharsets.UTF_8),
            "\"Completed\"",
            grants)
        .build();
  }

  private void fillThreeRuns() {
    try (RunStore s = RunStore.open(file(), key)) {
      s.append(run("run-a", 10, SHARED));
      s.append(run("run-b", 11, SHARED));
      s.append(run("run-c", 12, TestRuns.grantsOf("run-c")));
    }
  }

  private String one(String sql) throws Exception {
    try (Connection c = raw();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  @Test
  void runsUnderOneGrantsKeepItsTextOnceAndReadItBack() throws Exception {
    fillThreeRuns();
    assertEquals("2", one("SELECT COUNT(*) FROM grants_texts"));
    assertEquals("@,@,@", one("SELECT group_concat(grants) FROM runs ORDER BY run_id"));
    try (RunStore s = RunStore.open(file(), key)) {
      assertEquals(List.of(), s.verifyAll());
      assertEquals(SHARED, s.submission("run-a").orElseThrow().grantsJson());
      assertEquals(SHARED, s.submission("run-b").orElseThrow().grantsJson());
      assertEquals(TestRuns.grantsOf("run-c"), s.submission("run-c").orElseThrow().grantsJson());
    }
  }

  @Test
  void grantsWhoseIdIsNotTheirTextsAddressStayInTheRow() throws Exception {
    RunRecord r = run("run-x", 10, SHARED);
    RunRecord other =
        RunRecord.builder()
            .run(r.runId(), r.createdMs())
            .unit(r.unit(), "0".repeat(64))
            .outcomeJson(r.outcomeJson())
            .signed(r.receipt(), r.attestation(), r.segment())
            .submission(r.module(), SHARED, "run")
            .build();
    try (RunStore s = RunStore.open(file(), key)) {
      s.append(other);
    }
    assertEquals(SHARED, one("SELECT grants FROM runs"));
    assertEquals("0", one("SELECT COUNT(*) FROM grants_texts"));
  }

  /** Each way of changing what a run's grants are is damage to every run it touches. */
  @Test
  void aChangedMissingOrRedirectedGrantsTextIsDamage() throws Exception {
    String[][] cases = {
      {"UPDATE grants_texts SET text = '{\"compute\":{}}' WHERE text = '" + SHARED + "'", "a,b"},
      {"DELETE FROM grants_texts WHERE text = '" + SHARED + "'", "a,b"},
      {"UPDATE runs SET grants = '" + SHARED + "' WHERE run_id = 'run-c'", "c"},
      {
        "UPDATE runs SET grants_id = (SELECT grants_id FROM runs WHERE run_id = 'run-a')"
            + " WHERE run_id = 'run-c'",
        "c"
      },
    };
    for (String[] c : cases) {
      java.nio.file.Files.deleteIfExists(file());
      fillThreeRuns();
      TestRuns.change(file(), c[0]);
      try (RunStore s = RunStore.open(file(), key)) {
        List<StoreDamage> found = s.verifyAll();
        List<String> ids =
            found.stream().map(StoreDamage::runId).filter(id -> id.startsWith("run-")).toList();
        List<String> want = java.util.Arrays.stream(c[1].split(",")).map(x -> "run-" + x).toList();
        assertEquals(want, ids, c[0] + " -> " + found);
        for (String id : want) {
          assertTrue(s.run(id).orElseThrow().tampered().isPresent(), c[0]);
        }
        if (c[1].equals("a,b")) {
          assertThrows(TamperedRunException.class, () -> s.submission("run-a"), c[0]);
        }
      }
    }
  }
}
