package io.sandboxd.benchmarks;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.ClassEnergy;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.SigningKey;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * The cost of signing a receipt (WIRE.md §2.0.3-4): the whole {@link Envelope#sign} path (integer
 * check, JCS, BLAKE3 address, Ed25519, hex) against Ed25519 alone over the same canonical bytes,
 * with canonicalize+address on its own to show where the rest goes. {@code engine} is the daemon's
 * {@code signing.ed25519}: {@code bouncycastle} or {@code libsodium} (the same bytes).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class SigningBench extends MicroBench {
  @Param({"bouncycastle", "libsodium"})
  public String engine;

  private SigningKey key;
  private ObjectNode core;
  private byte[] canonical;

  @Setup
  public void setUp() {
    key =
        SigningKey.fromSeed(Blake3.hash(new byte[] {42}))
            .signingWith(
                engine.equals("libsodium")
                    ? Ed25519Engine.libsodium()
                    : Ed25519Engine.bouncyCastle());
    core = typicalReceipt().toCore();
    canonical = CanonicalJson.canonicalize(core);
  }

  /** Canonicalize + address + sign + envelope, as the daemon does for every receipt. */
  @Benchmark
  public Envelope envelopeSign() {
    return Envelope.sign(core, key);
  }

  /** Ed25519 over the already-canonical bytes: the floor the full path cannot beat. */
  @Benchmark
  public byte[] ed25519SignOnly() {
    return key.sign(canonical);
  }

  /** JCS + BLAKE3 address without the signature. */
  @Benchmark
  public String canonicalizeAndAddress() {
    return Blake3.hex(CanonicalJson.canonicalize(core));
  }

  /** A two-class receipt with one inference line, about the size the daemon emits. */
  static Receipt typicalReceipt() {
    return new Receipt(
        "run-01J9Z3K7Q4W8E2R6T0Y5U1I3O7",
        Blake3.hex(new byte[] {1}),
        Blake3.hex(new byte[] {2}),
        "S2",
        Map.of(
            DeviceClass.Cpu,
            new ClassEnergy(1_234_567, Provenance.HwShunt, "rapl:package-0", 1, 10_000_000),
            DeviceClass.Gpu,
            new ClassEnergy(987_654, Provenance.ModelBased, "nvml:0", 1000, 100_000_000)),
        12_000,
        List.of(new Receipt.InferenceUse(DeviceClass.Gpu, 500_000, 3)),
        1_250,
        268_435_456,
        1_900,
        new Receipt.IoUse(42, 1_048_576, 65_536),
        new Receipt.NetUse(4_096, 131_072),
        1_767_225_600_000L,
        1_767_225_601_900L);
  }
}
