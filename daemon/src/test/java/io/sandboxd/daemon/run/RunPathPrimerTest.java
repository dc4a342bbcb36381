package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.attest.Envelope;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.Executor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The start-up primer: the real pipeline runs its unit, and it leaves nothing behind. */
class RunPathPrimerTest {
  @RegisterExtension static final TestExecutor executor = new TestExecutor(1, 60_000);

  @TempDir Path tmp;

  @Test
  void theEmbeddedUnitRunsThroughThePipelineAndItsStorageIsRemoved() throws Exception {
    Path storage = tmp.resolve("prime");
    // What a crash in an earlier prime left there.
    Files.writeString(Files.createDirectories(storage.resolve("left")).resolve("file"), "x");
    RunRecord r = once(Set.of(DeviceClass.Cpu), storage);

    assertEquals("\"Completed\"", r.outcomeJson());
    assertTrue(r.log().contains("hello from a sandboxd unit"), r.log());
    assertTrue(r.log().contains("random_u64 was denied, as granted"), r.log());
    // Launched with its storage under the base given, which is gone afterwards.
    assertFalse(Files.exists(storage));
    // Sealed whole, under one key: each record verifies as the store's reader would check it.
    for (Envelope e : new Envelope[] {r.receipt(), r.attestation(), r.segment()}) {
      assertTrue(e.verify(Optional.empty()).isValid(), e.address());
      assertEquals(r.receipt().publicKey(), e.publicKey());
    }
  }

  /** One prime run: a prime told to stop at once still makes its first run. */
  private RunRecord once(Set<DeviceClass> meterable, Path storage) {
    RunPathPrimer.Primed p =
        RunPathPrimer.prime(
            executor.get(),
            Ed25519Engine.bouncyCastle(),
            meterable,
            storage,
            1_000,
            60_000,
            () -> true);
    assertEquals(1, p.runs());
    return p.last();
  }

  @Test
  void itRunsAgainUntilItsCountItsTimeOrAClientStopsIt() {
    // Its count.
    assertEquals(
        7,
        RunPathPrimer.prime(
                executor.get(),
                Ed25519Engine.bouncyCastle(),
                Set.of(),
                tmp.resolve("c"),
                7,
                60_000,
                () -> false)
            .runs());
    // Its time: past the budget after the first run, it makes no second.
    assertEquals(
        1,
        RunPathPrimer.prime(
                executor.get(),
                Ed25519Engine.bouncyCastle(),
                Set.of(),
                tmp.resolve("t"),
                1_000,
                0,
                () -> false)
            .runs());
    // A client's run: asked after each run, the third answer stops it.
    java.util.concurrent.atomic.AtomicInteger asked =
        new java.util.concurrent.atomic.AtomicInteger();
    RunPathPrimer.Primed p =
        RunPathPrimer.prime(
            executor.get(),
            Ed25519Engine.bouncyCastle(),
            Set.of(),
            tmp.resolve("s"),
            1_000,
            60_000,
            () -> asked.incrementAndGet() >= 3);
    assertEquals(3, p.runs());
    assertEquals("\"Completed\"", p.last().outcomeJson());
    assertFalse(Files.exists(tmp.resolve("s")));
  }

  @Test
  void eachPrimeSignsUnderAFreshKey() {
    RunRecord a = once(Set.of(), tmp.resolve("a"));
    RunRecord b = once(Set.of(), tmp.resolve("b"));
    assertNotEquals(a.receipt().publicKey(), b.receipt().publicKey());
  }

  @Test
  void itsStorageIsRemovedWhenTheRunFails() throws Exception {
    Executor closed = new Executor(1, EnergyModel.estimate(10_000), 1_000);
    closed.close();
    Path storage = Files.createDirectories(tmp.resolve("left").resolve("inner"));
    Files.writeString(storage.resolve("file"), "x");
    assertThrows(
        RuntimeException.class,
        () ->
            RunPathPrimer.prime(
                closed,
                Ed25519Engine.bouncyCastle(),
                Set.of(),
                tmp.resolve("left"),
                5,
                60_000,
                () -> false));
    assertFalse(Files.exists(tmp.resolve("left")));
  }

  @Test
  void theEmbeddedUnitIsTheExampleUnderItsGrants() throws Exception {
    Path examples = Path.of(System.getProperty("user.dir")).getParent().resolve("examples");
    assertArrayEquals(
        Files.readAllBytes(examples.resolve("hello.wasm")),
        RunPathPrimer.resource(RunPathPrimer.MODULE));
    assertArrayEquals(
        Files.readAllBytes(examples.resolve("hello.grants.json")),
        RunPathPrimer.resource(RunPathPrimer.GRANTS));
  }

  @Test
  void itsMainWritesTheUnitAndGrantsThatBuildStartCacheSubmits() throws Exception {
    Path dir = tmp.resolve("unit/nested");
    RunPathPrimer.main(new String[] {dir.toString()});
    assertArrayEquals(
        RunPathPrimer.resource(RunPathPrimer.MODULE),
        Files.readAllBytes(dir.resolve(RunPathPrimer.MODULE)));
    assertArrayEquals(
        RunPathPrimer.resource(RunPathPrimer.GRANTS),
        Files.readAllBytes(dir.resolve(RunPathPrimer.GRANTS)));
  }
}
