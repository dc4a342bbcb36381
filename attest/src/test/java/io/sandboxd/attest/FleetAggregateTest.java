package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** {@code sandbox.fleet/1}: sums per class, worst provenance, the §2.10 root, strict reading. */
class FleetAggregateTest {
  static Receipt receipt(int i, Map<DeviceClass, ClassEnergy> energy) {
    return new Receipt(
        "run-" + i,
        Blake3.hex(new byte[] {(byte) i}),
        Blake3.hex(new byte[] {(byte) (i + 1)}),
        "S2",
        energy,
        0,
        List.of(),
        1,
        0,
        1,
        Receipt.IoUse.NONE,
        Receipt.NetUse.NONE,
        1000L * i,
        1000L * i + 5);
  }

  @Test
  void sumsWorstProvenanceAndRootOverTheReceiptAddresses() {
    SigningKey key = SigningKey.fromSeed(new byte[32]);
    List<FleetAggregate.Item> items = new ArrayList<>();
    List<byte[]> addrs = new ArrayList<>();
    for (int i = 1; i <= 5; i++) {
      Map<DeviceClass, ClassEnergy> e =
          i == 3
              ? Map.of(
                  DeviceClass.Cpu, new ClassEnergy(10, Provenance.ModelBased, "rapl", 1, 0),
                  DeviceClass.Gpu, new ClassEnergy(7, Provenance.HwShunt, "nvml", 1, 0))
              : Map.of(DeviceClass.Cpu, new ClassEnergy(i, Provenance.HwShunt, "rapl", 1, 0));
      Envelope env = Envelope.sign(receipt(i, e).toCore(), key);
      items.add(new FleetAggregate.Item(env.address(), receipt(i, e)));
      addrs.add(Hex.decode(env.address(), 32, "a"));
    }
    FleetAggregate a = FleetAggregate.over("sandboxd/n1", 4, items);
    assertEquals(1L + 2 + 10 + 4 + 5, a.energyUj().get(DeviceClass.Cpu));
    assertEquals(7L, a.energyUj().get(DeviceClass.Gpu));
    assertEquals(29, a.totalUj());
    assertEquals(Provenance.ModelBased, a.energyProvenance());
    assertEquals(5, a.treeSize());
    assertEquals(1000, a.firstMs());
    assertEquals(5005, a.lastMs());
    assertEquals(MerkleTree.blake3(addrs).head(), a.head());
    ObjectNode core = a.toCore();
    assertEquals(a, FleetAggregate.fromCore(core));
    ObjectNode extra = core.deepCopy();
    extra.put("bonus", 1);
    assertTrue(
        assertThrows(AttestException.class, () -> FleetAggregate.fromCore(extra))
            .getMessage()
            .contains("bonus"));
    ObjectNode badClass = core.deepCopy();
    ((ObjectNode) badClass.get("energy_uj")).put("Warp", 1);
    assertThrows(AttestException.class, () -> FleetAggregate.fromCore(badClass));
    assertThrows(AttestException.class, () -> FleetAggregate.over("x", 0, List.of()));
  }

  private static List<FleetAggregate.Item> items(SigningKey key, int from, int to, long uj) {
    List<FleetAggregate.Item> out = new ArrayList<>();
    for (int i = from; i <= to; i++) {
      Receipt r =
          receipt(
              i, Map.of(DeviceClass.Cpu, new ClassEnergy(uj, Provenance.HwShunt, "rapl", 1, 0)));
      out.add(new FleetAggregate.Item(Envelope.sign(r.toCore(), key).address(), r));
    }
    return out;
  }

  private static List<byte[]> addresses(List<FleetAggregate.Item> items) {
    return items.stream().map(i -> Hex.decode(i.address(), 32, "a")).toList();
  }

  @Test
  void theDurablePartIsItsOwnTreeAndCountsInEverySum() {
    SigningKey key = SigningKey.fromSeed(new byte[32]);
    List<FleetAggregate.Item> runs = items(key, 1, 3, 10);
    List<FleetAggregate.Item> durable = items(key, 7, 8, 1000);
    // A durable receipt with a model-based GPU class: provenance and classes come from both trees.
    Receipt gpu =
        receipt(
            9,
            Map.of(
                DeviceClass.Cpu, new ClassEnergy(1, Provenance.HwShunt, "rapl", 1, 0),
                DeviceClass.Gpu, new ClassEnergy(5, Provenance.ModelBased, "nvml", 1, 0)));
    List<FleetAggregate.Item> withGpu = new ArrayList<>(durable);
    withGpu.add(new FleetAggregate.Item(Envelope.sign(gpu.toCore(), key).address(), gpu));

    FleetAggregate a = FleetAggregate.over("sandboxd/n1", 4, runs, 2, withGpu);
    assertEquals(3, a.treeSize());
    assertEquals(MerkleTree.blake3(addresses(runs)).head(), a.head());
    FleetAggregate.Durable d = a.durable().orElseThrow();
    assertEquals(2, d.firstPosition());
    assertEquals(3, d.treeSize());
    assertEquals(MerkleTree.blake3(addresses(withGpu)).head(), d.head());
    assertEquals(3L * 10 + 2 * 1000 + 1, a.energyUj().get(DeviceClass.Cpu));
    assertEquals(5L, a.energyUj().get(DeviceClass.Gpu));
    assertEquals(3L * 10 + 2 * 1000 + 1 + 5, a.totalUj());
    assertEquals(Provenance.ModelBased, a.energyProvenance());
    assertEquals(1000, a.firstMs());
    assertEquals(9005, a.lastMs());

    // Round trip, through the canonical bytes.
    byte[] bytes = CanonicalJson.canonicalize(a.toCore());
    FleetAggregate back = FleetAggregate.fromCore(CanonicalJson.parse(bytes));
    assertEquals(a, back);
    assertArrayEquals(bytes, CanonicalJson.canonicalize(back.toCore()));

    // Only durable runs on the node: the main tree is empty, the aggregate still sums them.
    FleetAggregate only = FleetAggregate.over("sandboxd/n1", 0, List.of(), 0, durable);
    assertEquals(0, only.treeSize());
    assertEquals(2000, only.totalUj());
    assertEquals(only, FleetAggregate.fromCore(only.toCore()));
  }

  @Test
  void withoutDurableReceiptsTheAggregateIsTheEarlierFormByteForByte() {
    SigningKey key = SigningKey.fromSeed(new byte[32]);
    List<FleetAggregate.Item> runs = items(key, 1, 2, 3);
    FleetAggregate a = FleetAggregate.over("sandboxd/n1", 0, runs, 5, List.of());
    assertTrue(a.durable().isEmpty());
    ObjectNode core = a.toCore();
    assertTrue(!core.has("durable"), core.toString());
    // The earlier form, written field by field as it was: it reads, and re-encodes identically.
    ObjectNode earlier = CanonicalJson.mapper().createObjectNode();
    earlier.put("schema", "sandbox.fleet/1");
    earlier.put("fleet_id", "sandboxd/n1");
    earlier.put("first_position", 0);
    earlier.put("tree_size", 2);
    earlier.put("root", Hex.encode(MerkleTree.blake3(addresses(runs)).root()));
    earlier.putObject("energy_uj").put("Cpu", 6);
    earlier.put("energy_provenance", "HwShunt");
    earlier.put("total_uj", 6);
    earlier.put("first_ms", 1000);
    earlier.put("last_ms", 2005);
    assertArrayEquals(CanonicalJson.canonicalize(earlier), CanonicalJson.canonicalize(core));
    assertEquals(a, FleetAggregate.fromCore(earlier));
  }

  @Test
  void theDurablePartIsReadStrictly() {
    SigningKey key = SigningKey.fromSeed(new byte[32]);
    ObjectNode core =
        FleetAggregate.over("sandboxd/n1", 0, items(key, 1, 1, 1), 0, items(key, 2, 2, 1)).toCore();
    assertTrue(refused(core, c -> durable(c).put("bonus", 1)).contains("fleet.durable.bonus"));
    assertTrue(refused(core, c -> durable(c).remove("root")).contains("fleet.durable.root"));
    assertTrue(refused(core, c -> c.putNull("durable")).contains("fleet.durable"));
    assertTrue(
        refused(core, c -> durable(c).put("tree_size", 1.5)).contains("fleet.durable.tree_size"));
    assertTrue(
        refused(core, c -> durable(c).put("tree_size", 0)).contains("fleet.durable.tree_size"));
    Consumer<ObjectNode> noDurablePart =
        c -> {
          c.remove("durable");
          c.put("tree_size", 0);
        };
    assertTrue(refused(core, noDurablePart).contains("fleet.tree_size"));
    assertThrows(AttestException.class, () -> FleetAggregate.over("x", 0, List.of(), 0, List.of()));
  }

  private static String refused(ObjectNode core, Consumer<ObjectNode> change) {
    return Refusal.of(FleetAggregate::fromCore, core, change);
  }

  private static ObjectNode durable(ObjectNode core) {
    return (ObjectNode) core.get("durable");
  }
}
