package io.sandboxd.daemon.run;

import io.sandboxd.config.DaemonConfig;
import io.sandboxd.executor.UnitIo;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * What a submission gives a WASI command: its full argv (empty: the unit's address alone) and its
 * stdin (empty: none attached). {@link #check} holds them to the node's io caps.
 */
public record CommandInput(List<String> args, Optional<byte[]> stdin) {
  public static final CommandInput NONE = new CommandInput(List.of(), Optional.empty());

  public CommandInput {
    args = List.copyOf(args);
    stdin = stdin.map(byte[]::clone);
  }

  @Override
  public Optional<byte[]> stdin() {
    return stdin.map(byte[]::clone);
  }

  /** Whether stdin is attached (without copying it, as {@link #stdin()} does). */
  public boolean hasStdin() {
    return stdin.isPresent();
  }

  /** Whether anything is given at all. */
  public boolean given() {
    return !args.isEmpty() || stdin.isPresent();
  }

  /**
   * The executor's view of this input under {@code caps}: a NUL byte in an argument (C would cut it
   * there) is an {@link AdmissionException} naming its index; more arguments, argument bytes or
   * stdin bytes than the caps allow an {@link InputTooLargeException} naming the cap.
   */
  public UnitIo check(DaemonConfig.Io caps) {
    capped("args", args.size(), "arguments", "args_max_count", caps.argsMaxCount());
    long total = 0;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      int nul = a.indexOf('\0');
      if (nul >= 0) {
        throw new AdmissionException(
            "args[" + i + "]: contains a NUL byte at character " + nul + "; argv strings cannot");
      }
      // Each argument costs its UTF-8 bytes and the NUL that ends it in the guest's memory.
      total += a.getBytes(StandardCharsets.UTF_8).length + 1L;
    }
    capped("args", total, "bytes (UTF-8, with their NULs)", "args_max_bytes", caps.argsMaxBytes());
    long in = stdin.map(b -> (long) b.length).orElse(0L);
    capped("stdin", in, "bytes", "stdin_max_bytes", caps.stdinMaxBytes());
    return new UnitIo(args, stdin, (int) caps.stdoutMaxBytes(), (int) caps.stderrMaxBytes());
  }

  /**
   * Throws an {@link InputTooLargeException} naming {@code field}, its size and the io cap {@code
   * cap} when {@code size} is above {@code max}.
   */
  private static void capped(String field, long size, String unit, String cap, long max) {
    if (size > max) {
      throw new InputTooLargeException(
          field + ": " + size + " " + unit + "; this node takes at most io." + cap + " = " + max);
    }
  }
}
