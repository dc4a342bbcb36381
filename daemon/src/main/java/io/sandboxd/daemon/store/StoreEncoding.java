package io.sandboxd.daemon.store;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Hex;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * How the store keeps the text of a signed record (the {@code records}, {@code ledger} and {@code
 * pool_records} rows): compact bytes that decode to the very text that was written, byte for byte,
 * so every hash, signature and chain over the text is unchanged. The format is part of the store
 * (the README's state section says so too):
 *
 * <ul>
 *   <li>{@code 0x03, dict, public_key[32], signature[64], deflate(core)}: an envelope of the
 *       canonical layout {@code {"address":…,"core":…,"public_key":…,"signature":…}} whose address
 *       is its core's BLAKE3 (every envelope the node writes), recomputed on reading;
 *   <li>{@code 0x01, dict, address[32], public_key[32], signature[64], deflate(core)}: an envelope
 *       of that layout with any other address;
 *   <li>{@code 0x02, dict, deflate(text)}: any other JSON text (a chained store-run core);
 *   <li>anything else is the text's UTF-8 itself (rows written before schema 17 are TEXT, and a
 *       JSON text never starts with byte 1, 2 or 3).
 * </ul>
 *
 * {@code deflate} is raw RFC 1951 with the preset dictionary numbered {@code dict} (0: none), for
 * an envelope followed by its public key's 64 hex characters (the node's key recurs in its cores).
 * The dictionaries are fixed here and never edited, only appended to: an edit would make stored
 * rows unreadable (StoreEncodingTest pins their hashes).
 */
public final class StoreEncoding {
  /** The largest core or text kept encoded; a larger one is kept as its UTF-8 text. */
  static final int MAX_ENCODED_TEXT = 1 << 20;

  private static final byte SIGNED = 1;
  private static final byte PLAIN = 2;
  private static final byte DERIVED = 3;
  private static final String PREFIX = "{\"address\":\"";
  private static final String CORE = "\",\"core\":";
  private static final String KEY = ",\"public_key\":\"";
  private static final String SIGNATURE = "\",\"signature\":\"";
  private static final String END = "\"}";
  private static final int HEAD = PREFIX.length() + 64 + CORE.length();
  private static final int TAIL = KEY.length() + 64 + SIGNATURE.length() + 128 + END.length();
  private static final int SIGNED_HEADER = 2 + 32 + 32 + 64;
  private static final int DERIVED_HEADER = 2 + 32 + 64;
  private static final String ZEROS64 = "0".repeat(64);

  /**
   * Preset dictionaries by number (index 0 is "none"): a typical canonical core of each schema the
   * store writes on every run, its hex values zeroed. Append only.
   */
  static final List<Dictionary> DICTIONARIES =
      List.of(
          new Dictionary("", ""),
          new Dictionary(
              "sandbox.receipt/1",
              "{\"cpu_time_ms\":0,\"ended_ms\":1796242536751,\"energy_provenance\":\"Estimator\","
                  + "\"energy_uj\":{\"Cpu\":6023},\"grants_id\":\""
                  + ZEROS64
                  + "\",\"idle_uj\":0,\"inference\":[],\"io\":{\"read_bytes\":0,\"read_ops\":0,"
                  + "\"write_bytes\":0},\"memory_peak_bytes\":65536,\"meter\":{\"Cpu\":"
                  + "{\"min_window_ns\":10000000,\"resolution_uj\":1,\"source\":\"estimator\"}},"
                  + "\"net\":{\"egress_bytes\":0,\"ingress_bytes\":0},\"provenance\":"
                  + "{\"Cpu\":\"Estimator\"},\"run_id\":\"00000000000000000000\",\"schema\":"
                  + "\"sandbox.receipt/1\",\"started_ms\":1796242536674,\"tier\":\"S2\","
                  + "\"total_uj\":6023,\"unit\":\""
                  + ZEROS64
                  + "\",\"wall_ms\":77}"),
          new Dictionary(
              "sandbox.attestation/1",
              "{\"clock\":{\"constant_ms\":0,\"granted\":false},\"grants_id\":\""
                  + ZEROS64
                  + "\",\"host\":{\"id\":\"vm-0000000000000000\",\"platform\":\"linux-amd64"
                  + " java-17.0.15 chicory-1.7.5\",\"public_key\":\""
                  + ZEROS64
                  + "\"},\"issued_ms\":1796242536752,\"journal_root\":\""
                  + ZEROS64
                  + "\",\"manifest\":null,\"outcome\":\"Completed\",\"probing_detected\":false,"
                  + "\"receipt\":\""
                  + ZEROS64
                  + "\",\"schema\":\"sandbox.attestation/1\",\"tampering_detected\":false,"
                  + "\"tee_report\":null,\"tier\":\"S2\",\"unit\":\""
                  + ZEROS64
                  + "\"}"),
          new Dictionary(
              "sandbox.run-segment/1",
              "{\"at_ms\":1796242536752,\"budget\":{\"consumed\":{\"cpu_time_ms\":0,"
                  + "\"energy_uj\":6023},\"granted\":{\"cpu_time_ms\":2000,\"energy_uj\":5000000}},"
                  + "\"grants_id\":\""
                  + ZEROS64
                  + "\",\"host\":{\"id\":\"vm-0000000000000000\",\"public_key\":\""
                  + ZEROS64
                  + "\"},\"idle_provenance\":\"Estimator\",\"idle_uj\":0,\"kind\":\"execute\","
                  + "\"prev\":null,\"receipt\":\""
                  + ZEROS64
                  + "\",\"run_id\":\"00000000000000000000\",\"schema\":\"sandbox.run-segment/1\","
                  + "\"seq\":0,\"snapshot\":null,\"tier\":\"S2\"}"),
          new Dictionary(
              "sandbox.store-run/1",
              "{\"attestation\":\""
                  + ZEROS64
                  + "\",\"created_ms\":1796242536674,\"entry\":\"run\",\"grants\":\""
                  + ZEROS64
                  + "\",\"grants_id\":\""
                  + ZEROS64
                  + "\",\"log\":{\"address\":\""
                  + ZEROS64
                  + "\",\"bytes\":61},\"outcome\":\"Completed\",\"position\":0,\"receipt\":\""
                  + ZEROS64
                  + "\",\"run_id\":\"00000000000000000000\",\"schema\":\"sandbox.store-run/1\","
                  + "\"segment\":\""
                  + ZEROS64
                  + "\",\"unit\":\""
                  + ZEROS64
                  + "\"}"),
          new Dictionary(
              "sandbox.warmpool-claim/1",
              "{\"accrued_idle_uj\":0,\"claimed_ms\":1796242536926,\"instance\":"
                  + "\"0000000000000000\",\"manifest\":null,\"pool\":\""
                  + ZEROS64
                  + "/none/S2\",\"provenance\":\"Estimator\",\"run_id\":\"00000000000000000000\","
                  + "\"schema\":\"sandbox.warmpool-claim/1\",\"tier\":\"S2\","
                  + "\"warmed_ms\":1796242536913}"),
          new Dictionary(
              "sandbox.warmpool-evict/1",
              "{\"evicted_ms\":1796242541420,\"instance\":\"0000000000000000\","
                  + "\"overhead_uj\":3846,\"pool\":\""
                  + ZEROS64
                  + "/none/S2\",\"provenance\":\"Estimator\",\"reason\":\"Shutdown\","
                  + "\"schema\":\"sandbox.warmpool-evict/1\",\"warmed_ms\":1796242541153}"));

  // Runs encode their records concurrently, before the store lock: a new Deflater (zlib's init
  // zeroes about 256 KiB of native memory) per record costs more than the deflate. So up to 64 are
  // kept for reuse (at most 16 MiB, only as many as have ever been in use at once), not one per
  // thread.
  private static final ArrayBlockingQueue<Deflater> DEFLATERS = new ArrayBlockingQueue<>(64);
  private static final ArrayBlockingQueue<Inflater> INFLATERS = new ArrayBlockingQueue<>(64);

  private StoreEncoding() {}

  /** One preset dictionary: the schema it serves and its bytes. */
  record Dictionary(String schema, String text) {
    byte[] bytes() {
      return text.getBytes(StandardCharsets.UTF_8);
    }
  }

  private static final byte[][] DICTIONARY_BYTES = dictionaryBytes();

  private static byte[][] dictionaryBytes() {
    byte[][] out = new byte[DICTIONARIES.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = DICTIONARIES.get(i).bytes();
    }
    return out;
  }

  /**
   * The bytes {@code e}'s line ({@link Envelope#toJsonLine}) is stored as: {@link
   * #encode(String)}'s bytes, made from the parts an envelope this process signed already holds
   * (its canonical core, whose hash is its address), without writing the line, reading it back and
   * hashing the core.
   */
  public static byte[] encode(Envelope e) {
    // Made by Envelope.sign: its key and signature are lowercase hex of their lengths.
    String core = e.signedCoreText().orElse(null);
    byte[] utf8 = core == null ? null : core.getBytes(StandardCharsets.UTF_8);
    if (utf8 == null || utf8.length > MAX_ENCODED_TEXT) {
      return encode(e.toJsonLine());
    }
    return signedRow(utf8, dictionaryFor(core, 0), null, e.publicKey(), 0, e.signature(), 0);
  }

  /**
   * The bytes {@code text} is stored as.
   *
   * @throws IllegalArgumentException if {@code text} starts with U+0001, U+0002 or U+0003, which no
   *     JSON text does and which would read back as an encoding
   */
  public static byte[] encode(String text) {
    if (!text.isEmpty() && text.charAt(0) >= SIGNED && text.charAt(0) <= DERIVED) {
      throw new IllegalArgumentException(
          "a stored record's text cannot start with U+000" + (int) text.charAt(0));
    }
    // A lone surrogate (canonical JSON refuses them) has no UTF-8 spelling: it reads back as '?',
    // as it did from the TEXT rows sqlite-jdbc wrote before.
    if (isSignedLayout(text)) {
      byte[] core = text.substring(HEAD, text.length() - TAIL).getBytes(StandardCharsets.UTF_8);
      if (core.length <= MAX_ENCODED_TEXT) {
        int keyHex = text.length() - TAIL + KEY.length();
        byte[] address = new byte[32];
        hexInto(text, PREFIX.length(), 32, address, 0);
        // The address is kept only when it is not the core's own (then it is data, not derivable).
        return signedRow(
            core,
            dictionaryFor(text, HEAD),
            Arrays.equals(address, Blake3.hash(core)) ? null : address,
            text,
            keyHex,
            text,
            keyHex + 64 + SIGNATURE.length());
      }
    }
    byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
    if (utf8.length == 0 || utf8[0] != '{' || utf8.length > MAX_ENCODED_TEXT) {
      return utf8;
    }
    int dict = dictionaryFor(text, 0);
    byte[] deflated = deflate(utf8, DICTIONARY_BYTES[dict]);
    byte[] out = new byte[2 + deflated.length];
    out[0] = PLAIN;
    out[1] = (byte) dict;
    System.arraycopy(deflated, 0, out, 2, deflated.length);
    return out;
  }

  /**
   * The text {@code stored} holds.
   *
   * @throws StoreEncodingException naming the byte at fault when {@code stored} is encoded but
   *     cannot be decoded (an unknown dictionary, a broken or oversized deflate stream)
   */
  public static String decode(byte[] stored) {
    if (stored == null) {
      throw new StoreEncodingException("no stored bytes");
    }
    if (stored.length == 0 || stored[0] < SIGNED || stored[0] > DERIVED) {
      return new String(stored, StandardCharsets.UTF_8);
    }
    int header = stored[0] == SIGNED ? SIGNED_HEADER : stored[0] == DERIVED ? DERIVED_HEADER : 2;
    int dict = dictionary(stored, header);
    if (stored[0] == PLAIN) {
      return new String(inflate(stored, header, DICTIONARY_BYTES[dict]), StandardCharsets.UTF_8);
    }
    Signed e = signed(stored, header, dict);
    StringBuilder b = new StringBuilder(e.core().length + HEAD + TAIL);
    return b.append(PREFIX)
        .append(Hex.encode(e.address()))
        .append(CORE)
        .append(new String(e.core(), StandardCharsets.UTF_8))
        .append(KEY)
        .append(Hex.encode(e.publicKey()))
        .append(SIGNATURE)
        .append(Hex.encode(e.signature()))
        .append(END)
        .toString();
  }

  /**
   * A stored envelope taken apart: its core's UTF-8 bytes, its address (for the node's own layout,
   * the BLAKE3 of those bytes, recomputed here), its raw public key and signature.
   */
  record Signed(byte[] core, byte[] address, byte[] publicKey, byte[] signature) {}

  /**
   * The envelope {@code stored} holds when it is in the node's own layout (byte 0 is 3: its address
   * is its core's BLAKE3), taken apart without reading its JSON; empty for any other form. What the
   * background seal reads: it needs the bytes and their hash, not the tree.
   *
   * @throws StoreEncodingException naming the byte at fault when it is of that layout but does not
   *     decode
   */
  static java.util.Optional<Signed> derived(byte[] stored) {
    if (stored == null || stored.length == 0 || stored[0] != DERIVED) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(
        signed(stored, DERIVED_HEADER, dictionary(stored, DERIVED_HEADER)));
  }

  /** The dictionary number of an encoded row whose header is {@code header} bytes. */
  private static int dictionary(byte[] stored, int header) {
    if (stored.length < header) {
      throw new StoreEncodingException(
          "truncated: " + stored.length + " bytes, the header alone is " + header);
    }
    int dict = stored[1] & 0xff;
    if (dict >= DICTIONARY_BYTES.length) {
      throw new StoreEncodingException("byte 1: unknown dictionary " + dict);
    }
    return dict;
  }

  /** The parts of a SIGNED or DERIVED row whose header ({@code header} bytes) was checked. */
  private static Signed signed(byte[] stored, int header, int dict) {
    int keyAt = header - 96;
    byte[] key = Arrays.copyOfRange(stored, keyAt, keyAt + 32);
    byte[] core = inflate(stored, header, withKey(dict, Hex.encode(key)));
    byte[] address = stored[0] == DERIVED ? Blake3.hash(core) : Arrays.copyOfRange(stored, 2, 34);
    return new Signed(core, address, key, Arrays.copyOfRange(stored, keyAt + 32, header));
  }

  /**
   * The envelope a stored signed record holds, read as {@link Envelope#fromJson} reads it.
   *
   * @throws io.sandboxd.attest.AttestException when it does not decode ({@link
   *     StoreEncodingException}) or is not an envelope
   */
  static Envelope envelope(byte[] stored) {
    return Envelope.fromJson(CanonicalJson.parse(decode(stored)));
  }

  /**
   * Adds {@code record_text(stored)} and {@code record_bytes(text)} to {@code db}'s SQL, so that
   * SQL over a store (an operator's JDBC session, the tamper tests) reads and writes rows as text.
   */
  public static void addSqlFunctions(java.sql.Connection db) throws java.sql.SQLException {
    sqlFunction(db, "record_text", StoreEncoding::decode);
    sqlFunction(db, "record_bytes", b -> encode(new String(b, StandardCharsets.UTF_8)));
  }

  /** A one-argument SQL function over the argument's bytes (NULL gives NULL). */
  private static void sqlFunction(
      java.sql.Connection db, String name, java.util.function.Function<byte[], Object> body)
      throws java.sql.SQLException {
    org.sqlite.Function.create(
        db,
        name,
        new org.sqlite.Function() {
          @Override
          protected void xFunc() throws java.sql.SQLException {
            byte[] arg = value_blob(0);
            Object out = arg == null ? null : body.apply(arg);
            if (out == null) {
              result();
            } else if (out instanceof String text) {
              result(text);
            } else {
              result((byte[]) out);
            }
          }
        });
  }

  /**
   * The row of a signed envelope: its core deflated with dictionary {@code dict} and the key, the
   * key's 64 hex characters at {@code keyAt} of {@code keyHex}, the signature's 128 at {@code
   * sigAt} of {@code sigHex}; {@code address} kept only when it is not the core's hash (null when
   * it is).
   */
  private static byte[] signedRow(
      byte[] core, int dict, byte[] address, String keyHex, int keyAt, String sigHex, int sigAt) {
    byte[] deflated = deflate(core, withKey(dict, keyHex.substring(keyAt, keyAt + 64)));
    int header = address == null ? DERIVED_HEADER : SIGNED_HEADER;
    byte[] out = new byte[header + deflated.length];
    out[0] = address == null ? DERIVED : SIGNED;
    out[1] = (byte) dict;
    int at = 2;
    if (address != null) {
      System.arraycopy(address, 0, out, at, 32);
      at += 32;
    }
    hexInto(keyHex, keyAt, 32, out, at);
    hexInto(sigHex, sigAt, 64, out, at + 32);
    System.arraycopy(deflated, 0, out, header, deflated.length);
    return out;
  }

  private static boolean isSignedLayout(String t) {
    int n = t.length();
    return n > HEAD + TAIL
        && t.startsWith(PREFIX)
        && t.startsWith(CORE, PREFIX.length() + 64)
        && t.startsWith(KEY, n - TAIL)
        && t.startsWith(SIGNATURE, n - TAIL + KEY.length() + 64)
        && t.endsWith(END)
        && isHex(t, PREFIX.length(), 64)
        && isHex(t, n - TAIL + KEY.length(), 64)
        && isHex(t, n - TAIL + KEY.length() + 64 + SIGNATURE.length(), 128);
  }

  private static boolean isHex(String t, int from, int chars) {
    for (int i = from; i < from + chars; i++) {
      char c = t.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  private static void hexInto(String t, int from, int bytes, byte[] out, int at) {
    for (int i = 0; i < bytes; i++) {
      out[at + i] =
          (byte) ((digit(t.charAt(from + 2 * i)) << 4) | digit(t.charAt(from + 2 * i + 1)));
    }
  }

  private static int digit(char c) {
    return c <= '9' ? c - '0' : c - 'a' + 10;
  }

  /** The dictionary for the record whose JSON object starts at {@code from}, by its schema. */
  private static int dictionaryFor(String text, int from) {
    int s = text.indexOf("\"schema\":\"", from);
    if (s < 0) {
      return 0;
    }
    int start = s + 10;
    int end = text.indexOf('"', start);
    if (end < 0) {
      return 0;
    }
    for (int i = 1; i < DICTIONARIES.size(); i++) {
      String schema = DICTIONARIES.get(i).schema();
      if (schema.length() == end - start && text.startsWith(schema, start)) {
        return i;
      }
    }
    return 0;
  }

  /** Dictionary {@code dict} followed by {@code keyHex}'s ASCII. */
  private static byte[] withKey(int dict, String keyHex) {
    byte[] base = DICTIONARY_BYTES[dict];
    byte[] out = Arrays.copyOf(base, base.length + keyHex.length());
    for (int i = 0; i < keyHex.length(); i++) {
      out[base.length + i] = (byte) keyHex.charAt(i);
    }
    return out;
  }

  private static byte[] deflate(byte[] in, byte[] dict) {
    Deflater d = DEFLATERS.poll();
    if (d == null) {
      d = new Deflater(Deflater.BEST_SPEED, true);
    }
    try {
      if (dict.length > 0) {
        d.setDictionary(dict);
      }
      d.setInput(in);
      d.finish();
      // Raw deflate of n bytes never needs more than n + 5 per 16 KiB block plus a few bytes.
      byte[] buf = new byte[in.length + 5 * (in.length / 16_384 + 1) + 16];
      int n = 0;
      while (!d.finished()) {
        n += d.deflate(buf, n, buf.length - n);
        if (n == buf.length && !d.finished()) {
          buf = Arrays.copyOf(buf, buf.length * 2);
        }
      }
      return Arrays.copyOf(buf, n);
    } finally {
      d.reset();
      if (!DEFLATERS.offer(d)) {
        d.end();
      }
    }
  }

  private static byte[] inflate(byte[] stored, int from, byte[] dict) {
    Inflater inf = INFLATERS.poll();
    if (inf == null) {
      inf = new Inflater(true);
    }
    try {
      if (dict.length > 0) {
        inf.setDictionary(dict);
      }
      inf.setInput(stored, from, stored.length - from);
      byte[] out = new byte[Math.min(MAX_ENCODED_TEXT, Math.max(256, (stored.length - from) * 8))];
      int n = 0;
      while (!inf.finished()) {
        if (n == out.length) {
          if (out.length >= MAX_ENCODED_TEXT) {
            throw new StoreEncodingException(
                "byte " + from + ": the text inflates past " + MAX_ENCODED_TEXT + " bytes");
          }
          out = Arrays.copyOf(out, Math.min(MAX_ENCODED_TEXT, out.length * 2));
        }
        int got = inf.inflate(out, n, out.length - n);
        n += got;
        if (got == 0 && (inf.needsInput() || inf.needsDictionary())) {
          throw new StoreEncodingException(
              "byte " + (stored.length - inf.getRemaining()) + ": the deflate stream ends early");
        }
      }
      if (inf.getRemaining() != 0) {
        throw new StoreEncodingException(
            "byte "
                + (stored.length - inf.getRemaining())
                + ": "
                + inf.getRemaining()
                + " bytes after the deflate stream's end");
      }
      return Arrays.copyOf(out, n);
    } catch (DataFormatException e) {
      throw new StoreEncodingException(
          "byte "
              + (stored.length - inf.getRemaining())
              + ": broken deflate stream: "
              + e.getMessage());
    } finally {
      inf.reset();
      if (!INFLATERS.offer(inf)) {
        inf.end();
      }
    }
  }
}
