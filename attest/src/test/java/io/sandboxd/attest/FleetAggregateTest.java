package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
}
