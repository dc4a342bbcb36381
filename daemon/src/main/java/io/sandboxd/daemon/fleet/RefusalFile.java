package io.sandboxd.daemon.fleet;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * The aggregator's report of the records it refused ({@code refused.jsonl}, a JSON line each), of
 * bounded size: anyone who can publish to the records stream decides how many refusals there are,
 * so past {@link #MAX_BYTES} the file becomes {@code refused.jsonl.1} (replacing the one before)
 * and a new one starts. A line is appended whole or not at all.
 */
final class RefusalFile {
  /** The most bytes one file holds; with the one before, twice this is kept. */
  static final long MAX_BYTES = 16L << 20;

  private final Path file;
  private final Path older;
  private final long maxBytes;

  RefusalFile(Path dir) {
    this(dir, MAX_BYTES);
  }

  RefusalFile(Path dir, long maxBytes) {
    this.file = dir.resolve("refused.jsonl");
    this.older = dir.resolve("refused.jsonl.1");
    this.maxBytes = maxBytes;
  }

  Path file() {
    return file;
  }

  /** Appends {@code line} and a newline; a full disk leaves no part of it behind. */
  void append(String line) throws IOException {
    ByteBuffer b = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
    if (Files.exists(file) && Files.size(file) + b.remaining() > maxBytes) {
      Files.move(file, older, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
    try (FileChannel ch =
        FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
      long end = ch.size();
      try {
        while (b.hasRemaining()) {
          ch.write(b, end + b.position());
        }
      } catch (IOException e) {
        try {
          ch.truncate(end);
        } catch (IOException t) {
          e.addSuppressed(t);
        }
        throw e;
      }
    }
  }
}
