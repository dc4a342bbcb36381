package io.sandboxd.daemon;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The records one logger publishes while a test holds it open, for asserting what was logged. */
public final class LogCapture extends Handler implements AutoCloseable {
  private final Logger logger;
  private final List<LogRecord> records = new ArrayList<>();

  private LogCapture(Logger logger) {
    this.logger = logger;
  }

  /** Starts capturing what the logger named {@code name} publishes. */
  public static LogCapture of(String name) {
    LogCapture c = new LogCapture(Logger.getLogger(name));
    c.logger.addHandler(c);
    return c;
  }

  /** The records published so far, in order. */
  public synchronized List<LogRecord> records() {
    return List.copyOf(records);
  }

  @Override
  public synchronized void publish(LogRecord r) {
    records.add(r);
  }

  @Override
  public void flush() {}

  @Override
  public void close() {
    logger.removeHandler(this);
  }
}
