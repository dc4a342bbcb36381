package io.sandboxd.daemon.store;

import io.sandboxd.attest.SigningKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * One step of the run store's schema: it takes a store at {@code version - 1} to {@code version},
 * inside one transaction that also sets {@code PRAGMA user_version}.
 */
record StoreMigration(int version, String description, StoreMigration.Step step) {
  /** The work of a migration, on the store's connection, inside its transaction. */
  @FunctionalInterface
  interface Step {
    void apply(Connection db, SigningKey key) throws SQLException;
  }

  /** A migration that only runs DDL statements, in order. */
  static StoreMigration ddl(int version, String description, List<String> statements) {
    return new StoreMigration(
        version,
        description,
        (db, key) -> {
          try (Statement st = db.createStatement()) {
            for (String s : statements) {
              st.execute(s);
            }
          }
        });
  }
}
