package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A fleet aggregate ({@code sandbox.fleet/1}, WIRE.md §2.10): the merkle root over a contiguous run
 * of a log's receipts (leaf i = BLAKE3(0x00 ‖ receipt address i)), with per-class energy sums, the
 * worst provenance and the time span. {@code first_position} (our addition) is where in the node's
 * ledger the covered runs start, so that later aggregates from the same start extend this one and a
 * consistency proof joins them.
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
    long lastMs) {
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
          "last_ms");

  public FleetAggregate {
    Map<DeviceClass, Long> m = new EnumMap<>(DeviceClass.class);
    m.putAll(energyUj);
    energyUj = java.util.Collections.unmodifiableMap(m);
  }

  /** A receipt as stored: its envelope's address and its core. */
  public record Item(String address, Receipt receipt) {}

  /**
   * The aggregate over {@code receipts} (in log order) starting at ledger {@code firstPosition}.
   */
  public static FleetAggregate over(String fleetId, long firstPosition, List<Item> receipts) {
    if (receipts.isEmpty()) {
      throw new AttestException("a fleet aggregate needs at least one receipt");
    }
    Map<DeviceClass, Long> sums = new EnumMap<>(DeviceClass.class);
    Provenance worst = Provenance.HwShunt;
    long total = 0;
    long first = Long.MAX_VALUE;
    long last = 0;
    List<byte[]> leaves = new ArrayList<>(receipts.size());
    for (Item item : receipts) {
      Receipt r = item.receipt();
      for (Map.Entry<DeviceClass, ClassEnergy> e : r.energy().entrySet()) {
        sums.merge(e.getKey(), e.getValue().uj(), Math::addExact);
      }
      worst = worst.worst(r.energyProvenance());
      total = Math.addExact(total, r.totalUj());
      first = Math.min(first, r.startedMs());
      last = Math.max(last, r.endedMs());
      leaves.add(Hex.decode(item.address(), 32, "receipt address"));
    }
    return new FleetAggregate(
        fleetId,
        firstPosition,
        receipts.size(),
        Hex.encode(MerkleTree.blake3(leaves).root()),
        sums,
        worst,
        total,
        first,
        last);
  }

  /** The tree size and root, to check proofs against. */
  public TreeHead head() {
    return new TreeHead(treeSize, Hex.decode(root, 32, "fleet.root"));
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("schema", SCHEMA);
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
    return new FleetAggregate(
        r.string("fleet_id"),
        r.u64("first_position"),
        r.u64("tree_size"),
        r.hex32("root"),
        uj,
        Provenance.parse(r.string("energy_provenance"), "fleet.energy_provenance"),
        r.u64("total_uj"),
        r.u64("first_ms"),
        r.u64("last_ms"));
  }
}
