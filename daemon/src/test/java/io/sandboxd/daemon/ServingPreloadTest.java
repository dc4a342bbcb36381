package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ServingPreloadTest {

  @Test
  void awaitReturnsOnceLoadedAndKeepsTheCallersInterrupt() {
    ServingPreload preload = ServingPreload.start();
    Thread.currentThread().interrupt();
    preload.await();
    // An interrupt does not cut the wait short (the server is built only after it), and is kept.
    assertTrue(Thread.interrupted(), "the caller's interrupt is restored");
    Set<String> live =
        Thread.getAllStackTraces().keySet().stream()
            .filter(Thread::isAlive)
            .map(Thread::getName)
            .collect(Collectors.toSet());
    assertFalse(live.contains("sandboxd-preload"), "the preload thread has ended: " + live);
  }

  @Test
  void everyClassItNamesResolves() throws Exception {
    for (String name : ServingPreload.CLASSES) {
      // Without initializing: a stale name would end the preload at that line, silently.
      Class.forName(name, false, ServingPreload.class.getClassLoader());
    }
    assertFalse(ServingPreload.CLASSES.isEmpty());
  }
}
