package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A fleet aggregate ({@code sandbox.fleet/1}, WIRE.md §2.10): the merkle root over a contiguous run
 * of a log's receipts (leaf i = BLAKE3(0x00 ‖ receipt address i)), with per-class energy sums, the
 * worst provenance and the time span. {@code first_position} (our addition) is where in the node's
 * ledger the covered runs start, so that later aggregates from the same start extend this one and a
 * consistency proof joins them.
 *
 * <p>The optional {@code durable} part (issue 23) is a second tree of the same leaf rule over the
 * node's own durable runs' receipts in durable-ledger order, from durable-ledger position {@code
 * durable.first_position}; the sums, provenance and time span cover both trees, so a detached
 * tenant counts in the fleet's totals. Without durable receipts the part is absent and the record
 * is byte-for-byte the earlier form.
 */
public record FleetAggregate(
    String fleetId,
    long firstPosition,
    long treeSize,
    String root,
    Map<DeviceClass, Long> energyUj,
    Provenance energyProvenance,
    long totalUj,
    long firstMs,
    long lastMs,
    Optional<Durable> durable) {
  public static final String SCHEMA = "sandbox.fleet/1";

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "fleet_id",
          "first_position",
          "tree_size",
          "root",
          "energy_uj",
          "energy_provenance",
          "total_uj",
          "first_ms",
          "last_ms",
          "durable");

  private static final Set<String> DURABLE_FIELDS = Set.of("first_position", "tree_size", "root");

  /** The durable runs' tree: where in the durable ledger it starts, its size and root. */
  public record Durable(long firstPosition, long treeSize, String root) {
    /** The tree size and root, to check proofs against. */
    public TreeHead head() {
      return new TreeHead(treeSize, Hex.decode(root, 32, "fleet.durable.root"));
    }
  }

  public FleetAggregate {
    Map<DeviceClass, Long> m = new EnumMap<>(DeviceClass.class);
    m.putAll(energyUj);
    energyUj = java.util.Collections.unmodifiableMap(m);
    java.util.Objects.requireNonNull(durable, "durable");
  }

  /** A receipt as stored: its envelope's address and its core. */
  public record Item(String address, Receipt receipt) {}

  /**
   * The aggregate over {@code receipts} (in log order) starting at ledger {@code firstPosition}.
   */
  public static FleetAggregate over(String fleetId, long firstPosition, List<Item> receipts) {
    return over(fleetId, firstPosition, receipts, 0, List.of());
  }

  /**
   * The aggregate over {@code receipts} (ledger order, from ledger {@code firstPosition}) and
   * {@code durableReceipts} (durable-ledger order, from durable position {@code durableFirst}); the
   * durable part is present when {@code durableReceipts} is not empty. One of them must be.
   */
  public static FleetAggregate over(
      String fleetId,
      long firstPosition,
      List<Item> receipts,
      long durableFirst,
      List<Item> durableReceipts) {
    if (receipts.isEmpty() && durableReceipts.isEmpty()) {
      throw new AttestException("a fleet aggregate needs at least one receipt");
    }
    Sums sums = new Sums();
    byte[] root = sums.tree(receipts);
    Optional<Durable> durable = Optional.empty();
    if (!durableReceipts.isEmpty()) {
      durable =
          Optional.of(
              new Durable(
                  durableFirst, durableReceipts.size(), Hex.encode(sums.tree(durableReceipts))));
    }
    return new FleetAggregate(
        fleetId,
        firstPosition,
        receipts.size(),
        Hex.encode(root),
        sums.uj,
        sums.worst,
        sums.total,
        sums.first,
        sums.last,
        durable);
  }

  /** The running sums over both trees' receipts. */
  private static final class Sums {
    final Map<DeviceClass, Long> uj = new EnumMap<>(DeviceClass.class);
    Provenance worst = Provenance.HwShunt;
    long total;
    long first = Long.MAX_VALUE;
    long last;

    /** Adds {@code receipts} to the sums; returns the root of the tree over their addresses. */
    byte[] tree(List<Item> receipts) {
      List<byte[]> leaves = new ArrayList<>(receipts.size());
      for (Item item : receipts) {
        Receipt r = item.receipt();
        for (Map.Entry<DeviceClass, ClassEnergy> e : r.energy().entrySet()) {
          uj.merge(e.getKey(), e.getValue().uj(), Math::addExact);
        }
        worst = worst.worst(r.energyProvenance());
        total = Math.addExact(total, r.totalUj());
        first = Math.min(first, r.startedMs());
        last = Math.max(last, r.endedMs());
        leaves.add(Hex.decode(item.address(), 32, "receipt address"));
      }
      return MerkleTree.blake3(leaves).root();
    }
  }

  /** The tree size and root, to check proofs against. */
  public TreeHead head() {
    return new TreeHead(treeSize, Hex.decode(root, 32, "fleet.root"));
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("fleet_id", fleetId);
    o.put("first_position", firstPosition);
    o.put("tree_size", treeSize);
    o.put("root", root);
    ObjectNode uj = o.putObject("energy_uj");
    for (Map.Entry<DeviceClass, Long> e : energyUj.entrySet()) {
      uj.put(e.getKey().jsonName(), e.getValue());
    }
    o.put("energy_provenance", energyProvenance.name());
    o.put("total_uj", totalUj);
    o.put("first_ms", firstMs);
    o.put("last_ms", lastMs);
    durable.ifPresent(
        d ->
            o.putObject("durable")
                .put("first_position", d.firstPosition())
                .put("tree_size", d.treeSize())
                .put("root", d.root()));
    return o;
  }

  /** Reads an aggregate core strictly. */
  public static FleetAggregate fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "fleet", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    Map<DeviceClass, Long> uj = new EnumMap<>(DeviceClass.class);
    JsonNode e = r.required("energy_uj");
    if (!e.isObject()) {
      throw new AttestException("fleet.energy_uj: expected an object");
    }
    for (var it = e.fields(); it.hasNext(); ) {
      var f = it.next();
      String path = "fleet.energy_uj." + f.getKey();
      uj.put(
          DeviceClass.parse(f.getKey(), path),
          JsonReader.integer(f.getValue(), path, 0, JsonReader.MAX_U64, JsonReader.RECORD));
    }
    Optional<Durable> durable = Optional.empty();
    if (core.has("durable")) {
      // Present means an object: a null would be a second encoding of "absent".
      JsonReader d =
          JsonReader.of(core.get("durable"), "fleet.durable", DURABLE_FIELDS, JsonReader.RECORD);
      long size = d.u64("tree_size");
      if (size < 1) {
        throw new AttestException("fleet.durable.tree_size: must be at least 1");
      }
      durable = Optional.of(new Durable(d.u64("first_position"), size, d.hex32("root")));
    }
    long treeSize = r.u64("tree_size");
    if (treeSize < 1 && durable.isEmpty()) {
      throw new AttestException("fleet.tree_size: must be at least 1 without a durable part");
    }
    return new FleetAggregate(
        r.string("fleet_id"),
        r.u64("first_position"),
        treeSize,
        r.hex32("root"),
        uj,
        Provenance.parse(r.string("energy_provenance"), "fleet.energy_provenance"),
        r.u64("total_uj"),
        r.u64("first_ms"),
        r.u64("last_ms"),
        durable);
  }
}
