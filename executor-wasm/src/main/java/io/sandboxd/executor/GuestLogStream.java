package io.sandboxd.executor;

import io.sandboxd.enforcer.HostService;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;

/**
 * A WASI guest's stdout or stderr: cut into lines and appended to the run log when the grant allows
 * logging, otherwise discarded (the guest's write still succeeds, as it would to a closed terminal,
 * so printf-heavy programs run unchanged without the grant).
 */
final class GuestLogStream extends OutputStream {
  private final RunContext ctx;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream();

  GuestLogStream(RunContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void write(int b) {
    if (b == '\n') {
      emit();
      return;
    }
    line.write(b);
    // A guest that never writes a newline still cannot grow the daemon's heap past the log cap.
    if (line.size() >= RunContext.MAX_LOG_BYTES) {
      emit();
    }
  }

  @Override
  public void write(byte[] b, int off, int len) {
    for (int i = off; i < off + len; i++) {
      write(b[i]);
    }
  }

  /** Emits a last unterminated line, if any. */
  @Override
  public void flush() {
    if (line.size() > 0) {
      emit();
    }
  }

  @Override
  public void close() {
    flush();
  }

  private void emit() {
    byte[] bytes = line.toByteArray();
    line.reset();
    if (ctx.enforcer.mayHost(HostService.LOGGING).allowed()) {
      ctx.appendLog(bytes);
    }
  }
}
