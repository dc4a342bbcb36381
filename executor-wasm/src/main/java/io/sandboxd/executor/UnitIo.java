package io.sandboxd.executor;

import java.util.List;
import java.util.Optional;

/**
 * What a WASI command is given and how much of its output is kept: its full argv (empty: the unit's
 * address alone, as argv[0]), its stdin (empty: none attached, reads end at once), and the bytes of
 * stdout and of stderr the run keeps (past them the stream is cut, and counted).
 */
public record UnitIo(
    List<String> args, Optional<byte[]> stdin, int stdoutMaxBytes, int stderrMaxBytes) {
  /** Output bytes kept per stream when the node configures none. */
  public static final int DEFAULT_OUTPUT_BYTES = 1 << 20;

  /** No arguments, no stdin, the default output caps. */
  public static final UnitIo NONE =
      new UnitIo(List.of(), Optional.empty(), DEFAULT_OUTPUT_BYTES, DEFAULT_OUTPUT_BYTES);

  public UnitIo {
    args = List.copyOf(args);
    stdin = stdin.map(byte[]::clone);
    if (stdoutMaxBytes < 0 || stderrMaxBytes < 0) {
      throw new IllegalArgumentException("output caps must not be negative");
    }
  }

  /** The stdin bytes (a copy), empty when none was attached. */
  @Override
  public Optional<byte[]> stdin() {
    return stdin.map(byte[]::clone);
  }

  /** The argv the guest sees: the given one, else the unit's address alone. */
  public List<String> argv(String unitAddress) {
    return args.isEmpty() ? List.of(unitAddress) : args;
  }
}
