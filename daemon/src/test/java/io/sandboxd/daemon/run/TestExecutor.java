package io.sandboxd.daemon.run;

import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.Executor;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One real executor shared by a test class's tests: started before the first, closed after the last
 * (register it as a static {@code @RegisterExtension} field).
 */
public final class TestExecutor implements BeforeAllCallback, AfterAllCallback {
  /** Grants with room for any test unit and the log host call only. */
  public static final String LOGGING_GRANTS =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":9000000000000,\"cpu_time_ms\":600000,"
          + "\"memory_bytes\":1048576},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
          + "\"network\":{\"outbound\":[],\"inbound\":false},"
          + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
          + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";

  private final int workers;
  private final long wallMs;
  private Executor executor;

  /** {@code workers} threads, each run stopped after {@code wallMs} of wall time. */
  public TestExecutor(int workers, long wallMs) {
    this.workers = workers;
    this.wallMs = wallMs;
  }

  /** The started executor. */
  public Executor get() {
    if (executor == null) {
      throw new IllegalStateException("the executor starts before the class's first test");
    }
    return executor;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    executor = new Executor(workers, EnergyModel.estimate(10_000), wallMs);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    executor.close();
  }
}
