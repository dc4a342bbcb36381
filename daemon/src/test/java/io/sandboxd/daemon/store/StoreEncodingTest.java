package io.sandboxd.daemon.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.StoredRun;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.Deflater;
import org.junit.jupiter.api.Test;

class StoreEncodingTest {
  private final SigningKey key = SigningKey.generate();

  private List<Envelope> records() {
    RunRecord r = TestRuns.simple(key, "01a23865f8cf5547cfa2", 1_796_242_536_674L);
    return List.of(r.receipt(), r.attestation(), r.segment());
  }

  @Test
  void aRunsSignedRecordsDecodeToTheirTextAndKeepUnder40PercentOfIt() {
    for (Envelope e : records()) {
      String text = e.toJsonLine();
      byte[] stored = StoreEncoding.encode(text);
      assertEquals(3, stored[0], "the signed layout, its address derived from the core");
      assertNotEquals(0, stored[1], "a dictionary for " + e.schema().orElseThrow());
      assertEquals(text, StoreEncoding.decode(stored));
      // Test records' hex values are random and their values differ from the dictionaries' own.
      assertTrue(stored.length * 5 < text.length() * 2, stored.length + " of " + text.length());
    }
  }

  /**
   * An envelope this process signed is encoded from its parts to the very bytes its line is, for
   * cores of any content; one read or built from parts goes through its line.
   */
  @Test
  void anEnvelopeIsStoredAsItsLineIs() {
    Random rnd = new Random(0x5eed_e4e1L);
    for (int i = 0; i < 500; i++) {
      com.fasterxml.jackson.databind.node.ObjectNode core = CanonicalJson.core(schemaOf(rnd));
      for (int k = rnd.nextInt(6); k > 0; k--) {
        if (rnd.nextBoolean()) {
          core.put(wholeText(rnd), wholeText(rnd));
        } else {
          core.put(wholeText(rnd), rnd.nextLong() >>> 12);
        }
      }
      Envelope signed = Envelope.sign(core, key);
      assertArrayEquals(
          StoreEncoding.encode(signed.toJsonLine()), StoreEncoding.encode(signed), "case " + i);
      Envelope read = Envelope.fromJson(CanonicalJson.parse(signed.toJsonLine()));
      assertArrayEquals(StoreEncoding.encode(signed), StoreEncoding.encode(read));
      Envelope claimed =
          new Envelope(signed.core(), "ab".repeat(32), signed.signature(), signed.publicKey());
      byte[] stored = StoreEncoding.encode(claimed);
      assertEquals(1, stored[0], "a claimed address is kept");
      assertEquals(claimed.toJsonLine(), StoreEncoding.decode(stored));
    }
    for (Envelope e : records()) {
      assertArrayEquals(StoreEncoding.encode(e.toJsonLine()), StoreEncoding.encode(e));
    }
  }

  /** {@link #randomText} without its lone surrogates: text a signed core can hold. */
  private static String wholeText(Random rnd) {
    return randomText(rnd).replaceAll("[\\uD800-\\uDFFF]", "");
  }

  private static String schemaOf(Random rnd) {
    List<StoreEncoding.Dictionary> d = StoreEncoding.DICTIONARIES;
    return rnd.nextInt(4) == 0 ? "x.other/1" : d.get(1 + rnd.nextInt(d.size() - 1)).schema();
  }

  @Test
  void anEnvelopeWhoseAddressIsNotItsCoresKeepsItsAddress() {
    String line = records().get(0).toJsonLine();
    String other =
        line.replaceFirst(
            "\"address\":\"[0-9a-f]{64}\"", "\"address\":\"" + "ab".repeat(32) + "\"");
    byte[] stored = StoreEncoding.encode(other);
    assertEquals(1, stored[0]);
    assertEquals(other, StoreEncoding.decode(stored));
    assertEquals(StoreEncoding.encode(line).length + 32, stored.length);
  }

  @Test
  void aLedgerCoreDecodesToItsCanonicalText() {
    RunRecord r = TestRuns.simple(key, "run-7", 7);
    StoredRun s =
        new StoredRun(
            7,
            "run-7",
            7,
            r.receipt().core().get("unit").textValue(),
            r.receipt().core().get("grants_id").textValue(),
            new io.sandboxd.attest.Outcome.Completed(),
            "run",
            StoredRun.textAddress("{}"),
            StoredRun.textAddress("log"),
            3,
            r.segment().address(),
            r.receipt().address(),
            r.attestation().address());
    String text = CanonicalJson.canonicalString(s.toCore());
    byte[] stored = StoreEncoding.encode(text);
    assertEquals(2, stored[0]);
    assertNotEquals(0, stored[1]);
    assertEquals(text, StoreEncoding.decode(stored));
    assertEquals(s, StoreLedger.read(stored).stored());
  }

  /** Seeded texts of every shape: near the signed layout, JSON of any content, not JSON at all. */
  @Test
  void everyTextComesBackByteForByte() {
    Random rnd = new Random(0x5eed_5707L);
    String line = records().get(0).toJsonLine();
    for (int i = 0; i < 3_000; i++) {
      String text =
          switch (i % 6) {
            case 0 -> mutate(line, rnd); // a layout broken or kept at random
            case 1 -> "{\"schema\":\"sandbox.receipt/1\",\"x\":\"" + randomText(rnd) + "\"}";
            case 2 -> randomText(rnd);
            case 3 -> line.replace("\"tier\":\"S2\"", "\"tier\":\"" + randomText(rnd) + "\"");
            case 4 -> "{" + randomText(rnd);
            default -> line.substring(0, rnd.nextInt(line.length() + 1));
          };
      byte[] stored = StoreEncoding.encode(text);
      String back = StoreEncoding.decode(stored);
      String expected = new String(text.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
      assertEquals(expected, back, "case " + i);
    }
  }

  @Test
  void textThatIsNotAJsonObjectIsKeptAsItsUtf8() {
    for (String t : List.of("", "[]", " {\"a\":1}", "\"x\"", "null")) {
      assertArrayEquals(t.getBytes(StandardCharsets.UTF_8), StoreEncoding.encode(t));
      assertEquals(t, StoreEncoding.decode(t.getBytes(StandardCharsets.UTF_8)));
    }
    // Rows written as TEXT before schema 17 read as they are.
    String line = records().get(1).toJsonLine();
    assertEquals(line, StoreEncoding.decode(line.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void aTextOverTheLimitIsKeptAsText() {
    String big = "{\"pad\":\"" + "a".repeat(StoreEncoding.MAX_ENCODED_TEXT) + "\"}";
    byte[] stored = StoreEncoding.encode(big);
    assertEquals('{', stored[0]);
    assertEquals(big, StoreEncoding.decode(stored));
  }

  /** Damaged bytes either decode to some text (the signature check then fails) or are named. */
  @Test
  void damagedBytesAreATypedErrorNamingTheByte() {
    byte[] good = StoreEncoding.encode(records().get(2).toJsonLine());
    Random rnd = new Random(0xda6a9eL);
    int named = 0;
    for (int i = 0; i < 2_000; i++) {
      byte[] bad = good.clone();
      switch (i % 4) {
        case 0 -> bad = Arrays.copyOf(bad, rnd.nextInt(bad.length));
        case 1 -> bad[2 + 96 + rnd.nextInt(bad.length - 98)] ^= (byte) (1 + rnd.nextInt(255));
        case 2 -> {
          bad = Arrays.copyOf(bad, bad.length + 1 + rnd.nextInt(8));
          bad[bad.length - 1] = (byte) rnd.nextInt(256);
        }
        default -> bad[1] = (byte) (StoreEncoding.DICTIONARIES.size() + rnd.nextInt(200));
      }
      if (bad.length == 0 || bad[0] < 1 || bad[0] > 3) {
        continue;
      }
      try {
        // Some text, checked by its signature like any other; the same text only where the change
        // hit bits deflate does not read (the padding after the last block).
        StoreEncoding.decode(bad);
      } catch (StoreEncodingException e) {
        assertTrue(
            e.getMessage().matches("stored record: (byte \\d+|truncated).*"), e.getMessage());
        named++;
      }
    }
    assertTrue(named > 500, "named " + named);
  }

  @Test
  void aStreamThatInflatesPastTheLimitIsRefused() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(2);
    out.write(0);
    Deflater d = new Deflater(9, true);
    d.setInput(new byte[StoreEncoding.MAX_ENCODED_TEXT * 4]);
    d.finish();
    byte[] buf = new byte[1 << 16];
    while (!d.finished()) {
      out.write(buf, 0, d.deflate(buf));
    }
    d.end();
    StoreEncodingException e =
        assertThrows(StoreEncodingException.class, () -> StoreEncoding.decode(out.toByteArray()));
    assertTrue(e.getMessage().contains("inflates past"), e.getMessage());
  }

  /** Stored rows name their dictionary by number: a dictionary once shipped never changes. */
  @Test
  void theDictionariesAreTheOnesStoresWereWrittenWith() {
    List<String> pinned = new ArrayList<>();
    for (StoreEncoding.Dictionary d : StoreEncoding.DICTIONARIES) {
      pinned.add(d.schema() + " " + Blake3.hex(d.bytes()));
    }
    assertEquals(
        List.of(
            " af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
            "sandbox.receipt/1 " + PINNED[0],
            "sandbox.attestation/1 " + PINNED[1],
            "sandbox.run-segment/1 " + PINNED[2],
            "sandbox.store-run/1 " + PINNED[3],
            "sandbox.warmpool-claim/1 " + PINNED[4],
            "sandbox.warmpool-evict/1 " + PINNED[5]),
        pinned);
  }

  private static final String[] PINNED = {
    "f3811a2b38e628a1267d24cbd8d417ee9c94cd5d9045518b80f1d36693f4982b",
    "d1e4d16fd3a7cb1114aa3d62b188c4eb2fecdfa6d4c1ac4217a23e943057387e",
    "22e1d126454d29bc264cf67b6d53a9bc9b2b936331045b223f6d89380d05c990",
    "686f3e02293abe86d64674e576fbbc1f9a7173cd10f89d8f06992951bc98d6da",
    "8d93b6b789b83b6106e51a1cd9147f3a4226341db8fa4d4d94b54ec060b9c1a8",
    "42aad69c3a4e6d32559bb7e35817d2be49af0c5f31c4d75f2bf419b9ec9a18be"
  };

  @Test
  void sqlReadsAndWritesRowsAsText() throws Exception {
    String line = records().get(0).toJsonLine();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite::memory:")) {
      StoreEncoding.addSqlFunctions(c);
      try (Statement st = c.createStatement()) {
        st.execute("CREATE TABLE t (envelope TEXT NOT NULL)");
      }
      try (PreparedStatement st = c.prepareStatement("INSERT INTO t VALUES (?)")) {
        st.setBytes(1, StoreEncoding.encode(line));
        st.executeUpdate();
      }
      try (Statement st = c.createStatement()) {
        st.executeUpdate(
            "UPDATE t SET envelope = record_bytes(replace(record_text(envelope), 'S2', 'S3'))");
        try (ResultSet rs = st.executeQuery("SELECT typeof(envelope), envelope FROM t")) {
          rs.next();
          assertEquals("blob", rs.getString(1));
          assertEquals(line.replace("S2", "S3"), StoreEncoding.decode(rs.getBytes(2)));
        }
      }
    }
  }

  /** A stored record whose bytes do not decode is damage to its run alone, never a crash. */
  @Test
  void aRecordThatDoesNotDecodeIsDamageToItsRun(@org.junit.jupiter.api.io.TempDir Path tmp)
      throws Exception {
    Path file = tmp.resolve("runs.db");
    try (RunStore store = RunStore.open(file, key)) {
      store.append(TestRuns.simple(key, "run-good", 1_000));
      store.append(TestRuns.simple(key, "run-bad", 2_000));
    }
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement st = c.createStatement()) {
      assertEquals("blob", one(st, "SELECT typeof(envelope) FROM run_records LIMIT 1"));
      assertEquals("blob", one(st, "SELECT typeof(envelope) FROM ledger LIMIT 1"));
      // The deflate stream cut in half: the header still says "encoded".
      assertEquals(
          1,
          st.executeUpdate(
              "UPDATE run_records SET envelope = substr(envelope, 1, 110)"
                  + " WHERE run_id = 'run-bad' AND kind = 'receipt'"));
    }
    try (RunStore store = RunStore.open(file, key)) {
      List<StoreDamage> bad = store.verifyAll();
      assertEquals(List.of("run-bad"), bad.stream().map(StoreDamage::runId).toList());
      assertTrue(
          bad.get(0).reason().contains("unreadable envelope: stored record: byte"), bad.toString());
      TamperedRunException e =
          assertThrows(
              TamperedRunException.class, () -> store.records("run-bad", RecordKind.RECEIPT));
      assertTrue(e.getMessage().contains("stored record: byte"), e.getMessage());
      assertEquals(1, store.records("run-good", RecordKind.RECEIPT).size());
    }
  }

  private static String one(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static String mutate(String line, Random rnd) {
    char[] c = line.toCharArray();
    int n = rnd.nextInt(3);
    for (int k = 0; k < n; k++) {
      int at = rnd.nextInt(c.length);
      c[at] = "0aF\"{},:xé".charAt(rnd.nextInt(10));
    }
    return new String(c);
  }

  private static String randomText(Random rnd) {
    StringBuilder b = new StringBuilder();
    int n = rnd.nextInt(300);
    for (int k = 0; k < n; k++) {
      int kind = rnd.nextInt(10);
      if (kind < 6) {
        b.append((char) (' ' + rnd.nextInt(95)));
      } else if (kind < 8) {
        b.append((char) (0x80 + rnd.nextInt(0x700)));
      } else if (kind < 9) {
        b.appendCodePoint(0x1F300 + rnd.nextInt(200));
      } else {
        b.append((char) (0xD800 + rnd.nextInt(0x800))); // lone surrogates included
      }
    }
    return b.toString();
  }
}
