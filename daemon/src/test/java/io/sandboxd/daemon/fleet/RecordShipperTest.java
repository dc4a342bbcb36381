package io.sandboxd.daemon.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.FleetProof;
import io.sandboxd.attest.LogCheckpoint;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.daemon.ReportPace;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a node takes from its proof subject: only a proof that verifies against its aggregator's
 * checkpoint. Anything else (junk of any shape, a proof altered anywhere, another aggregator's or
 * another origin's) is refused without an exception, so it is acknowledged and not delivered for
 * ever, and the refusals reach the log at a pace.
 */
class RecordShipperTest {
  static final String ORIGIN = "sandboxd.fleet";

  @TempDir Path dir;
  SigningKey aggregator;
  byte[] genuine;
  String address;

  @BeforeEach
  void proveOneRecord() throws Exception {
    aggregator = SigningKey.fromSeed(filled(0x33));
    address = Blake3.hex("a record".getBytes(StandardCharsets.UTF_8));
    try (FleetLog log = FleetLog.open(dir.resolve("fleet.log"))) {
      log.append(Blake3.hex("an earlier record".getBytes(StandardCharsets.UTF_8)), "11".repeat(32));
      long leaf = log.append(address, "22".repeat(32));
      log.sync();
      String note = LogCheckpoint.of(ORIGIN, log.head()).sign(aggregator);
      genuine = CanonicalJson.canonicalize(new FleetProof(address, log.prove(leaf), note).toJson());
    }
  }

  private static byte[] filled(int b) {
    byte[] seed = new byte[32];
    Arrays.fill(seed, (byte) b);
    return seed;
  }

  // One pace for the test, as for a shipper: its refusals are logged once, not 3,000 times.
  final ReportPace pace = new ReportPace();

  private Optional<FleetProof> verified(byte[] data) {
    return RecordShipper.verified(data, aggregator.publicKey(), ORIGIN, pace);
  }

  @Test
  void aProofFromTheAggregatorIsTaken() {
    Optional<FleetProof> p = verified(genuine);
    assertTrue(p.isPresent());
    assertEquals(address, p.get().address());
  }

  @Test
  void anotherAggregatorsOrOriginsProofIsRefused() {
    SigningKey other = SigningKey.fromSeed(filled(0x44));
    assertTrue(RecordShipper.verified(genuine, other.publicKey(), ORIGIN, pace).isEmpty());
    assertTrue(
        RecordShipper.verified(genuine, aggregator.publicKey(), "elsewhere", pace).isEmpty());
  }

  @Test
  void junkOfAnyShapeIsRefusedWithoutAnException() {
    Random random = new Random(20261206L);
    int taken = 0;
    for (int i = 0; i < 3_000; i++) {
      byte[] data =
          switch (i % 3) {
            case 0 -> { // random bytes of any length
              byte[] b = new byte[random.nextInt(600)];
              random.nextBytes(b);
              yield b;
            }
            case 1 -> { // the genuine proof with one byte changed
              byte[] b = genuine.clone();
              int at = random.nextInt(b.length);
              b[at] = (byte) (b[at] ^ (1 + random.nextInt(255)));
              yield b;
            }
            default -> Arrays.copyOf(genuine, random.nextInt(genuine.length)); // cut short
          };
      if (verified(data).isPresent()) {
        taken++;
      }
    }
    assertEquals(0, taken, "no altered, cut or random message is taken as a proof");
  }
}
