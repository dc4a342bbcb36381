package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wabt.Wat2Wasm;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Capture and restore on bare instances: everything the guest can observe (memory, non-exported
 * mutable globals, a grown and re-filled table, dropped data and element segments) reads the same
 * on the restored instance as on the captured one, and differently on a fresh one.
 */
class InstanceSnapshotTest {
  static final UnitCompiler COMPILER = new UnitCompiler(4);

  static final String WAT =
      """
      (module
        (memory 1 16)
        (global $g32 (mut i32) (i32.const 0))
        (global $g64 (mut i64) (i64.const 0))
        (global $gf (mut f64) (f64.const 0))
        (global $fixed i32 (i32.const 7))
        (type $r (func (result i32)))
        (table $t 1 10 funcref)
        (elem $pe func $a $b)
        (data $pd "passive")
        (data (i32.const 0) "active!")
        (func $a (result i32) (i32.const 11))
        (func $b (result i32) (i32.const 22))
        (func (export "mutate")
          (global.set $g32 (i32.const -5))
          (global.set $g64 (i64.const 0x123456789abcdef0))
          (global.set $gf (f64.const 2.5))
          (drop (table.grow $t (ref.null func) (i32.const 2)))
          (table.init $t $pe (i32.const 1) (i32.const 0) (i32.const 2))
          (elem.drop $pe)
          (memory.init $pd (i32.const 100) (i32.const 0) (i32.const 7))
          (data.drop $pd)
          (drop (memory.grow (i32.const 3)))
          (memory.fill (i32.const 0) (i32.const 0) (i32.const 65536))
          (i64.store (i32.const 131072) (i64.const 99)))
        (func (export "poke") (param i32 i64) (i64.store (local.get 0) (local.get 1)))
        (func (export "load") (param i32) (result i64) (i64.load (local.get 0)))
        (func (export "g32") (result i32) (global.get $g32))
        (func (export "g64") (result i64) (global.get $g64))
        (func (export "gf") (result f64) (global.get $gf))
        (func (export "call") (param i32) (result i32) (call_indirect (type $r) (local.get 0)))
        (func (export "size") (result i32) (table.size $t))
        (func (export "pages") (result i32) (memory.size))
        (func (export "init_data") (memory.init $pd (i32.const 200) (i32.const 0) (i32.const 1)))
        (func (export "init_elem") (table.init $t $pe (i32.const 0) (i32.const 0) (i32.const 1))))
      """;

  static final CompiledUnit UNIT = COMPILER.compile(Wat2Wasm.parse(WAT));

  static Instance fresh(CompiledUnit unit) {
    return PreparedInstance.prepare(unit, new InstanceShape(16, 64L << 20)).instance();
  }

  /** A fresh instance of {@link #UNIT} after its {@code mutate} export ran. */
  static Instance mutated() {
    Instance i = fresh(UNIT);
    call(i, "mutate");
    return i;
  }

  static long call(Instance i, String export, long... args) {
    long[] r = i.export(export).apply(args);
    return r == null || r.length == 0 ? 0 : r[0];
  }

  static boolean traps(Instance i, String export) {
    try {
      i.export(export).apply();
      return false;
    } catch (RuntimeException e) {
      return true;
    }
  }

  /** What the guest can observe, as one string. */
  static String observe(Instance i, int[] addrs) {
    StringBuilder b = new StringBuilder();
    b.append(call(i, "g32")).append(' ').append(call(i, "g64")).append(' ');
    b.append(call(i, "gf")).append(' ').append(call(i, "size")).append(' ');
    b.append(call(i, "pages")).append(' ');
    for (int slot = 0; slot < call(i, "size"); slot++) {
      try {
        b.append(call(i, "call", slot));
      } catch (RuntimeException e) {
        b.append("trap");
      }
      b.append(',');
    }
    for (int a : addrs) {
      try {
        b.append(call(i, "load", a)).append(',');
      } catch (RuntimeException e) {
        b.append("trap,");
      }
    }
    return b.toString();
  }

  @Test
  void aRestoredInstanceBehavesAsTheCapturedOne() {
    long seed = new Random().nextLong();
    Random rnd = new Random(seed);
    Instance original = mutated();
    int[] addrs = new int[40];
    for (int k = 0; k < addrs.length; k++) {
      addrs[k] = 65536 + rnd.nextInt(3 * 65536 - 8);
      call(original, "poke", addrs[k], rnd.nextLong());
    }
    addrs[0] = 0; // "active!" was cleared: a zero page that a fresh instance has data in
    addrs[1] = 100; // the dropped passive segment's copy
    InstanceSnapshot snap = InstanceSnapshot.capture(original, UNIT.address(), null);

    Instance restored = fresh(UNIT);
    Instance untouched = fresh(UNIT);
    String before = observe(untouched, addrs);
    snap.restore(restored, UNIT.address());
    String want = observe(original, addrs);
    assertEquals(want, observe(restored, addrs), "seed " + seed);
    assertNotEquals(want, before, "a fresh instance reads differently");
    assertTrue(traps(restored, "init_data"), "the data segment stays dropped");
    assertTrue(traps(restored, "init_elem"), "the element segment stays dropped");
    assertTrue(!traps(untouched, "init_data") && !traps(untouched, "init_elem"));
    assertEquals(java.util.Set.of(0), snap.droppedData(), "passive segment 0 dropped");
    assertEquals(java.util.Set.of(0), snap.droppedElements());
    assertEquals(3, snap.globals().size(), "three mutable globals, the immutable one not");
    assertTrue(snap.pageAddress(0).isEmpty(), "the cleared page is a zero page");

    // A second capture of the restored instance is the same snapshot, byte for byte.
    assertEquals(
        snap.address(), InstanceSnapshot.capture(restored, UNIT.address(), null).address());
  }

  @Test
  void aCaptureAgainstThePreviousReusesUnchangedPages() {
    Instance i = mutated();
    InstanceSnapshot first = InstanceSnapshot.capture(i, UNIT.address(), null);
    call(i, "poke", 3 * 65536 + 8, 7);
    InstanceSnapshot second = InstanceSnapshot.capture(i, UNIT.address(), first);
    assertEquals(first.pageAddress(2), second.pageAddress(2));
    assertNotEquals(first.pageAddress(3), second.pageAddress(3));
    assertEquals(
        InstanceSnapshot.capture(i, UNIT.address(), null).address(),
        second.address(),
        "reusing addresses gives the same snapshot as hashing every page");
  }

  @Test
  void aSnapshotRestoresOnlyIntoItsOwnModule() {
    CompiledUnit other =
        COMPILER.compile(Wat2Wasm.parse(WAT.replace("(i32.const 11)", "(i32.const 12)")));
    Instance i = fresh(UNIT);
    InstanceSnapshot snap = InstanceSnapshot.capture(i, UNIT.address(), null);
    SnapshotException.Mismatch e =
        assertThrows(
            SnapshotException.Mismatch.class, () -> snap.restore(fresh(other), other.address()));
    assertTrue(e.getMessage().contains(UNIT.address()), e.getMessage());
  }

  @Test
  void theManifestIsCanonicalAndNamesEveryBlob() {
    Instance i = mutated();
    InstanceSnapshot snap = InstanceSnapshot.capture(i, UNIT.address(), null);
    byte[] manifest = snap.manifest();
    assertArrayEquals(
        manifest, io.sandboxd.attest.CanonicalJson.canonicalize(manifest), "canonical bytes");
    assertEquals(io.sandboxd.attest.Blake3.hex(manifest), snap.address());
    InstanceSnapshot back = InstanceSnapshot.read(snap.address(), snap.blobs()::get);
    assertEquals(snap.address(), back.address());
    assertEquals(snap.blobs().keySet(), back.blobs().keySet());
  }
}
