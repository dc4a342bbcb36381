package io.sandboxd.daemon.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * What a crash left at the end of the store's write-ahead log, read before SQLite recovers it:
 * frames of committed transactions (replayed, so kept) and the torn tail after the last commit
 * (frames of a transaction that never committed, or a partly written frame), which recovery drops.
 * Nothing in a torn tail was ever acknowledged: a client is answered only after its commit frame is
 * fsynced. The WAL's layout and checksum are SQLite's documented file format.
 */
public record WalTail(long committedFrames, long droppedFrames, long droppedBytes, long validEnd) {
  private static final int HEADER = 32;
  private static final int FRAME_HEADER = 24;

  /** No log left behind: the last session closed the store cleanly (or never wrote). */
  public static final WalTail CLEAN = new WalTail(0, 0, 0, 0);

  // validEnd: the offset just past the last frame of the log's live generation with a good
  // checksum.

  /** Whether recovery drops anything. */
  public boolean torn() {
    return droppedFrames > 0 || droppedBytes > 0;
  }

  /** The log line for a store opened after a crash. */
  public String describe() {
    if (committedFrames == 0 && !torn()) {
      return "closed cleanly";
    }
    if (!torn()) {
      return "recovered after an unclean stop: " + committedFrames + " committed log frames kept";
    }
    return "recovered after an unclean stop: "
        + committedFrames
        + " committed log frames kept; a torn tail of "
        + droppedFrames
        + " frames ("
        + droppedBytes
        + " bytes) of a transaction that never committed was dropped (never acknowledged)";
  }

  /** Reads the WAL next to {@code storeFile}; a missing or empty log is {@link #CLEAN}. */
  public static WalTail inspect(Path storeFile) throws IOException {
    Path wal = storeFile.resolveSibling(storeFile.getFileName() + "-wal");
    if (!Files.isRegularFile(wal)) {
      return CLEAN;
    }
    try (FileChannel ch = FileChannel.open(wal, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size == 0) {
        return CLEAN;
      }
      if (size < HEADER) {
        return new WalTail(0, 0, size, 0);
      }
      ByteBuffer header = read(ch, 0, HEADER);
      int magic = header.getInt(0);
      if (magic != 0x377f0682 && magic != 0x377f0683) {
        // Not a log SQLite will replay: it is discarded whole.
        return new WalTail(0, 0, size, 0);
      }
      ByteOrder order = (magic & 1) == 1 ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
      int pageSize = header.getInt(8);
      int salt1 = header.getInt(16);
      int salt2 = header.getInt(20);
      int[] sum = checksum(header, 0, 24, order, 0, 0);
      if (sum[0] != header.getInt(24) || sum[1] != header.getInt(28) || !validPageSize(pageSize)) {
        return new WalTail(0, 0, size, 0);
      }
      long frameSize = FRAME_HEADER + (long) pageSize;
      long committed = 0;
      long valid = 0;
      long pos = HEADER;
      while (pos + frameSize <= size) {
        ByteBuffer frame = read(ch, pos, (int) frameSize);
        if (frame.getInt(8) != salt1 || frame.getInt(12) != salt2) {
          break; // frames of an earlier generation of the log: not part of this one
        }
        int[] next = checksum(frame, 0, 8, order, sum[0], sum[1]);
        next = checksum(frame, FRAME_HEADER, pageSize, order, next[0], next[1]);
        if (next[0] != frame.getInt(16) || next[1] != frame.getInt(20)) {
          break;
        }
        sum = next;
        valid++;
        if (frame.getInt(4) != 0) {
          committed = valid;
        }
        pos += frameSize;
      }
      long dropped = valid - committed;
      long tailBytes = dropped * frameSize + partialFrameBytes(ch, pos, size, salt1, salt2);
      return new WalTail(committed, dropped, tailBytes, pos);
    }
  }

  /** Bytes of a partly written frame of this generation at {@code pos} (0 if none). */
  private static long partialFrameBytes(FileChannel ch, long pos, long size, int salt1, int salt2)
      throws IOException {
    if (pos >= size) {
      return 0;
    }
    if (size - pos < FRAME_HEADER) {
      return size - pos;
    }
    ByteBuffer h = read(ch, pos, FRAME_HEADER);
    return h.getInt(8) == salt1 && h.getInt(12) == salt2 ? size - pos : 0;
  }

  private static boolean validPageSize(int p) {
    return p >= 512 && p <= 65536 && Integer.bitCount(p) == 1;
  }

  private static ByteBuffer read(FileChannel ch, long pos, int len) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(len).order(ByteOrder.BIG_ENDIAN);
    while (b.hasRemaining()) {
      if (ch.read(b, pos + b.position()) < 0) {
        throw new IOException("write-ahead log shorter than its size");
      }
    }
    return b.flip();
  }

  /** SQLite's WAL checksum over {@code len} bytes (a multiple of 8) from {@code off}. */
  private static int[] checksum(ByteBuffer b, int off, int len, ByteOrder order, int s0, int s1) {
    ByteBuffer words = b.duplicate().order(order);
    for (int i = off; i < off + len; i += 8) {
      s0 += words.getInt(i) + s1;
      s1 += words.getInt(i + 4) + s0;
    }
    return new int[] {s0, s1};
  }
}
