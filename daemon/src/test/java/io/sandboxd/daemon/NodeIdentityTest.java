package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.sandboxd.attest.Ed25519Engine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node's key and host id: made once, read back the same, never an empty host id. */
class NodeIdentityTest {
  @TempDir Path tmp;

  /** A private state directory, as the daemon requires. */
  private Path state() throws IOException {
    return Files.createDirectories(
        tmp.resolve("state"),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
  }

  private NodeIdentity load(Path state) throws IOException {
    return NodeIdentity.load(
        state, state.resolve("keys/node.ed25519"), Ed25519Engine::bouncyCastle);
  }

  @Test
  void aNodeIsTheSameNodeOnItsNextStart() throws IOException {
    Path state = state();
    NodeIdentity first = load(state);
    NodeIdentity again = load(state);
    assertEquals(first.host(), again.host());
    assertEquals(first.host().id() + "\n", Files.readString(state.resolve("host-id")));
  }

  @Test
  void anEmptyHostIdLeftByACutWriteIsMadeAnew() throws IOException {
    Path state = state();
    String key = load(state).host().publicKey();
    Files.writeString(state.resolve("host-id"), "\n");
    NodeIdentity again = load(state);
    assertFalse(again.host().id().isBlank());
    assertEquals(again.host().id() + "\n", Files.readString(state.resolve("host-id")));
    assertEquals(key, again.host().publicKey(), "the key is kept");
  }
}
