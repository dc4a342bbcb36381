package io.sandboxd.executor;

import io.sandboxd.enforcer.ProgramResolver;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The run's child processes ({@code exec}): how many run now, the CPU time they used (which counts
 * against the unit's budget), and the resolver of program names over the node's search path.
 */
final class RunProcess {
  private final List<String> searchPath;
  private final Optional<Path> storageDir;
  private final AtomicLong running = new AtomicLong();
  private ProgramResolver resolver;
  private long cpuDone;
  private ProcessTree live;

  RunProcess(List<String> searchPath, Optional<Path> storageDir) {
    this.searchPath = searchPath;
    this.storageDir = storageDir;
  }

  /** The run's resolver for {@code exec}; made on first use. */
  ProgramResolver resolver() {
    if (resolver == null) {
      resolver = new ProgramResolver(Path.of("/"), searchPath, storageDir);
    }
    return resolver;
  }

  long running() {
    return running.get();
  }

  void spawning() {
    running.incrementAndGet();
  }

  void reaped() {
    running.decrementAndGet();
  }

  /** CPU time of every process the run's exec calls started, live ones included. */
  synchronized long cpuNanos() {
    return cpuDone + (live == null ? 0 : live.cpuNanos());
  }

  synchronized void started(ProcessTree tree) {
    live = tree;
  }

  /** Moves an ended (closed) tree's final CPU time into the run's total. */
  synchronized void ended(ProcessTree tree) {
    if (live == tree) {
      live = null;
    }
    cpuDone += tree.cpuNanos();
  }
}
