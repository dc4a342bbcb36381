package io.sandboxd.executor;

import java.io.OutputStream;
import java.util.Arrays;

/**
 * A WASI guest's stdout or stderr: every byte written is counted; the first {@code cap} are kept
 * (when the grant lets the unit emit output at all), the rest dropped, so a guest that writes
 * forever costs the daemon at most the cap. The guest's writes always succeed.
 */
final class OutputCapture extends OutputStream {
  private final int cap;
  private final boolean keep;
  private byte[] buf = new byte[256];
  private int size;
  private long written;

  OutputCapture(int cap, boolean keep) {
    this.cap = cap;
    this.keep = keep;
  }

  @Override
  public void write(int b) {
    write(new byte[] {(byte) b}, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) {
    written += len;
    int take = keep ? Math.min(len, cap - size) : 0;
    if (take <= 0) {
      return;
    }
    if (size + take > buf.length) {
      buf = Arrays.copyOf(buf, (int) Math.min(cap, Math.max(2L * buf.length, size + take)));
    }
    System.arraycopy(b, off, buf, size, take);
    size += take;
  }

  /** What the run produced on this stream. */
  ExecutionResult.Output output() {
    return new ExecutionResult.Output(Arrays.copyOf(buf, size), written, keep);
  }
}
