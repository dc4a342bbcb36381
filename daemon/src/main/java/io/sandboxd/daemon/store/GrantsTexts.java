package io.sandboxd.daemon.store;

import io.sandboxd.attest.StoredRun;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

/**
 * The {@code grants_texts} table: each canonical grants text once, under its address (which is its
 * grants_id). A run under such grants keeps {@link #REFERENCE} in its {@code runs.grants} column
 * instead of a copy of the text (about 330 bytes a hello run).
 */
final class GrantsTexts {
  private static final String TEXT = "SELECT text FROM grants_texts WHERE address = ?";

  private GrantsTexts() {}

  /** Migration 17's table. */
  static final List<String> DDL =
      List.of(
          "CREATE TABLE IF NOT EXISTS grants_texts (address TEXT PRIMARY KEY, text TEXT NOT NULL)");

  /**
   * What {@code runs.grants} holds for a run whose grants text is in this table under the run's
   * grants_id. No grants text is this (each is a JSON object), and rows from before hold the text
   * or, before the column existed, the empty string.
   */
  static final String REFERENCE = "@";

  /**
   * The {@code runs.grants} value for a run under {@code grantsJson} (whose address is {@code
   * address}, its text's BLAKE3): the text is put here once and the run refers to it when the
   * address is the run's grants_id, else the text itself is kept in the row.
   */
  static String store(StoreDb db, String grantsId, String grantsJson, String address)
      throws SQLException {
    if (grantsJson.isEmpty() || !address.equals(grantsId)) {
      return grantsJson;
    }
    PreparedStatement st =
        db.prepared("INSERT OR IGNORE INTO grants_texts (address, text) VALUES (?,?)");
    st.setString(1, address);
    st.setString(2, grantsJson);
    st.executeUpdate();
    return REFERENCE;
  }

  /**
   * The grants text of a row whose {@code runs.grants} is {@code stored}; empty if it is missing.
   */
  static Optional<String> text(Connection db, String grantsId, String stored) throws SQLException {
    if (!REFERENCE.equals(stored)) {
      return Optional.of(stored);
    }
    return StoreDb.first(db, TEXT, rs -> rs.getString(1), grantsId);
  }

  /**
   * The grants text of run {@code runId}, whose {@code runs.grants} is {@code stored}: the text
   * itself, or the one it refers to, which must be there and hash to the run's grants_id.
   *
   * @throws TamperedRunException when the text referred to is missing or not the grants_id's
   */
  static String require(Connection db, String runId, String grantsId, String stored)
      throws SQLException {
    Optional<String> text = text(db, grantsId, stored);
    Optional<String> why = problem(grantsId, stored, text);
    if (why.isPresent()) {
      throw new TamperedRunException(runId, "grants: " + why.get());
    }
    return text.orElseThrow();
  }

  /**
   * Why a row referring to its grants text is damaged: the text is missing or does not hash to the
   * run's grants_id (a row holding its own text is checked against its record by the caller).
   */
  static Optional<String> damage(Statements q, StoreAudit.RunRow row) throws SQLException {
    if (!REFERENCE.equals(row.grants())) {
      return Optional.empty();
    }
    Optional<String> text = q.first(TEXT, rs -> rs.getString(1), row.grantsId());
    return problem(row.grantsId(), row.grants(), text);
  }

  private static Optional<String> problem(String grantsId, String stored, Optional<String> text) {
    if (text.isEmpty()) {
      return Optional.of("its grants text " + grantsId + " is missing from grants_texts");
    }
    if (REFERENCE.equals(stored) && !StoredRun.textAddress(text.get()).equals(grantsId)) {
      return Optional.of("grants_texts holds a text for " + grantsId + " that does not hash to it");
    }
    return Optional.empty();
  }
}
