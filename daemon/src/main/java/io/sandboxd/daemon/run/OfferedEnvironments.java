package io.sandboxd.daemon.run;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.MountException;
import io.sandboxd.executor.UnitEnvironment;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The environments this node offers (WIRE.md §2.7, Q18): each configured devcontainer.json is
 * ingested at start, its manifest signed by the node key and kept under the state directory's
 * {@code environments/<address>.json} (fsynced), and its mounts checked against what the node
 * allows. A submission names one by name or by {@code b3:<address>}.
 */
public final class OfferedEnvironments {
  /** The signed manifest of a devcontainer.json, and whether its image is pinned by digest. */
  public record SignedManifest(Envelope envelope, boolean pinned) {
    public String address() {
      return envelope.address();
    }

    /** The envelope with {@code pinned} beside its four fields, as one canonical line. */
    public String toJsonLine() {
      var o = envelope.toJson();
      o.put("pinned", pinned);
      return CanonicalJson.canonicalString(o);
    }
  }

  /** Turns a devcontainer.json into its signed manifest, or throws naming what it refuses. */
  @FunctionalInterface
  public interface Ingest {
    SignedManifest ingest(byte[] devcontainer, SigningKey key);
  }

  /** One offered environment: its name, what its runs see, its signed manifest. */
  public record Offer(String name, UnitEnvironment unit, SignedManifest manifest) {
    public String address() {
      return manifest.address();
    }
  }

  private final Map<String, Offer> byName;
  private final EnvironmentMounts mounts;

  private OfferedEnvironments(Map<String, Offer> byName, EnvironmentMounts mounts) {
    this.byName = byName;
    this.mounts = mounts;
  }

  /** A node that offers no environment. */
  public static OfferedEnvironments none() {
    return new OfferedEnvironments(Map.of(), null);
  }

  /**
   * Ingests, signs, checks and stores every environment {@code config} offers; the first that is
   * refused stops the start with an exception naming the environment, its file and the fields.
   */
  public static OfferedEnvironments load(
      DaemonConfig.Environments config,
      SigningKey key,
      EnvironmentMounts mounts,
      Path dir,
      Ingest ingest)
      throws IOException {
    Map<String, Offer> out = new LinkedHashMap<>();
    List<DaemonConfig.Environments.Offered> offered = config.offered();
    for (int i = 0; i < offered.size(); i++) {
      DaemonConfig.Environments.Offered o = offered.get(i);
      String at = "environments[" + i + "] \"" + o.name() + "\" (" + o.devcontainer() + ")";
      byte[] bytes;
      try {
        bytes = Files.readAllBytes(o.devcontainer());
      } catch (IOException e) {
        throw new EnvironmentRefusedException(at + ": cannot read: " + e, e);
      }
      SignedManifest signed;
      UnitEnvironment unit;
      try {
        signed = ingest.ingest(bytes, key);
        unit = unitOf(o.name(), signed.envelope());
        mounts.check(unit);
      } catch (RuntimeException e) {
        throw new EnvironmentRefusedException(at + ": refused: " + e.getMessage(), e);
      }
      out.put(o.name(), new Offer(o.name(), unit, signed));
    }
    if (!out.isEmpty()) {
      Files.createDirectories(dir);
      for (Offer o : out.values()) {
        writeDurably(dir.resolve(o.address() + ".json"), o.manifest().toJsonLine() + "\n");
      }
      fsyncDirectory(dir);
    }
    return new OfferedEnvironments(java.util.Collections.unmodifiableMap(out), mounts);
  }

  /**
   * What a run sees of a manifest core (WIRE.md §2.7): {@code container_env} and the mounts as
   * (source, target, kind); image, features and remote_user are identity only.
   */
  static UnitEnvironment unitOf(String name, Envelope manifest) {
    JsonNode core = manifest.core();
    Map<String, String> env = new TreeMap<>();
    JsonNode ce = core.path("container_env");
    for (Iterator<Map.Entry<String, JsonNode>> it = ce.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      env.put(e.getKey(), e.getValue().asText());
    }
    List<UnitEnvironment.Mount> mounts = new ArrayList<>();
    for (JsonNode m : core.path("mounts")) {
      String kind = m.path("kind").asText();
      UnitEnvironment.Kind k;
      try {
        k = UnitEnvironment.Kind.valueOf(kind);
      } catch (IllegalArgumentException e) {
        throw new MountException(
            "mount " + m.path("target").asText() + ": unknown kind " + kind, e);
      }
      mounts.add(
          new UnitEnvironment.Mount(m.path("source").asText(), m.path("target").asText(), k));
    }
    return new UnitEnvironment(name, manifest.address(), env, mounts);
  }

  /** The offered environments in configuration order. */
  public List<Offer> list() {
    return List.copyOf(byName.values());
  }

  /** The directories of runs in these environments. */
  public EnvironmentMounts mounts() {
    return mounts;
  }

  /** The environment {@code ref} names ({@code NAME} or {@code b3:<address>}), or NOT_FOUND. */
  public Offer resolve(String ref) {
    Optional<Offer> found =
        ref.startsWith("b3:") ? byAddress(ref.substring(3)) : Optional.ofNullable(byName.get(ref));
    return found.orElseThrow(
        () ->
            new EnvironmentNotOfferedException(
                "env: this node does not offer the environment \""
                    + ref
                    + "\""
                    + (byName.isEmpty()
                        ? " (it offers none)"
                        : " (it offers " + String.join(", ", byName.keySet()) + ")")));
  }

  /** The offered environment whose manifest address is {@code address}. */
  public Optional<Offer> byAddress(String address) {
    return byName.values().stream().filter(o -> o.address().equals(address)).findFirst();
  }

  private static void writeDurably(Path file, String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (FileChannel ch =
        FileChannel.open(
            tmp,
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
      ch.force(true);
    }
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  private static void fsyncDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }
}
