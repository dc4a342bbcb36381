package io.sandboxd.daemon.store;

import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetAggregate;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.Verification;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Receipts in ledger order, what fleet aggregates sum (issue 14), each checked before use. */
record LedgerReceipts(StoreDb store, PublicKey signer) {
  /** Ledger positions of the runs created in {@code [sinceMs, untilMs]}; empty when none. */
  Optional<long[]> range(long sinceMs, long untilMs) {
    return store.transact(
        "run store: cannot read the ledger",
        db -> positions(db, "ledger", "runs", sinceMs, untilMs));
  }

  /**
   * Positions in {@code ledger} from the first of a run (in {@code runs}) created at or after
   * {@code sinceMs} to the last of one created at or before {@code untilMs}; empty when none. The
   * table names are this class's constants, never input.
   */
  static Optional<long[]> positions(
      Connection db, String ledger, String runs, long sinceMs, long untilMs) throws SQLException {
    try (PreparedStatement st =
        db.prepareStatement(
            "SELECT (SELECT MIN(l.position) FROM "
                + ledger
                + " l JOIN "
                + runs
                + " r ON r.run_id = l.run_id WHERE r.created_ms >= ?),"
                + " (SELECT MAX(l.position) FROM "
                + ledger
                + " l JOIN "
                + runs
                + " r ON r.run_id = l.run_id WHERE r.created_ms <= ?)")) {
      st.setLong(1, sinceMs);
      st.setLong(2, untilMs);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        long from = rs.getLong(1);
        boolean none = rs.wasNull();
        long to = rs.getLong(2);
        none |= rs.wasNull();
        return !none && from <= to ? Optional.of(new long[] {from, to}) : Optional.empty();
      }
    }
  }

  /** The records of kind {@code ?1} at ledger positions {@code ?2..?3}, at most {@code ?4}. */
  static final String RECEIPTS =
      "SELECT position, run_id, envelope FROM "
          + RecordRows.byLedger("l.position BETWEEN ?2 AND ?3")
          + " WHERE +kind = ?1 ORDER BY position, seq LIMIT ?4";

  /** The receipts at ledger positions {@code from..to}, in ledger then seq order; at most max. */
  List<RunStore.FleetLeaf> leaves(long from, long to, long maxLeaves) {
    return store.transact(
        "run store: cannot read receipts",
        db -> {
          try (PreparedStatement st = db.prepareStatement(RECEIPTS)) {
            st.setString(1, RecordKind.RECEIPT.stored());
            st.setLong(2, from);
            st.setLong(3, to);
            st.setLong(4, maxLeaves);
            List<RunStore.FleetLeaf> out = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
              while (rs.next()) {
                Envelope env;
                try {
                  env = StoreEncoding.envelope(rs.getBytes(3));
                } catch (StoreEncodingException e) {
                  throw new TamperedRunException(rs.getString(2), "receipt: " + e.getMessage());
                }
                if (env.verify(Optional.of(signer)) instanceof Verification.Invalid inv) {
                  throw new TamperedRunException(
                      rs.getString(2), "receipt " + env.address() + ": " + inv.reason());
                }
                out.add(
                    new RunStore.FleetLeaf(
                        rs.getLong(1),
                        rs.getString(2),
                        new FleetAggregate.Item(env.address(), Receipt.fromCore(env.core()))));
              }
            }
            return out;
          }
        });
  }
}
