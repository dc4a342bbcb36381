package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The filter's program read as the kernel reads it, for every calling convention it names,
 * including those this machine cannot run: each denied call and everything from a convention's
 * {@code deniedFrom} is refused, every other call of a named convention passes, and a call of an
 * unnamed convention is refused.
 */
class SeccompFilterTest {
  private static final int ALLOW = 0x7fff0000;
  private static final int EACCES = 0x00050000 | 13;

  private static final List<SeccompFilter.Convention> CONVENTIONS =
      List.of(SeccompFilter.X86_64, SeccompFilter.I386, SeccompFilter.AARCH64);

  /** What the program answers for a call numbered {@code nr} under {@code arch}. */
  private static int verdict(byte[] program, int arch, int nr) {
    ByteBuffer b = ByteBuffer.wrap(program).order(ByteOrder.nativeOrder());
    int acc = 0;
    int pc = 0;
    for (int steps = 0; steps < 1000; steps++) {
      short code = b.getShort(pc * 8);
      int jt = b.get(pc * 8 + 2) & 0xff;
      int jf = b.get(pc * 8 + 3) & 0xff;
      int k = b.getInt(pc * 8 + 4);
      switch (code) {
        case 0x20 -> {
          acc = k == 4 ? arch : k == 0 ? nr : fail("a load of offset " + k);
          pc++;
        }
        case 0x15 -> pc += 1 + (acc == k ? jt : jf);
        case 0x35 -> pc += 1 + (Integer.compareUnsigned(acc, k) >= 0 ? jt : jf);
        case 0x06 -> {
          return k;
        }
        default -> fail("an instruction " + code);
      }
    }
    return fail("a program that does not end");
  }

  private static int fail(String what) {
    throw new AssertionError("the program holds " + what);
  }

  @Test
  void eachConventionDeniesItsCallsAndPassesTheRest() {
    byte[] program = SeccompFilter.program(CONVENTIONS);
    Random random = new Random(71);
    for (SeccompFilter.Convention cv : CONVENTIONS) {
      Set<Integer> denied = Set.copyOf(cv.denied());
      for (int nr = 0; nr < 1024; nr++) {
        int expected = denied.contains(nr) || nr >= cv.deniedFrom() ? EACCES : ALLOW;
        assertEquals(expected, verdict(program, cv.auditArch(), nr), cv + " call " + nr);
      }
      for (int i = 0; i < 2000; i++) {
        int nr = random.nextInt();
        boolean refused = denied.contains(nr) || Integer.compareUnsigned(nr, cv.deniedFrom()) >= 0;
        assertEquals(refused ? EACCES : ALLOW, verdict(program, cv.auditArch(), nr), cv + " " + nr);
      }
    }
    for (int i = 0; i < 2000; i++) {
      int arch = random.nextInt();
      if (CONVENTIONS.stream().noneMatch(cv -> cv.auditArch() == arch)) {
        assertEquals(EACCES, verdict(program, arch, random.nextInt(512)), "arch " + arch);
      }
    }
  }

  @Test
  void aProgramIsAsLongAsItsListsNeedAndReadsRightPastTwoHundredAndFiftySixInstructions() {
    // 240 denials beside x86_64's: more instructions than the fixed buffer the program once had.
    List<Integer> many = new java.util.ArrayList<>();
    for (int nr = 1000; nr < 1240; nr++) {
      many.add(nr);
    }
    SeccompFilter.Convention wide = new SeccompFilter.Convention(0x1234, many, Integer.MAX_VALUE);
    List<SeccompFilter.Convention> both = List.of(SeccompFilter.X86_64, wide);
    byte[] program = SeccompFilter.program(both);
    int instructions = 1 + (6 + SeccompFilter.X86_64.denied().size()) + (6 + many.size());
    assertEquals(8 * instructions, program.length);
    for (int nr = 990; nr < 1250; nr++) {
      int expected = nr >= 1000 && nr < 1240 ? EACCES : ALLOW;
      assertEquals(expected, verdict(program, 0x1234, nr), "call " + nr);
    }
    assertEquals(EACCES, verdict(program, SeccompFilter.X86_64.auditArch(), 41), "socket");
    assertEquals(ALLOW, verdict(program, SeccompFilter.X86_64.auditArch(), 0), "read");
  }
}
