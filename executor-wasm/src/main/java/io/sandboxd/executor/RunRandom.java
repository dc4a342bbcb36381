package io.sandboxd.executor;

import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.HostService;
import java.security.SecureRandom;

/** The run's randomness: the node's generator, behind the {@code host.random} grant. */
final class RunRandom {
  private final Enforcer enforcer;
  private final SecureRandom random;

  RunRandom(Enforcer enforcer, SecureRandom random) {
    this.enforcer = enforcer;
    this.random = random;
  }

  Decision grant() {
    return enforcer.mayHost(HostService.RANDOM);
  }

  long nextLong() {
    return random.nextLong();
  }

  byte[] bytes(int n) {
    byte[] out = new byte[n];
    random.nextBytes(out);
    return out;
  }
}
