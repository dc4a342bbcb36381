package io.sandboxd.benchmarks;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.store.StoreEncoding;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;

/**
 * What the store's compact row encoding (issue 22) costs per signed record: encoding a receipt
 * envelope as the store writes it and decoding it as the verifier reads it, against the UTF-8 copy
 * a TEXT row took before, and against signing the same receipt (what a run pays anyway).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class StoreEncodingBench extends MicroBench {
  private SigningKey key;
  private String line;
  private byte[] stored;

  @Setup
  public void setUp() {
    key = SigningKey.fromSeed(Blake3.hash(new byte[] {7}));
    line = Envelope.sign(SigningBench.typicalReceipt().toCore(), key).toJsonLine();
    stored = StoreEncoding.encode(line);
  }

  /** The stored form of a receipt envelope, as a run's append makes it (off the store lock). */
  @Benchmark
  public byte[] encode() {
    return StoreEncoding.encode(line);
  }

  /** The text back from its stored form, as every read and the verifier do. */
  @Benchmark
  public String decode() {
    return StoreEncoding.decode(stored);
  }

  /** The baseline: the UTF-8 bytes a TEXT row held before (what sqlite-jdbc copies). */
  @Benchmark
  public byte[] utf8Text() {
    return line.getBytes(StandardCharsets.UTF_8);
  }

  /** For scale: signing the same receipt, which every run does once per record. */
  @Benchmark
  public Envelope sign() {
    return Envelope.sign(SigningBench.typicalReceipt().toCore(), key);
  }
}
