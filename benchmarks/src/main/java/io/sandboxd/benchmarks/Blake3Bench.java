package io.sandboxd.benchmarks;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.crypto.digests.Blake3Digest;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;

/**
 * BLAKE3-256 throughput of BouncyCastle's {@code Blake3Digest} (what {@code attest.Blake3} uses)
 * against io.github.rctcwyvrn:blake3. Each op hashes {@code size} bytes, and the byte counter
 * reports bytes/s directly: read its {@code bytes} line as the MB/s figure (÷ 10^6).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class Blake3Bench extends MicroBench {
  @Param({"1024", "65536", "1048576"})
  public int size;

  private byte[] input;

  /** Counts hashed bytes, so JMH prints bytes/s next to ops/s. */
  @State(Scope.Thread)
  @org.openjdk.jmh.annotations.AuxCounters(org.openjdk.jmh.annotations.AuxCounters.Type.OPERATIONS)
  public static class Bytes {
    public long bytes;

    @Setup(Level.Iteration)
    public void reset() {
      bytes = 0;
    }
  }

  @Setup(Level.Trial)
  public void setUp() {
    input = new byte[size];
    new SplittableRandom(size).nextBytes(input);
  }

  @Benchmark
  public void bouncyCastle(Bytes counter, Blackhole bh) {
    Blake3Digest d = new Blake3Digest(256);
    d.update(input, 0, input.length);
    byte[] out = new byte[32];
    d.doFinal(out, 0);
    counter.bytes += input.length;
    bh.consume(out);
  }

  @Benchmark
  public void rctcwyvrn(Bytes counter, Blackhole bh) {
    io.github.rctcwyvrn.blake3.Blake3 h = io.github.rctcwyvrn.blake3.Blake3.newInstance();
    h.update(input);
    counter.bytes += input.length;
    bh.consume(h.digest());
  }
}
