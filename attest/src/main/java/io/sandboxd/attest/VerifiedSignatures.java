package io.sandboxd.attest;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.crypto.digests.Blake3Digest;
import org.bouncycastle.crypto.params.Blake3Parameters;

/**
 * The envelope signatures this process made or has already found valid, so that checking one again
 * (the store's background seal of runs it stored a moment ago, a run read back, an export) costs a
 * keyed hash instead of an Ed25519 verification (about 76% of a stored run's check).
 *
 * <p>An entry is a fingerprint of (public key, address, signature): a keyed BLAKE3 under a key
 * drawn at random per process, cut to 128 bits, so nobody outside the process can compute one, let
 * alone find an invalid triple that shares one with a valid triple. Ed25519 verification is a pure
 * function of the key, the message and the signature, and {@link Envelope#verify} looks here only
 * after it has checked that the core hashes to the address, so a hit means the same key, message
 * and signature that were valid before. The table is a fixed array ({@value #SLOTS} slots, 4 MiB)
 * in buckets of {@value #WAYS}: a new entry goes first in its bucket and the bucket's oldest falls
 * out, so what it holds never grows and the oldest entries go as new ones come; a miss only costs
 * the full verification.
 */
final class VerifiedSignatures {
  private VerifiedSignatures() {}

  static final int SLOTS = 1 << 18;

  /**
   * Entries a bucket. One slot an entry (direct-mapped) made two entries that share a slot evict
   * each other on every pass: about a third of a warm store's signatures were verified again in
   * full with the table half full. In buckets of eight, an entry falls out only when eight newer
   * ones came to its bucket.
   */
  static final int WAYS = 8;

  private static final int BUCKETS = SLOTS / WAYS;
  private static final int BUCKET_BITS = Integer.numberOfTrailingZeros(BUCKETS);
  private static final int STRIPES = 64;

  private static final byte[] KEY = new byte[32];

  static {
    new SecureRandom().nextBytes(KEY);
  }

  // Two longs a slot (the 128-bit fingerprint), WAYS slots a bucket, newest first; zero is "empty"
  // (a fingerprint of zero is never stored: 2^-128). Written and read under the bucket's stripe
  // lock, so no slot is seen half written.
  private static final long[] TABLE = new long[2 * SLOTS];
  private static final Object[] LOCKS = new Object[STRIPES];

  static {
    for (int i = 0; i < STRIPES; i++) {
      LOCKS[i] = new Object();
    }
  }

  private static final AtomicLong VERIFICATIONS = new AtomicLong();

  // One keyed digest a thread: a fresh one costs its state arrays and key schedule on every
  // signature made, which the signing path pays (doFinal resets it to the keyed start).
  private static final ThreadLocal<Blake3Digest> DIGEST =
      ThreadLocal.withInitial(
          () -> {
            Blake3Digest d = new Blake3Digest(256);
            d.init(Blake3Parameters.key(KEY));
            return d;
          });

  /** The fingerprint of a triple: 16 bytes of keyed BLAKE3 over the raw key, address, signature. */
  private static long[] fingerprint(byte[] publicKey, byte[] address, byte[] signature) {
    Blake3Digest d = DIGEST.get();
    d.update(publicKey, 0, publicKey.length);
    d.update(address, 0, address.length);
    d.update(signature, 0, signature.length);
    byte[] h = new byte[16];
    d.doFinal(h, 0, h.length);
    return new long[] {longAt(h, 0), longAt(h, 8)};
  }

  private static long longAt(byte[] b, int at) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (b[at + i] & 0xffL);
    }
    return v;
  }

  private static int bucket(long[] f) {
    return (int) (f[0] >>> (64 - BUCKET_BITS));
  }

  /** Remembers a triple known valid (signed here, or verified). */
  static void remember(byte[] publicKey, byte[] address, byte[] signature) {
    long[] f = fingerprint(publicKey, address, signature);
    int b = bucket(f);
    int first = 2 * WAYS * b;
    synchronized (LOCKS[b % STRIPES]) {
      if (indexOf(first, f) >= 0) {
        return;
      }
      // The bucket's oldest entry (its last) makes room; the new one goes first.
      System.arraycopy(TABLE, first, TABLE, first + 2, 2 * (WAYS - 1));
      TABLE[first] = f[0];
      TABLE[first + 1] = f[1];
    }
  }

  /** Whether the triple is one remembered as valid. */
  static boolean known(byte[] publicKey, byte[] address, byte[] signature) {
    long[] f = fingerprint(publicKey, address, signature);
    int b = bucket(f);
    synchronized (LOCKS[b % STRIPES]) {
      return (f[0] | f[1]) != 0 && indexOf(2 * WAYS * b, f) >= 0;
    }
  }

  /** The slot of {@code f} in the bucket starting at {@code first}, or -1; under its lock. */
  private static int indexOf(int first, long[] f) {
    for (int i = first; i < first + 2 * WAYS; i += 2) {
      if (TABLE[i] == f[0] && TABLE[i + 1] == f[1]) {
        return i;
      }
    }
    return -1;
  }

  /**
   * Verifies {@code signature} over {@code message} (whose BLAKE3 the caller has checked to be
   * {@code address}) under {@code key}: remembered triples without Ed25519, others in full, each
   * valid one remembered.
   */
  static boolean verify(PublicKey key, byte[] address, byte[] message, byte[] signature) {
    byte[] raw = key.raw();
    if (known(raw, address, signature)) {
      return true;
    }
    VERIFICATIONS.incrementAndGet();
    if (!key.verify(message, signature)) {
      return false;
    }
    remember(raw, address, signature);
    return true;
  }

  /** Ed25519 verifications made (memo misses) since the process started: for tests. */
  static long verifications() {
    return VERIFICATIONS.get();
  }
}
