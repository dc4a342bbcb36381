package io.sandboxd.executor;

import com.dylibso.chicory.wabt.Wat2Wasm;

/**
 * Units for durable-run tests, shared with the integration tests through this module's test-jar.
 * Both count to {@code n}; each count logs {@code step K} (or {@code tick K}), burns {@code spin}
 * loop iterations (so a test can park one mid-way) and mixes the count into an accumulator through
 * a table the first count grows; the last logs {@code done acc=A}. Their progress lives only in
 * non-exported mutable globals, a grown table and memory, so a resumed run reaches the same {@code
 * acc} only if the snapshot carried all three. Grants: {@code host.logging} to see the log.
 *
 * <ul>
 *   <li>{@link #counterStep}: exports {@code step}, returning 1 (more) until the count reaches
 *       {@code n}, then 0 (done): the executor parks between two calls.
 *   <li>{@link #counterRun}: exports {@code run}, calling {@code yield_point} after every count and
 *       returning 1 when it answered PARK; 0 when done.
 * </ul>
 */
public final class DurableUnits {
  private DurableUnits() {}

  /** The {@code acc} both units log after {@code n} counts (what an unparked run computes). */
  public static long expectedAcc(int n) {
    long acc = 0;
    for (int count = 1; count <= n; count++) {
      acc =
          switch (count % 3) {
            case 0 -> acc * 31 + count;
            case 1 -> (acc ^ ((long) count << 7)) + 1;
            default -> acc + (long) count * count;
          };
    }
    return acc;
  }

  /** The log of an unparked run of either unit: {@code <word> 1} .. {@code <word> n}, done. */
  public static String expectedLog(String word, int n) {
    StringBuilder b = new StringBuilder();
    for (int i = 1; i <= n; i++) {
      b.append(word).append(' ').append(i).append('\n');
    }
    return b.append("done acc=")
        .append(Long.toUnsignedString(expectedAcc(n)))
        .append('\n')
        .toString();
  }

  /** WAT of the {@code step} unit. */
  public static String counterStepWat(int n, int spin) {
    return wat(n, spin, "step", false);
  }

  /** WAT of the {@code run} unit. */
  public static String counterRunWat(int n, int spin) {
    return wat(n, spin, "tick", true);
  }

  public static byte[] counterStep(int n, int spin) {
    return Wat2Wasm.parse(counterStepWat(n, spin));
  }

  public static byte[] counterRun(int n, int spin) {
    return Wat2Wasm.parse(counterRunWat(n, spin));
  }

  private static String wat(int n, int spin, String word, boolean yielding) {
    String entry =
        yielding
            ? """
              (func (export "run") (result i32)
                (loop $more
                  (if (i32.eqz (call $count_once)) (then (return (i32.const 0))))
                  (if (i32.eq (call $yield) (i32.const 1)) (then (return (i32.const 1))))
                  (br $more))
                (i32.const 0))
              """
            : """
              (func (export "step") (result i32)
                (call $count_once))
              """;
    return """
        (module
          (import "sandbox" "log" (func $log (param i32 i32) (result i32)))
          (import "sandbox" "yield_point" (func $yield (result i32)))
          (type $mix (func (param i64 i32) (result i64)))
          (memory (export "memory") 1 64)
          (global $count (mut i32) (i32.const 0))
          (global $acc (mut i64) (i64.const 0))
          (table $t 2 8 funcref)
          (elem (i32.const 0) $mix_mul $mix_xor)
          (elem declare func $mix_sq)
          (data (i32.const 1024) "WORD ")
          (data (i32.const 1100) "done acc=")
          (data $once "first")
          (func $mix_mul (param $a i64) (param $c i32) (result i64)
            (i64.add (i64.mul (local.get $a) (i64.const 31)) (i64.extend_i32_u (local.get $c))))
          (func $mix_xor (param $a i64) (param $c i32) (result i64)
            (i64.add
              (i64.xor (local.get $a) (i64.shl (i64.extend_i32_u (local.get $c)) (i64.const 7)))
              (i64.const 1)))
          (func $mix_sq (param $a i64) (param $c i32) (result i64)
            (i64.add (local.get $a)
              (i64.mul (i64.extend_i32_u (local.get $c)) (i64.extend_i32_u (local.get $c)))))
          ;; Writes $v in decimal at $out; returns the length.
          (func $fmt (param $v i64) (param $out i32) (result i32)
            (local $p i32) (local $len i32)
            (local.set $p (i32.const 600))
            (loop $d
              (local.set $p (i32.sub (local.get $p) (i32.const 1)))
              (i64.store8 (local.get $p)
                (i64.add (i64.const 48) (i64.rem_u (local.get $v) (i64.const 10))))
              (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
              (br_if $d (i64.ne (local.get $v) (i64.const 0))))
            (local.set $len (i32.sub (i32.const 600) (local.get $p)))
            (memory.copy (local.get $out) (local.get $p) (local.get $len))
            (local.get $len))
          ;; One count; returns 1 while counts remain, 0 after the last.
          (func $count_once (result i32)
            (local $i i32) (local $x i32) (local $len i32) (local $page i32)
            (if (i32.eqz (global.get $count))
              (then
                ;; First count only: a third mixer, a passive segment copied and dropped.
                (drop (table.grow $t (ref.func $mix_sq) (i32.const 1)))
                (memory.init $once (i32.const 700) (i32.const 0) (i32.const 5))
                (data.drop $once)
                (drop (memory.grow (i32.const 3)))))
            (global.set $count (i32.add (global.get $count) (i32.const 1)))
            (loop $burn
              (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1103515245)) (local.get $i)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $burn (i32.lt_u (local.get $i) (i32.const SPIN))))
            (i32.store (i32.const 2000) (local.get $x))
            (global.set $acc
              (call_indirect $t (type $mix)
                (global.get $acc) (global.get $count)
                (i32.rem_u (global.get $count) (i32.const 3))))
            ;; The accumulator also goes to a page that depends on the count.
            (local.set $page (i32.add (i32.const 1) (i32.rem_u (global.get $count) (i32.const 3))))
            (i64.store (i32.add (i32.mul (local.get $page) (i32.const 65536))
                                (i32.mul (global.get $count) (i32.const 8)))
              (global.get $acc))
            (local.set $len (call $fmt (i64.extend_i32_u (global.get $count)) (i32.const 1029)))
            (drop (call $log (i32.const 1024) (i32.add (i32.const 5) (local.get $len))))
            (if (i32.lt_u (global.get $count) (i32.const N))
              (then (return (i32.const 1))))
            (local.set $len (call $fmt (global.get $acc) (i32.const 1109)))
            (drop (call $log (i32.const 1100) (i32.add (i32.const 9) (local.get $len))))
            (i32.const 0))
          ENTRY)
        """
        .replace("WORD", word)
        .replace("SPIN", Integer.toString(spin))
        .replace("(i32.const N)", "(i32.const " + n + ")")
        .replace("ENTRY", entry);
  }
}
