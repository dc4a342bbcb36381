package io.sandboxd.enforcer;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Flips, truncates and inserts bytes (escaped lone surrogates and invalid UTF-8 among them) in
 * valid grant documents: each either parses to grants whose canonical bytes and id can be made, or
 * is refused with a {@link GrantsException}; nothing else escapes.
 */
class GrantsFuzzTest {
  static final List<String> SEEDS =
      List.of(
          "{\"compute\":{\"devices\":[],\"energy_budget_uj\":5000000,\"cpu_time_ms\":2000,"
              + "\"memory_bytes\":131072},\"storage\":{\"read\":[\"ro/**\",\"rw/**\"],"
              + "\"write\":[\"rw/**\"],\"delete\":[]},\"network\":{\"outbound\":"
              + "[\"https://api.example.com:443\"],\"inbound\":false},\"kv\":{\"read\":true,"
              + "\"write\":false,\"prefixes\":[\"a/\"]},\"host\":{\"logging\":true,\"clock\":false,"
              + "\"random\":false,\"inference\":false}}",
          "{}",
          "{\"storage\":{\"read\":[\"x\"]},\"host\":{\"logging\":true}}");

  static final String[] INSERTS = {
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\"",
    "\\",
    "{",
    "[",
    "]",
    "}",
    ",",
    ":",
    "null",
    "-1",
    "1e400",
    "0.5",
    "\\u0000",
    "\u00e9",
    "\ud83d\ude00"
  };

  static byte[] mutate(byte[] in, Random r) {
    byte[] b = in.clone();
    int edits = 1 + r.nextInt(3);
    for (int e = 0; e < edits && b.length > 0; e++) {
      int i = r.nextInt(b.length);
      switch (r.nextInt(5)) {
        case 0 -> b[i] = (byte) (b[i] ^ (1 << r.nextInt(8)));
        case 1 -> b[i] = (byte) (0x80 + r.nextInt(128)); // a stray UTF-8 continuation or lead byte
        case 2 -> b = java.util.Arrays.copyOf(b, i);
        default -> {
          byte[] ins = INSERTS[r.nextInt(INSERTS.length)].getBytes(StandardCharsets.UTF_8);
          byte[] n = new byte[b.length + ins.length];
          System.arraycopy(b, 0, n, 0, i);
          System.arraycopy(ins, 0, n, i, ins.length);
          System.arraycopy(b, i, n, i + ins.length, b.length - i);
          b = n;
        }
      }
    }
    return b;
  }

  @Test
  void mutatedGrantsAreParsedOrRefusedWithAGrantsException() {
    long seed = new Random().nextLong();
    Random r = new Random(seed);
    for (int round = 0; round < 5_000; round++) {
      byte[] doc = mutate(SEEDS.get(r.nextInt(SEEDS.size())).getBytes(StandardCharsets.UTF_8), r);
      try {
        Grants g = Grants.parse(doc);
        g.grantsId();
      } catch (GrantsException expected) {
        // a typed refusal naming the path
      } catch (RuntimeException | Error e) {
        throw new AssertionError(
            "seed "
                + seed
                + " round "
                + round
                + ": "
                + e
                + " for "
                + new String(doc, StandardCharsets.UTF_8),
            e);
      }
    }
  }

  @Test
  void anEscapedLoneSurrogateIsRefusedNamingItsPath() {
    GrantsException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            GrantsException.class,
            () ->
                Grants.parse(
                    "{\"storage\":{\"read\":[\"a\\ud800\"]}}".getBytes(StandardCharsets.UTF_8)));
    org.junit.jupiter.api.Assertions.assertTrue(
        e.getMessage().contains("$.storage.read[0]") && e.getMessage().contains("surrogate"),
        e.getMessage());
  }
}
