package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The fleet outbox answers every record without a proof, oldest first, once each until proven,
 * while reading each table a bounded rowid range at a time from the first row not yet shipped.
 */
class FleetOutboxTest extends StoreFileFixture {
  /**
   * Seeded rounds of polls, proofs in any order (some of records not yet polled), new runs and
   * restarts, against a model: the records in store order less those proven.
   */
  @Test
  void answersWhatIsUnprovenInStoreOrderWhateverOrderProofsComeIn() throws Exception {
    fillInBothLayouts(12, "run-00005");
    for (long seed = 1; seed <= 4; seed++) {
      Random random = new Random(seed);
      Set<String> proven = new HashSet<>();
      try (RunStore s = RunStore.open(file(), key)) {
        int next = 1_000 * (int) seed;
        FleetOutbox outbox = outbox(s, random);
        for (int round = 0; round < 60; round++) {
          int limit = 1 + random.nextInt(12);
          List<String> model = new ArrayList<>(allInStoreOrder());
          model.removeAll(proven);
          List<String> expected = model.subList(0, Math.min(limit, model.size()));
          String at = "seed " + seed + " round " + round + " limit " + limit;
          // A poll answers the first of them; those after, the next polls.
          List<String> got = addresses(outbox.unshipped(limit));
          for (int again = 1; got.size() < expected.size(); again++) {
            assertEquals(expected.subList(0, got.size()), got, at + " poll " + again);
            assertTrue(
                again < 200, at + ": the polls never read through: " + got + " of " + expected);
            got = addresses(outbox.unshipped(limit));
          }
          assertEquals(expected, got, at);
          // Proofs for some of what was answered, in any order, and now and then one ahead.
          List<String> some = new ArrayList<>(got);
          Collections.shuffle(some, random);
          for (String a : some.subList(0, random.nextInt(some.size() + 1))) {
            prove(outbox, a, proven);
          }
          if (!model.isEmpty() && random.nextInt(4) == 0) {
            prove(outbox, model.get(random.nextInt(model.size())), proven);
          }
          if (random.nextInt(10) == 0) {
            fill(s, next, 2);
            next += 2;
          }
          if (random.nextInt(15) == 0) {
            outbox = outbox(s, random); // a restart reads from the start
          }
        }
        // Everything proven: nothing is answered, by this outbox or a new one.
        for (String a : allInStoreOrder()) {
          prove(outbox, a, proven);
        }
        assertEquals(List.of(), outbox.unshipped(10));
        assertEquals(List.of(), new FleetOutbox(s, 3, 2, 100).unshipped(10));
      }
      sql("DELETE FROM fleet_proofs WHERE 1 = 1");
    }
  }

  /**
   * A poll reads at most so many rowid ranges, however far it is from reading through, and the next
   * goes on from where it stopped: a start's first polls read through a store whose records are all
   * proven a few ranges each, letting appends in between.
   */
  @Test
  void aPollReadsABoundedNumberOfRangesAndTheNextGoesOn() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, 40); // 120 records, 30 ranges of 4
      Set<String> proven = new HashSet<>();
      FleetOutbox first = new FleetOutbox(s, 4, 2, 100);
      for (String a : allInStoreOrder().subList(0, 119)) {
        prove(first, a, proven);
      }
      String last = allInStoreOrder().get(119);
      FleetOutbox outbox = new FleetOutbox(s, 4, 2, 3);
      for (int poll = 1; poll < 10; poll++) {
        assertEquals(List.of(), outbox.unshipped(1000), "poll " + poll);
        assertEquals(3L * poll, outbox.chunksRead());
        assertTrue(outbox.behind(), "poll " + poll + " stopped at its bound");
      }
      assertEquals(List.of(last), addresses(outbox.unshipped(1000)));
      assertEquals(30, outbox.chunksRead());
      assertFalse(outbox.behind());
    }
  }

  /**
   * A record the aggregator never proves is looked up again by its rowid: the polls after it read
   * only the rows stored since, however many were stored and proven after it; past the rows it can
   * hold, it reads on from the first it could not.
   */
  @Test
  void aRecordNeverProvenCostsALookupAPollNotAReadOfEveryRowAfterIt() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, 40); // 120 records
      FleetOutbox outbox = new FleetOutbox(s, 4, 2, 100);
      Set<String> proven = new HashSet<>();
      List<String> all = allInStoreOrder();
      String stuck = all.get(0);
      for (String a : all.subList(1, all.size())) {
        prove(outbox, a, proven);
      }
      assertEquals(List.of(stuck), addresses(outbox.unshipped(1000)));
      long first = outbox.chunksRead();
      assertTrue(first >= 30, "the first poll reads every row once: " + first);
      for (int poll = 0; poll < 5; poll++) {
        assertEquals(List.of(stuck), addresses(outbox.unshipped(1000)));
      }
      assertEquals(first, outbox.chunksRead(), "nothing stored since: no range read again");
      fill(s, 40, 1);
      List<String> now = allInStoreOrder();
      List<String> expected = new ArrayList<>(List.of(stuck));
      expected.addAll(now.subList(all.size(), now.size()));
      assertEquals(expected, addresses(outbox.unshipped(1000)));
      // Three records never proven, two held: polls go on from the third and still answer all.
      for (int poll = 0; poll < 3; poll++) {
        assertEquals(expected, addresses(outbox.unshipped(1000)));
      }
      prove(outbox, stuck, proven);
      assertEquals(expected.subList(1, 4), addresses(outbox.unshipped(1000)));
    }
  }

  @Test
  void aProofRemovedBehindTheOutboxIsFoundAgainByTheNextStart() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, 4);
      FleetOutbox outbox = new FleetOutbox(s, 2, 2, 100);
      Set<String> proven = new HashSet<>();
      for (String a : allInStoreOrder()) {
        prove(outbox, a, proven);
      }
      assertEquals(List.of(), outbox.unshipped(5));
      String first = allInStoreOrder().get(0);
      sql("DELETE FROM fleet_proofs WHERE address = '" + first + "'");
      assertEquals(List.of(first), addresses(new FleetOutbox(s, 2, 2, 100).unshipped(5)));
    }
  }

  /**
   * However many rows a table holds, a poll finds its ends from the b-tree's ends and searches a
   * range of rowids: it never scans a table.
   */
  @Test
  void aPollSearchesRowidRangesAndNeverScansATable() throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, 3);
      List<List<String>> queries = new FleetOutbox(s).queries();
      assertEquals(4, queries.size());
      try (Connection c = raw()) {
        for (List<String> table : queries) {
          for (String q : table) {
            for (String step : plan(c, q)) {
              boolean scan =
                  step.startsWith("SCAN ")
                      && !step.equals("SCAN CONSTANT ROW")
                      && !step.startsWith("SCAN json_each VIRTUAL TABLE"); // the rowids asked for
              assertFalse(scan || step.contains("AUTOMATIC"), step + " in the plan of " + q);
            }
          }
          List<String> chunk = plan(c, table.get(1));
          assertTrue(
              chunk.stream().anyMatch(p -> p.contains("INTEGER PRIMARY KEY (rowid>? AND rowid<?)")),
              "a rowid range in " + chunk);
          List<String> again = plan(c, table.get(2));
          assertTrue(
              again.stream().anyMatch(p -> p.contains("INTEGER PRIMARY KEY (rowid=?)")),
              "rowid lookups in " + again);
        }
      }
    }
  }

  private static List<String> plan(Connection c, String query) throws Exception {
    List<String> plan = new ArrayList<>();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("EXPLAIN QUERY PLAN " + query)) {
      while (rs.next()) {
        plan.add(rs.getString(4));
      }
    }
    assertFalse(plan.isEmpty(), query);
    return plan;
  }

  /** An outbox with seeded chunk and pending bounds small enough to be passed often. */
  private static FleetOutbox outbox(RunStore s, Random random) {
    return new FleetOutbox(s, 1 + random.nextInt(5), 1 + random.nextInt(6), 1 + random.nextInt(8));
  }

  private void prove(FleetOutbox outbox, String address, Set<String> proven) {
    outbox.prove(address, 1, "{}");
    proven.add(address);
  }

  /** Every single-step record's address: those kept before schema 23 first, each by rowid. */
  private List<String> allInStoreOrder() throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = raw();
        Statement st = c.createStatement()) {
      for (String q :
          List.of(
              "SELECT address FROM records ORDER BY rowid",
              "SELECT address FROM run_records ORDER BY id")) {
        try (ResultSet rs = st.executeQuery(q)) {
          while (rs.next()) {
            out.add(rs.getString(1));
          }
        }
      }
    }
    return out;
  }

  private static List<String> addresses(List<FleetOutbox.Unshipped> unshipped) {
    List<String> out = new ArrayList<>();
    for (FleetOutbox.Unshipped u : unshipped) {
      out.add(u.address());
    }
    return out;
  }
}
