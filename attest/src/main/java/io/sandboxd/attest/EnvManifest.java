package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The {@code sandbox.env-manifest/1} core (WIRE.md §2.7): the declared environment whose BLAKE3
 * address is its identity. Built by {@link DevcontainerIngest}; always in normal form (features
 * sorted by id, variables sorted by name, mounts sorted by target).
 */
public record EnvManifest(
    String image,
    List<Feature> features,
    SortedMap<String, String> containerEnv,
    List<Mount> mounts,
    String remoteUser) {

  public static final String SCHEMA = "sandbox.env-manifest/1";

  private static final Set<String> FIELDS =
      Set.of("schema", "image", "features", "container_env", "mounts", "remote_user");

  /** An image reference that ends in a content digest names bytes, not a moving tag. */
  private static final Pattern PINNED = Pattern.compile(".*@sha256:[0-9a-f]{64}");

  /** A tool feature: its id and its options as a JSON object (canonicalized when hashed). */
  public record Feature(String id, ObjectNode options) {
    public Feature {
      options = options.deepCopy();
    }

    @Override
    public ObjectNode options() {
      return options.deepCopy();
    }
  }

  /** How a mount's source is provided. */
  public enum Kind {
    bind,
    volume,
    tmpfs;

    /** The kind named {@code s}, or null. */
    public static Kind named(String s) {
      return Arrays.stream(values()).filter(k -> k.name().equals(s)).findFirst().orElse(null);
    }
  }

  /** A mount normalized to (source, target, kind); a tmpfs has the empty source. */
  public record Mount(String source, String target, Kind kind) {}

  public EnvManifest {
    List<Feature> f = new ArrayList<>(features);
    f.sort(Comparator.comparing(Feature::id));
    features = List.copyOf(f);
    containerEnv = Collections.unmodifiableSortedMap(new TreeMap<>(containerEnv));
    List<Mount> m = new ArrayList<>(mounts);
    m.sort(Comparator.comparing(Mount::target));
    mounts = List.copyOf(m);
  }

  /** True when the image carries a {@code @sha256:} digest: the address then names bytes. */
  public boolean pinned() {
    return PINNED.matcher(image).matches();
  }

  /** The core object that is hashed and signed. */
  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("image", image);
    ArrayNode fs = o.putArray("features");
    for (Feature f : features) {
      ObjectNode fo = fs.addObject();
      fo.put("id", f.id());
      fo.set("options", f.options());
    }
    ObjectNode env = o.putObject("container_env");
    containerEnv.forEach(env::put);
    ArrayNode ms = o.putArray("mounts");
    for (Mount m : mounts) {
      ms.addObject()
          .put("source", m.source())
          .put("target", m.target())
          .put("kind", m.kind().name());
    }
    if (remoteUser == null) {
      o.putNull("remote_user");
    } else {
      o.put("remote_user", remoteUser);
    }
    return o;
  }

  /** The canonical bytes of the core. */
  public byte[] canonicalBytes() {
    return CanonicalJson.canonicalize(toCore());
  }

  /** The environment's identity: BLAKE3-256 of the canonical core, 64 lowercase hex. */
  public String address() {
    return Blake3.hex(canonicalBytes());
  }

  /**
   * Reads a core strictly: exactly the six fields, and in normal form (sorted, no duplicate
   * target), so that one environment has exactly one core.
   */
  public static EnvManifest fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "manifest", FIELDS, JsonReader.RECORD).schema(SCHEMA);
    List<Feature> features =
        r.list(
            "features",
            (n, p) -> {
              JsonReader f = JsonReader.of(n, p, Set.of("id", "options"), JsonReader.RECORD);
              return new Feature(f.string("id"), (ObjectNode) f.object("options").node());
            });
    SortedMap<String, String> env = new TreeMap<>();
    JsonReader e = r.object("container_env");
    for (Map.Entry<String, JsonNode> v : e.node().properties()) {
      env.put(v.getKey(), JsonReader.text(v.getValue(), e.pathOf(v.getKey()), JsonReader.RECORD));
    }
    List<Mount> mounts =
        r.list(
            "mounts",
            (n, p) -> {
              JsonReader m =
                  JsonReader.of(n, p, Set.of("source", "target", "kind"), JsonReader.RECORD);
              Kind k = Kind.named(m.string("kind"));
              if (k == null) {
                throw new AttestException(p + ".kind: expected bind, volume or tmpfs");
              }
              return new Mount(m.string("source"), m.string("target"), k);
            });
    r.required("features");
    r.required("mounts");
    EnvManifest m =
        new EnvManifest(r.string("image"), features, env, mounts, r.nullableString("remote_user"));
    if (!Arrays.equals(m.canonicalBytes(), CanonicalJson.canonicalize(core))) {
      throw new AttestException(
          "manifest: core is not in normal form (features sorted by id, mounts by target)");
    }
    for (int i = 1; i < m.features.size(); i++) {
      if (m.features.get(i).id().equals(m.features.get(i - 1).id())) {
        throw new AttestException(
            "manifest.features: id " + m.features.get(i).id() + " appears twice");
      }
    }
    for (int i = 1; i < m.mounts.size(); i++) {
      if (m.mounts.get(i).target().equals(m.mounts.get(i - 1).target())) {
        throw new AttestException(
            "manifest.mounts: target " + m.mounts.get(i).target() + " appears twice");
      }
    }
    return m;
  }
}
