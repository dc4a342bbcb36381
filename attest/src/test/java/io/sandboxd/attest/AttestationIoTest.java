package io.sandboxd.attest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The attestation's {@code inputs} and {@code outputs} (WIRE.md §2.4), and the earlier shape. */
class AttestationIoTest {
  private static final SigningKey KEY = SigningKey.fromSeed(new byte[32]);
  private static final byte[] STDIN = "select 6*7;\n".getBytes(StandardCharsets.UTF_8);
  private static final byte[] STDOUT = "42\n".getBytes(StandardCharsets.UTF_8);

  private static Attestation.Builder base() {
    return Attestation.builder()
        .host(new HostIdentity("node-a", "0123456789abcdef".repeat(4), "linux-x86_64"))
        .tier("S2")
        .grantsId("a".repeat(64))
        .receipt("b".repeat(64))
        .unit("c".repeat(64))
        .journalRoot("d".repeat(64))
        .outcome(new Outcome.Completed())
        .clockConstantMs(0L)
        .issuedMs(1_700_000_000_000L);
  }

  private static Attestation withIo() {
    return base()
        .inputs(
            new Attestation.Inputs(
                List.of("sqlite3", ":memory:", "héllo"), Attestation.Blob.of(STDIN)))
        .outputs(
            new Attestation.Outputs(Attestation.Blob.of(STDOUT), Attestation.Blob.of(new byte[0])))
        .build();
  }

  @Test
  void inputsAndOutputsNameRawBytesByBlake3AndRoundTrip() {
    Attestation a = withIo();
    ObjectNode core = a.toCore();
    assertEquals(Blake3.hex(STDIN), core.at("/inputs/stdin/address").textValue());
    assertEquals(STDIN.length, core.at("/inputs/stdin/bytes").longValue());
    assertEquals(Blake3.hex(STDOUT), core.at("/outputs/stdout/address").textValue());
    assertEquals(3, core.at("/outputs/stdout/bytes").longValue());
    assertEquals(0, core.at("/outputs/stderr/bytes").longValue());
    assertEquals("héllo", core.at("/inputs/args/2").textValue());
    Attestation back = Attestation.fromCore(CanonicalJson.parse(CanonicalJson.canonicalize(core)));
    assertEquals(a, back);
    assertArrayEquals(CanonicalJson.canonicalize(core), CanonicalJson.canonicalize(back.toCore()));
    Envelope env = Envelope.sign(core, KEY);
    assertTrue(env.verify(Optional.of(KEY.publicKey())).isValid());
  }

  @Test
  void noStdinIsNullAndDiffersFromEmptyStdin() {
    Attestation none =
        base().inputs(new Attestation.Inputs(List.of("prog"), null)).outputs(null).build();
    Attestation empty =
        base()
            .inputs(new Attestation.Inputs(List.of("prog"), Attestation.Blob.of(new byte[0])))
            .build();
    assertTrue(none.toCore().at("/inputs/stdin").isNull());
    assertEquals(Blake3.hex(new byte[0]), empty.toCore().at("/inputs/stdin/address").textValue());
    assertFalse(none.toCore().has("outputs"));
    assertEquals(none, Attestation.fromCore(none.toCore()));
    assertEquals(empty, Attestation.fromCore(empty.toCore()));
  }

  @Test
  void anAttestationOfTheEarlierShapeParsesAsNullAndKeepsItsBytes() {
    Attestation old = base().build();
    ObjectNode core = old.toCore();
    assertFalse(core.has("inputs"));
    assertFalse(core.has("outputs"));
    Envelope env = Envelope.sign(core, KEY);
    Attestation read = Attestation.fromCore(env.core());
    assertNull(read.inputs());
    assertNull(read.outputs());
    // Re-encoding a stored record of the earlier shape gives its signed bytes back.
    assertEquals(env.address(), Envelope.addressOf(read.toCore()));
    // An explicit null reads the same as a missing key.
    ObjectNode nulls = core.deepCopy();
    nulls.putNull("inputs");
    nulls.putNull("outputs");
    assertNull(Attestation.fromCore(nulls).inputs());
    assertNull(Attestation.fromCore(nulls).outputs());
  }

  @Test
  void malformedInputsAndOutputsAreRefusedWithTheirPath() {
    ObjectNode core = withIo().toCore();

    assertEquals(
        "attestation.inputs.env: unknown field",
        refused(core, c -> part(c, "/inputs").put("env", "x")));
    assertTrue(
        refused(core, c -> part(c, "/inputs").remove("args"))
            .startsWith("attestation.inputs.args: missing"));
    assertTrue(
        refused(core, c -> ((ArrayNode) c.at("/inputs/args")).add(7))
            .startsWith("attestation.inputs.args[3]"));
    refused(core, c -> part(c, "/outputs/stdout").put("address", "B".repeat(64)));
    assertTrue(
        refused(core, c -> part(c, "/outputs").remove("stderr"))
            .startsWith("attestation.outputs.stderr: missing"));
    refused(core, c -> part(c, "/outputs/stderr").put("bytes", -1));
  }

  private static String refused(ObjectNode core, Consumer<ObjectNode> change) {
    return Refusal.of(Attestation::fromCore, core, change);
  }

  private static ObjectNode part(ObjectNode core, String pointer) {
    return (ObjectNode) core.at(pointer);
  }
}
