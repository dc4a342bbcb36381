package io.sandboxd.daemon.fleet;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ConsistencyProof;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.FleetAggregate;
import io.sandboxd.attest.Hex;
import io.sandboxd.attest.MerkleTree;
import io.sandboxd.attest.Verification;
import io.sandboxd.daemon.store.LogInputException;
import io.sandboxd.daemon.store.LogNotFoundException;
import io.sandboxd.daemon.store.RunStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The node's answers about its log and its fleet aggregates (issue 14): checkpoints, inclusion and
 * consistency proofs of the node log, and {@code sandbox.fleet/1} aggregates over its receipts.
 */
public final class FleetRecords {
  /** Most receipts one aggregate covers (the proof is built in memory); narrow with since/until. */
  static final long MAX_AGGREGATE_RECEIPTS = 262_144;

  /** Largest aggregate envelope a client may send back, in characters. */
  static final int MAX_AGGREGATE_CHARS = 64 * 1024;

  private final RunStore store;

  public FleetRecords(RunStore store) {
    this.store = store;
  }

  public RunStore.LogNote checkpoint() {
    return store.logCheckpoint();
  }

  public String proveInclusion(String address) {
    RunStore.LogInclusion p = store.proveInLog(address);
    return CanonicalJson.canonicalString(
        FleetDocs.logProof(p.note(), p.address(), p.kind(), p.proof()));
  }

  public String proveConsistency(long oldSize, long newSize) {
    RunStore.LogConsistency c = store.logConsistency(oldSize, newSize);
    return CanonicalJson.canonicalString(
        FleetDocs.logConsistency(c.oldNote(), c.newNote(), c.proof()));
  }

  /**
   * The signed aggregate of the runs created in [sinceMs, untilMs] (0: unbounded above): the
   * single-step runs' receipts in ledger order and, in its durable part, the durable runs' receipts
   * in durable-ledger order (issue 23), so that a detached tenant counts in the totals.
   */
  public Envelope aggregate(long sinceMs, long untilMs) {
    long until = untilMs == 0 ? Long.MAX_VALUE : untilMs;
    if (until < sinceMs) {
      throw new LogInputException("until_ms " + untilMs + " is before since_ms " + sinceMs);
    }
    Optional<long[]> range = store.fleetRange(sinceMs, until);
    Optional<long[]> durableRange = store.durableFleetRange(sinceMs, until);
    if (range.isEmpty() && durableRange.isEmpty()) {
      throw new LogNotFoundException(
          "no stored runs were created between "
              + sinceMs
              + " and "
              + (untilMs == 0 ? "now" : untilMs));
    }
    List<RunStore.FleetLeaf> leaves =
        range.isEmpty()
            ? List.of()
            : store.fleetLeaves(range.get()[0], range.get()[1], MAX_AGGREGATE_RECEIPTS + 1);
    List<RunStore.FleetLeaf> durable =
        durableRange.isEmpty()
            ? List.of()
            : store.durableFleetLeaves(
                durableRange.get()[0], durableRange.get()[1], MAX_AGGREGATE_RECEIPTS + 1);
    if (leaves.size() > MAX_AGGREGATE_RECEIPTS || durable.size() > MAX_AGGREGATE_RECEIPTS) {
      throw new LogInputException(
          "more than "
              + MAX_AGGREGATE_RECEIPTS
              + " receipts in range: narrow it with --since/--until");
    }
    if (leaves.isEmpty() && durable.isEmpty()) {
      throw new LogNotFoundException("the runs in range have no receipts");
    }
    // With no single-step run in range the main tree is empty at the ledger's end.
    long first = range.map(r -> r[0]).orElseGet(store::ledgerSize);
    FleetAggregate agg =
        FleetAggregate.over(
            store.logOrigin(),
            first,
            leaves.stream().map(RunStore.FleetLeaf::item).toList(),
            durableRange.map(r -> r[0]).orElse(0L),
            durable.stream().map(RunStore.FleetLeaf::item).toList());
    return store.sign(agg.toCore());
  }

  /**
   * The inclusion proof of every receipt of {@code runId} in {@code aggregateJson}, or (with {@code
   * oldAggregateJson} and no run) the consistency proof from the older aggregate to it.
   */
  public String prove(String runId, String aggregateJson, String oldAggregateJson) {
    Held now = held(aggregateJson, "aggregate");
    if (!oldAggregateJson.isEmpty()) {
      if (!runId.isEmpty()) {
        throw new LogInputException("run_id, old_aggregate: give one (inclusion or consistency)");
      }
      Held old = held(oldAggregateJson, "old_aggregate");
      if (old.agg().firstPosition() != now.agg().firstPosition()) {
        throw new LogInputException(
            "old_aggregate starts at ledger position "
                + old.agg().firstPosition()
                + ", aggregate at "
                + now.agg().firstPosition()
                + ": not the same growing log");
      }
      if (old.agg().treeSize() > now.agg().treeSize()) {
        throw new LogInputException(
            "old_aggregate has "
                + old.agg().treeSize()
                + " receipts, more than aggregate's "
                + now.agg().treeSize());
      }
      if (old.agg().treeSize() == 0) {
        throw new LogInputException(
            "old_aggregate has no single-step receipts: RFC 9162 has no proof from an empty tree");
      }
      Optional<ConsistencyProof> durableProof = Optional.empty();
      if (old.agg().durable().isPresent()) {
        FleetAggregate.Durable od = old.agg().durable().get();
        FleetAggregate.Durable nd =
            now.agg()
                .durable()
                .orElseThrow(
                    () ->
                        new LogInputException(
                            "old_aggregate has a durable part, aggregate has none"));
        if (od.firstPosition() != nd.firstPosition() || od.treeSize() > nd.treeSize()) {
          throw new LogInputException(
              "old_aggregate's durable part (from "
                  + od.firstPosition()
                  + ", "
                  + od.treeSize()
                  + " receipts) is not a prefix of aggregate's (from "
                  + nd.firstPosition()
                  + ", "
                  + nd.treeSize()
                  + ")");
        }
        durableProof = Optional.of(now.durableTree().consistencyProof((int) od.treeSize()));
      }
      return CanonicalJson.canonicalString(
          FleetDocs.fleetConsistency(
              old.envelope().address(),
              now.envelope().address(),
              now.tree().consistencyProof((int) old.agg().treeSize()),
              durableProof));
    }
    if (runId.isEmpty()) {
      throw new LogInputException("run_id: name the run to prove (or give old_aggregate)");
    }
    List<FleetDocs.ReceiptProof> proofs = new ArrayList<>();
    for (int i = 0; i < now.leaves().size(); i++) {
      RunStore.FleetLeaf l = now.leaves().get(i);
      if (l.runId().equals(runId)) {
        proofs.add(new FleetDocs.ReceiptProof(l.item().address(), now.tree().inclusionProof(i)));
      }
    }
    for (int i = 0; i < now.durableLeaves().size(); i++) {
      RunStore.FleetLeaf l = now.durableLeaves().get(i);
      if (l.runId().equals(runId)) {
        proofs.add(
            new FleetDocs.ReceiptProof(
                l.item().address(), now.durableTree().inclusionProof(i), true));
      }
    }
    if (proofs.isEmpty()) {
      throw new LogNotFoundException(
          "run " + runId + " is not in aggregate " + now.envelope().address());
    }
    return CanonicalJson.canonicalString(
        FleetDocs.fleetProof(now.envelope().address(), runId, proofs));
  }

  /** An aggregate this node signed, with the ledger's receipts it covers (checked to match). */
  private record Held(
      Envelope envelope,
      FleetAggregate agg,
      List<RunStore.FleetLeaf> leaves,
      MerkleTree tree,
      List<RunStore.FleetLeaf> durableLeaves,
      MerkleTree durableTree) {}

  private Held held(String json, String field) {
    if (json.length() > MAX_AGGREGATE_CHARS) {
      throw new LogInputException(field + ": more than " + MAX_AGGREGATE_CHARS + " characters");
    }
    Envelope env;
    FleetAggregate agg;
    try {
      env = Envelope.fromJson(CanonicalJson.parse(json));
      agg = FleetDocs.aggregate(env, field);
    } catch (AttestException e) {
      // The client's input, not a fault here: its message is all the client needs.
      throw new LogInputException(field + ": " + e.getMessage());
    }
    if (env.verify(Optional.of(store.publicKey())) instanceof Verification.Invalid inv) {
      throw new LogInputException(field + ": not an aggregate of this node: " + inv.reason());
    }
    if (!agg.fleetId().equals(store.logOrigin())) {
      throw new LogInputException(
          field + ": fleet_id " + agg.fleetId() + " is not this node's log " + store.logOrigin());
    }
    if ((agg.treeSize() < 1 && agg.durable().isEmpty())
        || agg.treeSize() > MAX_AGGREGATE_RECEIPTS) {
      throw new LogInputException(field + ": tree_size " + agg.treeSize() + " out of range");
    }
    List<RunStore.FleetLeaf> leaves =
        store.fleetLeaves(agg.firstPosition(), Long.MAX_VALUE, agg.treeSize());
    List<byte[]> raw = new ArrayList<>(leaves.size());
    for (RunStore.FleetLeaf l : leaves) {
      raw.add(Hex.decode(l.item().address(), 32, "receipt"));
    }
    MerkleTree tree = MerkleTree.blake3(raw);
    if (leaves.size() != agg.treeSize() || !Hex.encode(tree.root()).equals(agg.root())) {
      throw new LogInputException(
          field
              + ": its root does not match this node's receipts from ledger position "
              + agg.firstPosition());
    }
    List<RunStore.FleetLeaf> durable = List.of();
    MerkleTree durableTree = MerkleTree.blake3(List.of());
    if (agg.durable().isPresent()) {
      FleetAggregate.Durable d = agg.durable().get();
      if (d.treeSize() > MAX_AGGREGATE_RECEIPTS) {
        throw new LogInputException(
            field + ": durable.tree_size " + d.treeSize() + " out of range");
      }
      durable = store.durableFleetLeaves(d.firstPosition(), Long.MAX_VALUE, d.treeSize());
      durableTree = MerkleTree.blake3(addresses(durable));
      if (durable.size() != d.treeSize()) {
        throw new LogInputException(
            field
                + ": durable.tree_size "
                + d.treeSize()
                + " but this node holds "
                + durable.size()
                + " durable receipts from durable-ledger position "
                + d.firstPosition());
      }
      if (!Hex.encode(durableTree.root()).equals(d.root())) {
        throw new LogInputException(
            field
                + ": durable.root does not match this node's durable receipts from durable-ledger"
                + " position "
                + d.firstPosition());
      }
    }
    return new Held(env, agg, leaves, tree, durable, durableTree);
  }

  private static List<byte[]> addresses(List<RunStore.FleetLeaf> leaves) {
    List<byte[]> raw = new ArrayList<>(leaves.size());
    for (RunStore.FleetLeaf l : leaves) {
      raw.add(Hex.decode(l.item().address(), 32, "receipt"));
    }
    return raw;
  }
}
