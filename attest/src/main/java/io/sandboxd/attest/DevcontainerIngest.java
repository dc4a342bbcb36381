package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.EnvManifest.Feature;
import io.sandboxd.attest.EnvManifest.Kind;
import io.sandboxd.attest.EnvManifest.Mount;
import io.sandboxd.attest.ManifestRefusedException.Refusal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.BiConsumer;

/**
 * devcontainer.json (JSONC, as people write it) into the environment manifest core of WIRE.md §2.7,
 * the one way in. Every top-level field is classified against an allowlist: identity fields are
 * normalized, cosmetic and networking fields are accepted and left out of the identity, and
 * everything else is refused, every offending field named in one error. {@link #derive} makes the
 * largest accepted document from a refused one, so a user can adopt the subset in one step.
 */
public final class DevcontainerIngest {
  /** Fields that make up the identity. */
  static final Set<String> IDENTITY =
      Set.of("image", "features", "containerEnv", "mounts", "remoteUser");

  /** Cosmetic, editor and networking fields: accepted, excluded from identity. */
  static final Set<String> EXCLUDED =
      Set.of(
          "name",
          "customizations",
          "$schema",
          "extensions",
          "settings",
          "waitFor",
          "shutdownAction",
          "userEnvProbe",
          "forwardPorts",
          "appPort",
          "portsAttributes",
          "otherPortsAttributes");

  /** The six lifecycle hooks: each runs commands (initializeCommand even on the host). */
  static final Set<String> HOOKS =
      Set.of(
          "initializeCommand",
          "onCreateCommand",
          "updateContentCommand",
          "postCreateCommand",
          "postStartCommand",
          "postAttachCommand");

  /** Fields that build an image by running commands. */
  static final Set<String> BUILDS = Set.of("build", "dockerFile", "dockerComposeFile");

  /** Fields that widen the sandbox beyond what the capability grant allows. */
  static final Set<String> WIDENS = Set.of("runArgs", "privileged", "capAdd", "securityOpt");

  /** Known devcontainer fields outside the declarative subset (WIRE.md Q9). */
  static final Set<String> NOT_IN_SUBSET =
      Set.of(
          "workspaceMount",
          "workspaceFolder",
          "containerUser",
          "remoteEnv",
          "overrideCommand",
          "init",
          "hostRequirements",
          "updateRemoteUserUID",
          "service",
          "runServices",
          "context",
          "overrideFeatureInstallOrder");

  private DevcontainerIngest() {}

  /**
   * The manifest of a devcontainer.json. Throws {@link ManifestRefusedException} naming every field
   * at fault when the document is refused or cannot be read.
   */
  public static EnvManifest ingest(byte[] jsonc) {
    Reading r = read(jsonc);
    if (!r.findings.isEmpty()) {
      throw new ManifestRefusedException(r.findings.stream().map(Finding::refusal).toList());
    }
    return r.manifest();
  }

  /**
   * The largest accepted document that can be made from {@code jsonc}: each refused or malformed
   * field (or the one entry of it at fault) removed, comments dropped. {@code unresolved} lists
   * what no removal can fix (a missing image); the document is accepted iff it is empty.
   */
  public record Derivation(ObjectNode document, List<Refusal> removed, List<Refusal> unresolved) {
    public boolean accepted() {
      return unresolved.isEmpty();
    }
  }

  /** See {@link Derivation}. Throws {@link ManifestRefusedException} for an unreadable document. */
  public static Derivation derive(byte[] jsonc) {
    Reading r = read(jsonc);
    List<Refusal> removed = new ArrayList<>();
    List<Refusal> unresolved = new ArrayList<>();
    for (Finding f : r.findings) {
      (f.removable ? removed : unresolved).add(f.refusal);
    }
    return new Derivation(r.derived, removed, unresolved);
  }

  // ------------------------------------------------------------------ reading

  private record Finding(Refusal refusal, boolean removable) {}

  /** One pass over a document: the manifest parts, the findings and the derived document. */
  private static final class Reading {
    final List<Finding> findings = new ArrayList<>();
    final ObjectNode derived;
    String image;
    final List<Feature> features = new ArrayList<>();
    final SortedMap<String, String> env = new TreeMap<>();
    final List<Mount> mounts = new ArrayList<>();
    String remoteUser;

    Reading(ObjectNode doc) {
      this.derived = doc.deepCopy();
    }

    void remove(String field, String reason) {
      findings.add(new Finding(new Refusal(field, reason), true));
    }

    /** A top-level field refused whole: it is left out of the derived document too. */
    void removeField(String key, String reason) {
      remove(key, reason);
      derived.remove(key);
    }

    void unresolved(String field, String reason) {
      findings.add(new Finding(new Refusal(field, reason), false));
    }

    EnvManifest manifest() {
      return new EnvManifest(image, features, env, mounts, remoteUser);
    }
  }

  private static Reading read(byte[] jsonc) {
    JsonNode doc;
    try {
      doc = Jsonc.parse(jsonc);
    } catch (AttestException e) {
      throw ManifestRefusedException.unreadable(e);
    }
    if (!doc.isObject()) {
      throw new ManifestRefusedException(
          List.of(
              new Refusal(
                  "document",
                  "expected a JSON object at the top level, got " + JsonReader.typeOf(doc))));
    }
    Reading r = new Reading((ObjectNode) doc);
    boolean sawImage = false;
    for (Map.Entry<String, JsonNode> e : doc.properties()) {
      String key = e.getKey();
      JsonNode v = e.getValue();
      if (IDENTITY.contains(key)) {
        if (v.isNull()) {
          continue; // as if absent: a null image is reported missing below
        }
        switch (key) {
          case "image" -> {
            sawImage = true;
            r.image = nonEmptyText(v, "image", "an image reference", r::unresolved);
          }
          case "features" ->
              eachMember(
                  r,
                  v,
                  "features",
                  "an object mapping feature id to options",
                  DevcontainerIngest::feature);
          case "containerEnv" ->
              eachMember(
                  r,
                  v,
                  "containerEnv",
                  "an object of name: value strings",
                  DevcontainerIngest::variable);
          case "mounts" -> mounts(r, v);
          case "remoteUser" ->
              r.remoteUser = nonEmptyText(v, "remoteUser", "a user name", r::removeField);
          default -> throw new IllegalStateException(key);
        }
      } else if (!EXCLUDED.contains(key)) {
        r.removeField(key, whyRefused(key));
      }
    }
    if (!sawImage) {
      r.unresolved(
          "image",
          "missing: the manifest needs an image (every other way to get one, build, dockerFile"
              + " or dockerComposeFile, is refused)");
    }
    return r;
  }

  private static String whyRefused(String key) {
    if (HOOKS.contains(key)) {
      return "a lifecycle hook runs commands; automation belongs to the unit and its grants,"
          + " where it is metered and attested (refused, not skipped)";
    }
    if (BUILDS.contains(key)) {
      return "builds an image by running commands; build it elsewhere and name it in image"
          + " (refused, not skipped)";
    }
    if (WIDENS.contains(key)) {
      return "widens the sandbox; what a unit may do is governed by its capability grant"
          + " (refused, not skipped)";
    }
    if (NOT_IN_SUBSET.contains(key)) {
      return "not in the declarative subset the manifest ingests (WIRE.md Q9)";
    }
    return "unknown field: dropping it silently could mint a false identity";
  }

  /**
   * The text of field {@code key} when it is a non-empty string; else null, the field refused
   * through {@code refuse} as not {@code expected}.
   */
  private static String nonEmptyText(
      JsonNode v, String key, String expected, BiConsumer<String, String> refuse) {
    if (!v.isTextual() || v.textValue().isEmpty()) {
      refuse.accept(key, "expected " + expected + " (a non-empty string), got " + what(v));
      return null;
    }
    return v.textValue();
  }

  /** Takes one member of an object field into the reading, or says why it is refused. */
  @FunctionalInterface
  private interface Member {
    String take(Reading r, String name, JsonNode value);
  }

  /**
   * Reads object field {@code key} member by member; a member {@code member} refuses is left out of
   * the derived document too, and a field that is not an object ({@code expected}) whole.
   */
  private static void eachMember(
      Reading r, JsonNode v, String key, String expected, Member member) {
    if (!v.isObject()) {
      r.removeField(key, "expected " + expected + ", got " + what(v));
      return;
    }
    ObjectNode kept = (ObjectNode) r.derived.get(key);
    for (Map.Entry<String, JsonNode> e : v.properties()) {
      String fault = member.take(r, e.getKey(), e.getValue());
      if (fault != null) {
        r.remove(key + "." + e.getKey(), fault);
        kept.remove(e.getKey());
      }
    }
  }

  private static String feature(Reading r, String id, JsonNode opts) {
    if (id.isEmpty()) {
      return "a feature id must not be empty";
    }
    ObjectNode options;
    if (opts.isTextual()) {
      // The string shorthand names a version (INF, WIRE.md §2.7).
      options = CanonicalJson.mapper().createObjectNode().put("version", opts.textValue());
    } else if (opts.isObject()) {
      String fault = integersOnly(opts, "features." + id);
      if (fault != null) {
        return fault;
      }
      options = (ObjectNode) opts;
    } else {
      return "expected an options object or a version string, got " + what(opts);
    }
    r.features.add(new Feature(id, options));
    return null;
  }

  /** Signed records carry integers in [0, 2^53-1] only: the first other number, or null. */
  private static String integersOnly(JsonNode n, String path) {
    if (n.isNumber()) {
      BigInteger b = n.isIntegralNumber() ? n.bigIntegerValue() : null;
      if (b == null || b.signum() < 0 || b.compareTo(BigInteger.valueOf(JsonReader.MAX_U64)) > 0) {
        return "option value "
            + n
            + (path.isEmpty() ? "" : " at " + path)
            + " is not an integer in [0, 2^53-1]; write it as a string";
      }
      return null;
    }
    if (n.isContainerNode()) {
      int i = 0;
      for (Map.Entry<String, JsonNode> c : n.isObject() ? n.properties() : indexed(n)) {
        String sub = n.isObject() ? path + "." + c.getKey() : path + "[" + i++ + "]";
        String fault = integersOnly(c.getValue(), sub);
        if (fault != null) {
          return fault;
        }
      }
    }
    return null;
  }

  private static Set<Map.Entry<String, JsonNode>> indexed(JsonNode array) {
    Map<String, JsonNode> m = new LinkedHashMap<>();
    for (int i = 0; i < array.size(); i++) {
      m.put(Integer.toString(i), array.get(i));
    }
    return m.entrySet();
  }

  private static String variable(Reading r, String name, JsonNode val) {
    if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0) {
      return "not a variable name (empty, or contains '=' or NUL)";
    }
    if (!val.isTextual()) {
      return "expected a string value, got " + what(val);
    }
    if (val.textValue().indexOf('\0') >= 0) {
      return "a value must not contain NUL";
    }
    r.env.put(name, val.textValue());
    return null;
  }

  private static void mounts(Reading r, JsonNode v) {
    if (!v.isArray()) {
      r.removeField("mounts", "expected an array of mounts, got " + what(v));
      return;
    }
    List<Integer> drop = new ArrayList<>();
    Map<String, Integer> byTarget = new HashMap<>();
    for (int i = 0; i < v.size(); i++) {
      String path = "mounts[" + i + "]";
      List<Refusal> faults = new ArrayList<>();
      Mount m = MountSpec.read(v.get(i), path, faults);
      if (m != null && byTarget.containsKey(m.target())) {
        faults.add(
            new Refusal(
                path + ".target",
                "target "
                    + m.target()
                    + " is already mounted by mounts["
                    + byTarget.get(m.target())
                    + "]"));
      }
      if (faults.isEmpty()) {
        byTarget.put(m.target(), i);
        r.mounts.add(m);
      } else {
        faults.forEach(f -> r.remove(f.field(), f.reason()));
        drop.add(i);
      }
    }
    ArrayNode kept = (ArrayNode) r.derived.get("mounts");
    for (int k = drop.size() - 1; k >= 0; k--) {
      kept.remove((int) drop.get(k));
    }
  }

  static String what(JsonNode n) {
    return JsonReader.typeOf(n);
  }

  /** A mount in Docker {@code --mount} string form or devcontainer object form. */
  static final class MountSpec {
    private static final Map<String, String> STRING_KEYS =
        Map.of(
            "type", "type",
            "source", "source",
            "src", "source",
            "target", "target",
            "destination", "target",
            "dst", "target",
            "consistency", "consistency");

    private static final Set<String> OBJECT_KEYS =
        Set.of("type", "source", "target", "consistency");

    private MountSpec() {}

    /** The normalized mount, or null with {@code faults} naming every problem. */
    static Mount read(JsonNode n, String path, List<Refusal> faults) {
      Map<String, String> opts = new LinkedHashMap<>();
      Set<String> named = new java.util.HashSet<>(); // given, even if with a bad value
      if (n.isTextual()) {
        readString(n.textValue(), path, opts, named, faults);
      } else if (n.isObject()) {
        for (Map.Entry<String, JsonNode> e : n.properties()) {
          String key = e.getKey();
          if (!OBJECT_KEYS.contains(key)) {
            faults.add(new Refusal(path + "." + key, unknownOption(key)));
          } else if (!e.getValue().isTextual()) {
            named.add(key);
            faults.add(
                new Refusal(path + "." + key, "expected a string, got " + what(e.getValue())));
          } else {
            named.add(key);
            opts.put(key, e.getValue().textValue());
          }
        }
      } else {
        faults.add(new Refusal(path, "expected a mount string or object, got " + what(n)));
        return null;
      }
      String type = opts.get("type");
      String source = opts.getOrDefault("source", "");
      String target = opts.get("target");
      Kind kind = null;
      if (type == null) {
        if (!named.contains("type")) {
          faults.add(new Refusal(path + ".type", "missing: name the kind (bind, volume or tmpfs)"));
        }
      } else if ((kind = Kind.named(type)) == null) {
        faults.add(
            new Refusal(path + ".type", "expected bind, volume or tmpfs, got \"" + type + "\""));
      }
      if (target == null) {
        if (!named.contains("target")) {
          faults.add(new Refusal(path + ".target", "missing: a mount needs a target"));
        }
      } else if (!target.startsWith("/")) {
        faults.add(
            new Refusal(path + ".target", "expected an absolute path, got \"" + target + "\""));
      }
      if (kind == Kind.tmpfs && !source.isEmpty()) {
        faults.add(new Refusal(path + ".source", "a tmpfs mount has no source"));
      } else if ((kind == Kind.bind || kind == Kind.volume)
          && source.isEmpty()
          && !(named.contains("source") && !opts.containsKey("source"))) {
        faults.add(new Refusal(path + ".source", "missing: a " + type + " mount needs a source"));
      }
      return faults.isEmpty() ? new Mount(source, target, kind) : null;
    }

    private static void readString(
        String s, String path, Map<String, String> opts, Set<String> named, List<Refusal> faults) {
      for (String part : s.split(",", -1)) {
        String p = part.strip();
        int eq = p.indexOf('=');
        String key = eq < 0 ? p : p.substring(0, eq);
        String canonical = STRING_KEYS.get(key);
        if (p.isEmpty()) {
          faults.add(new Refusal(path, "an empty option in \"" + s + "\""));
        } else if (canonical == null) {
          faults.add(new Refusal(path + "." + key, unknownOption(key)));
        } else if (eq < 0) {
          named.add(canonical);
          faults.add(new Refusal(path + "." + key, "expected " + key + "=VALUE"));
        } else if (!named.add(canonical)) {
          faults.add(new Refusal(path + "." + key, canonical + " is given twice"));
        } else {
          opts.put(canonical, p.substring(eq + 1));
        }
      }
    }

    private static String unknownOption(String key) {
      return "mount option "
          + key
          + " is not part of (source, target, kind); refused rather than dropped (WIRE.md Q11),"
          + " and derive removes the whole mount";
    }
  }
}
