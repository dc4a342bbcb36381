package io.sandboxd.attest;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.bouncycastle.crypto.digests.Blake3Digest;
import org.bouncycastle.crypto.params.Blake3Parameters;

/**
 * BLAKE3 in its three modes. BouncyCastle's {@code Blake3Digest} was chosen over
 * io.github.rctcwyvrn:blake3 by the JMH benchmark in {@code benchmarks} (figures in the README).
 */
public final class Blake3 {
  public static final int OUT_LEN = 32;

  private Blake3() {}

  // A digest allocates its chaining-value stack and buffers; the plain mode reuses one per thread,
  // which matters on hot paths (a journal entry hashes twice per host call).
  private static final ThreadLocal<Blake3Digest> PLAIN =
      ThreadLocal.withInitial(() -> new Blake3Digest(256));

  /** BLAKE3-256 of {@code input}. */
  public static byte[] hash(byte[] input) {
    Blake3Digest d = PLAIN.get();
    d.reset();
    d.update(input, 0, input.length);
    byte[] out = new byte[OUT_LEN];
    d.doFinal(out, 0, OUT_LEN);
    return out;
  }

  // Digests are built at 256 bits whatever the output length: BouncyCastle derives the
  // derive-key context key into a buffer of the digest's size, and doFinal(out, off, len) is the
  // extendable output anyway.

  /** Extended output of the plain hash mode. */
  public static byte[] hash(byte[] input, int outLen) {
    Blake3Digest d = new Blake3Digest(256);
    d.update(input, 0, input.length);
    byte[] out = new byte[outLen];
    d.doFinal(out, 0, outLen);
    return out;
  }

  /** Keyed mode with a 32-byte key. */
  public static byte[] keyedHash(byte[] key, byte[] input, int outLen) {
    if (key.length != 32) {
      throw new AttestException("blake3 key: expected 32 bytes, got " + key.length);
    }
    Blake3Digest d = new Blake3Digest(256);
    d.init(Blake3Parameters.key(key));
    d.update(input, 0, input.length);
    byte[] out = new byte[outLen];
    d.doFinal(out, 0, outLen);
    return out;
  }

  /** Derive-key mode: {@code context} is the application's fixed context string. */
  public static byte[] deriveKey(String context, byte[] material, int outLen) {
    Blake3Digest d = new Blake3Digest(256);
    d.init(Blake3Parameters.context(context.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    d.update(material, 0, material.length);
    byte[] out = new byte[outLen];
    d.doFinal(out, 0, outLen);
    return out;
  }

  /** BLAKE3-256 of input given in pieces: a file too large to hold in memory, say. */
  public static final class Hasher {
    private final Blake3Digest d = new Blake3Digest(256);

    public void update(byte[] input, int off, int len) {
      d.update(input, off, len);
    }

    /**
     * Hashes what {@code in} gives until its end or past {@code max} bytes, whichever is first,
     * also writing it to {@code copy} (null: nowhere), through one 64 KiB buffer; returns the bytes
     * taken, {@code max + 1} or more when {@code in} held more than {@code max}.
     */
    public long update(InputStream in, OutputStream copy, long max) throws IOException {
      byte[] buf = new byte[64 * 1024];
      long total = 0;
      for (int n = in.read(buf); n >= 0 && total <= max; n = in.read(buf)) {
        d.update(buf, 0, n);
        if (copy != null) {
          copy.write(buf, 0, n);
        }
        total += n;
      }
      return total;
    }

    /** 64 lowercase hex of the hash of everything given; the hasher is then spent. */
    public String hex() {
      byte[] out = new byte[OUT_LEN];
      d.doFinal(out, 0, OUT_LEN);
      return Hex.encode(out);
    }
  }

  /** 64 lowercase hex of BLAKE3-256. */
  public static String hex(byte[] input) {
    return Hex.encode(hash(input));
  }
}
