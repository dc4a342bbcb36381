package io.sandboxd.daemon;

import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.attest.HostIdentity;
import io.sandboxd.attest.KeyFile;
import io.sandboxd.attest.PrivateFile;
import io.sandboxd.attest.SigningKey;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.function.Supplier;

/**
 * This node's signing key and host record. The private key stays here, in the daemon; executors
 * never see it.
 */
public final class NodeIdentity {
  private final SigningKey key;
  private final HostIdentity host;

  private NodeIdentity(SigningKey key, HostIdentity host) {
    this.key = key;
    this.host = host;
  }

  /**
   * Loads (or creates on first start) the key and host id under {@code stateDir}; refuses a state
   * or key directory another user can write and a key file the daemon's user does not own. The key
   * signs through the engine {@code engine} gives once the key is read (it may still be loading).
   */
  public static NodeIdentity load(Path stateDir, Path keyFile, Supplier<Ed25519Engine> engine)
      throws IOException {
    // Another user who can write these could swap in a key they know: refuse them, as sshd does.
    PrivatePath.requireDirectory(stateDir, "state directory");
    Path keyDir = keyFile.toAbsolutePath().getParent();
    if (!Files.isDirectory(keyDir)) {
      Files.createDirectories(
          keyDir,
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
    PrivatePath.requireDirectory(keyDir, "key directory");
    SigningKey key = KeyFile.loadOrCreate(keyFile).signingWith(engine.get());
    Path idFile = stateDir.resolve("host-id");
    String id =
        Files.exists(idFile) ? Files.readString(idFile, StandardCharsets.UTF_8).strip() : "";
    if (id.isEmpty()) {
      // None yet, or an empty file that a host-id write cut short (before they were written
      // whole) left: records never name an empty host.
      Files.deleteIfExists(idFile);
      byte[] r = new byte[8];
      new SecureRandom().nextBytes(r);
      id = hostname() + "-" + HexFormat.of().formatHex(r);
      PrivateFile.create(idFile, (id + "\n").getBytes(StandardCharsets.UTF_8));
    }
    String platform =
        System.getProperty("os.name").toLowerCase(java.util.Locale.ROOT)
            + "-"
            + System.getProperty("os.arch")
            + " java-"
            + System.getProperty("java.version")
            + " chicory-1.7.5";
    return new NodeIdentity(key, new HostIdentity(id, key.publicKey().hex(), platform));
  }

  /**
   * A node identity that lives only in memory, under a fresh key no one else holds: what the
   * start-up primer signs with, so that nothing it seals could pass for this node's record. It
   * signs through {@code engine}.
   */
  public static NodeIdentity ephemeral(Ed25519Engine engine) {
    SigningKey key = SigningKey.generate().signingWith(engine);
    return new NodeIdentity(
        key, new HostIdentity("ephemeral", key.publicKey().hex(), System.getProperty("os.name")));
  }

  private static String hostname() {
    try {
      String h = Files.readString(Path.of("/etc/hostname"), StandardCharsets.UTF_8).strip();
      if (!h.isEmpty()) {
        return h;
      }
    } catch (IOException e) {
      // fall through to the JDK's answer
    }
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "node";
    }
  }

  public SigningKey key() {
    return key;
  }

  public HostIdentity host() {
    return host;
  }
}
