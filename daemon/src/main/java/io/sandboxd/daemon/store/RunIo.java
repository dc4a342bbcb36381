package io.sandboxd.daemon.store;

import io.sandboxd.attest.Blake3;
import io.sandboxd.executor.ExecutionResult;
import java.util.List;
import java.util.Optional;

/**
 * A WASI command's inputs and outputs as stored with its run: the argv it saw, the stdin it was
 * given (empty: none), what it wrote to stdout and stderr (as kept), and its exit status. The bytes
 * live in the store's content-addressed {@code io_blobs}, keyed by BLAKE3 of the raw bytes.
 */
public record RunIo(
    List<String> args,
    Optional<byte[]> stdin,
    ExecutionResult.Output stdout,
    ExecutionResult.Output stderr,
    int exitStatus,
    boolean exited) {
  public RunIo {
    args = List.copyOf(args);
    stdin = stdin.map(byte[]::clone);
  }

  @Override
  public Optional<byte[]> stdin() {
    return stdin.map(byte[]::clone);
  }

  /** What the store keeps of a run's stream without its bytes. */
  public record Stream(String address, long bytes, long written, boolean kept) {
    static Stream of(ExecutionResult.Output o) {
      byte[] b = o.bytes();
      return new Stream(Blake3.hex(b), b.length, o.written(), o.kept());
    }
  }

  /** A stored run's inputs and outputs by address: what {@code runs show} and GetOutput read. */
  public record Stored(
      List<String> args,
      Optional<String> stdinAddress,
      long stdinBytes,
      Stream stdout,
      Stream stderr,
      int exitStatus,
      boolean exited) {
    public Stored {
      args = List.copyOf(args);
    }
  }
}
