package io.sandboxd.daemon.store;

import io.sandboxd.attest.SigningKey;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import org.junit.jupiter.api.io.TempDir;

/** A store file in the test's temporary folder, one signing key, and runs and edits made to it. */
abstract class StoreFileFixture {
  @TempDir Path tmp;

  final SigningKey key = SigningKey.generate();

  Path file() {
    return tmp.resolve("runs.db");
  }

  /** A plain connection to the store file, beside the store's own. */
  Connection raw() throws Exception {
    return DriverManager.getConnection("jdbc:sqlite:" + file());
  }

  void fill(RunStore store, int from, int n) {
    TestRuns.fill(store, key, from, n);
  }

  void sql(String statement) throws Exception {
    TestRuns.change(file(), statement);
  }

  /**
   * Moves the records of the runs before {@code firstNew} back to where a store before schema 23
   * kept them.
   */
  void oldLayout(String firstNew) throws Exception {
    String before = "run_id < '" + firstNew + "'";
    sql(
        "INSERT INTO records (address, run_id, kind, seq, envelope)"
            + " SELECT address, run_id, kind, seq, envelope FROM run_records WHERE "
            + before);
    sql("DELETE FROM run_records WHERE " + before);
    sql("UPDATE runs SET records_at = NULL, records_n = NULL WHERE " + before);
  }

  /**
   * Stores runs 0 .. {@code n - 1}, then moves those before {@code firstNew} to the layout before
   * schema 23: a store holding both.
   */
  void fillInBothLayouts(int n, String firstNew) throws Exception {
    try (RunStore s = RunStore.open(file(), key)) {
      fill(s, 0, n);
    }
    oldLayout(firstNew);
  }
}
