package io.sandboxd.daemon.store;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetAggregate;
import io.sandboxd.attest.PublicKey;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.attest.Verification;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Durable runs' receipts in durable-ledger order, what a fleet aggregate's durable part sums (issue
 * 23): for each durable-ledger position, the receipt its execute segment names, when this node
 * signed that segment (an imported run's earlier segments are other hosts' energy, counted in their
 * aggregates). Each segment and receipt is checked before use; one that is missing, edited or not
 * validly signed is refused naming its durable-ledger position.
 */
record DurableReceipts(StoreDb store, PublicKey signer) {
  /**
   * Durable-ledger positions from the first segment of a durable run created at or after {@code
   * sinceMs} through the last of one created at or before {@code untilMs}; empty when none.
   */
  Optional<long[]> range(long sinceMs, long untilMs) {
    return store.transact(
        "run store: cannot read the durable ledger",
        db -> {
          if (!StoreSchema.hasTable(db, "durable_ledger")) {
            return Optional.<long[]>empty();
          }
          return LedgerReceipts.positions(db, "durable_ledger", "durable_runs", sinceMs, untilMs);
        });
  }

  /** This node's durable receipts at durable positions {@code from..to}, in order; at most max. */
  List<RunStore.FleetLeaf> leaves(long from, long to, long maxLeaves) {
    return store.transact(
        "run store: cannot read durable receipts",
        db -> {
          List<RunStore.FleetLeaf> out = new ArrayList<>();
          if (!StoreSchema.hasTable(db, "durable_ledger") || maxLeaves <= 0) {
            return out;
          }
          try (PreparedStatement st =
              db.prepareStatement(
                  "SELECT l.position, l.run_id, l.address, s.envelope, rec.envelope"
                      + " FROM durable_ledger l LEFT JOIN durable_segments s"
                      + " ON s.run_id = l.run_id AND s.seq = l.seq"
                      + " LEFT JOIN durable_records rec ON rec.run_id = l.run_id"
                      + " AND rec.address = json_extract(s.envelope, '$.core.receipt')"
                      + " WHERE l.position BETWEEN ? AND ? ORDER BY l.position")) {
            st.setLong(1, from);
            st.setLong(2, to);
            try (ResultSet rs = st.executeQuery()) {
              while (rs.next() && out.size() < maxLeaves) {
                leaf(
                        rs.getLong(1),
                        rs.getString(2),
                        rs.getString(3),
                        rs.getString(4),
                        rs.getString(5))
                    .ifPresent(out::add);
              }
            }
          }
          return out;
        });
  }

  private Optional<RunStore.FleetLeaf> leaf(
      long position, String runId, String segmentAddress, String segmentText, String receiptText) {
    String at = "durable ledger position " + position;
    if (segmentText == null) {
      throw new TamperedRunException(runId, at + ": segment " + segmentAddress + " is missing");
    }
    String named;
    try {
      Envelope seg = Envelope.fromJson(CanonicalJson.parse(segmentText));
      if (!seg.publicKey().equals(signer.hex())) {
        return Optional.empty(); // another host's segment of an imported run
      }
      if (!seg.address().equals(segmentAddress)
          || seg.verify(Optional.of(signer)) instanceof Verification.Invalid) {
        throw new TamperedRunException(runId, at + ": segment " + segmentAddress + " was edited");
      }
      named = RunSegment.fromCore(seg.core()).receipt();
    } catch (AttestException e) {
      throw new TamperedRunException(
          runId,
          at + ": segment " + segmentAddress + " was edited or is unreadable: " + e.getMessage());
    }
    if (named == null) {
      return Optional.empty(); // a suspend or other segment: no energy of its own
    }
    if (receiptText == null) {
      throw new TamperedRunException(runId, at + ": receipt " + named + " is missing");
    }
    try {
      Envelope env = Envelope.fromJson(CanonicalJson.parse(receiptText));
      if (!env.address().equals(named)) {
        throw new TamperedRunException(
            runId, at + ": receipt " + named + " was edited (it hashes to " + env.address() + ")");
      }
      if (env.verify(Optional.of(signer)) instanceof Verification.Invalid inv) {
        // An edited core keeps its stated address; the signature check finds it.
        throw new TamperedRunException(
            runId, at + ": receipt " + named + " was edited or mis-signed: " + inv.reason());
      }
      return Optional.of(
          new RunStore.FleetLeaf(
              position, runId, new FleetAggregate.Item(named, Receipt.fromCore(env.core()))));
    } catch (AttestException e) {
      // Envelope.fromJson checks the address: an edited core is refused here.
      throw new TamperedRunException(
          runId, at + ": receipt " + named + " was edited or is unreadable: " + e.getMessage());
    }
  }
}
