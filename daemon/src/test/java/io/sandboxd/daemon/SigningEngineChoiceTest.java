package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.config.ConfigException;
import io.sandboxd.config.Signing;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** How signing.ed25519 picks the engine when libsodium loads, and when it does not. */
class SigningEngineChoiceTest {
  private final AtomicInteger loads = new AtomicInteger();

  /** A libsodium that does not load, counting the tries. */
  private Ed25519Engine missing() {
    loads.incrementAndGet();
    throw new AttestException("libsodium: cannot load 'sodium': not here");
  }

  @Test
  void withoutLibsodiumAutoSignsThroughBouncyCastleAndLibsodiumRefusesTheStart() {
    assertSame(
        Ed25519Engine.bouncyCastle(), Daemon.signingEngine(Signing.Engine.AUTO, this::missing));
    ConfigException e =
        assertThrows(
            ConfigException.class,
            () -> Daemon.signingEngine(Signing.Engine.LIBSODIUM, this::missing));
    assertEquals(
        "$.signing.ed25519: libsodium cannot be used: libsodium: cannot load 'sodium': not here",
        e.getMessage());
    assertEquals(2, loads.get());
  }

  @Test
  void bouncyCastleNeverLoadsLibsodium() {
    assertSame(
        Ed25519Engine.bouncyCastle(),
        Daemon.signingEngine(Signing.Engine.BOUNCYCASTLE, this::missing));
    assertEquals(0, loads.get());
  }

  @Test
  void withLibsodiumAutoAndLibsodiumSignThroughIt() {
    Ed25519Engine sodium = Ed25519Engine.libsodium();
    for (Signing.Engine choice :
        new Signing.Engine[] {Signing.Engine.AUTO, Signing.Engine.LIBSODIUM}) {
      assertSame(sodium.getClass(), Daemon.signingEngine(choice).getClass(), choice.spelling());
    }
  }
}
