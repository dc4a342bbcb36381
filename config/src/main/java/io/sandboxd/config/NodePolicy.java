package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.JsonReader;
import io.sandboxd.enforcer.ComputeGrant;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import io.sandboxd.enforcer.HostGrant;
import io.sandboxd.enforcer.KvGrant;
import io.sandboxd.enforcer.NetworkGrant;
import io.sandboxd.enforcer.StorageGrant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Who may submit what on this node ({@code "policy"} in sandboxd.json): rules tried in order, the
 * first whose principals (uids, user names, gids, group names) match the caller decides the widest
 * grant, the largest module, the runs in flight and the environments that caller may use. A caller
 * no rule matches is refused. Without a {@code policy} section the daemon applies its mode's
 * default ({@link #dev}, {@link #system}).
 */
public record NodePolicy(List<Rule> rules, boolean configured) {

  /** Most rules one policy holds, and most principals or environments one rule names. */
  static final int MAX_RULES = 1024;

  static final int MAX_NAMES = 1024;

  /** Largest module a default rule admits: the daemon's largest gRPC message. */
  public static final long DEFAULT_MAX_MODULE_BYTES = 64L << 20;

  /** Any environment, in a rule's {@code environments}. */
  public static final String ANY_ENVIRONMENT = "*";

  /** No section in the file: the daemon picks its mode's default at start. */
  public static final NodePolicy MODE_DEFAULT = new NodePolicy(List.of(), false);

  public NodePolicy {
    rules = List.copyOf(rules);
  }

  /** The widest grant a rule lets its callers request. */
  public sealed interface Ceiling permits Ceiling.Unrestricted, Ceiling.Bounded {
    /** No ceiling: the node's own checks only. */
    record Unrestricted() implements Ceiling {}

    /** Every requested grant must attenuate {@code grants} (WIRE.md §2.11). */
    record Bounded(Grants grants) implements Ceiling {}
  }

  /**
   * One rule: {@code name} (for refusals and the status summary), whom it matches, and what it
   * allows them. An empty {@code environments} allows none; {@code "*"} allows any.
   */
  public record Rule(
      String name,
      Set<Long> uids,
      Set<String> users,
      Set<Long> gids,
      Set<String> groups,
      Ceiling ceiling,
      long maxModuleBytes,
      int maxConcurrentRuns,
      List<String> environments,
      Set<Permission> permissions) {
    public Rule {
      permissions = Set.copyOf(permissions);
      uids = Set.copyOf(uids);
      users = Set.copyOf(users);
      gids = Set.copyOf(gids);
      groups = Set.copyOf(groups);
      environments = List.copyOf(environments);
    }

    /** Whether a submission naming environment {@code nameOrAddress} may use it. */
    public boolean allowsEnvironment(String nameOrAddress) {
      return environments.contains(ANY_ENVIRONMENT) || environments.contains(nameOrAddress);
    }
  }

  /** {@code --dev}: the daemon's own user, unrestricted; anyone else is refused. */
  public static NodePolicy dev(long ownUid, int maxConcurrentUnits) {
    return new NodePolicy(List.of(unrestricted("dev-own-user", ownUid)), false);
  }

  /** The rule named {@code name} that lets uid {@code uid} do anything, uncapped, anywhere. */
  private static Rule unrestricted(String name, long uid) {
    return new Rule(
        name,
        Set.of(uid),
        Set.of(),
        Set.of(),
        Set.of(),
        new Ceiling.Unrestricted(),
        DEFAULT_MAX_MODULE_BYTES,
        UNCAPPED_RUNS,
        List.of(ANY_ENVIRONMENT),
        Permission.all());
  }

  /**
   * Runs in flight for the defaults' unrestricted rules (root, the daemon's own user): no
   * per-caller cap, their submissions queue for the node's executor slots as everyone's do.
   */
  public static final int UNCAPPED_RUNS = Integer.MAX_VALUE;

  /** The group whose members the system default admits under {@link #conservativeCeiling()}. */
  public static final String SYSTEM_GROUP = "sandboxd";

  /**
   * The system default: root and the daemon's own user unrestricted (both can read the node's key
   * anyway), members of group {@code sandboxd} under {@link #conservativeCeiling()} with modules up
   * to 16 MiB, two runs in flight each and no environments.
   */
  public static NodePolicy system(long ownUid, int maxConcurrentUnits) {
    List<Rule> rules = new ArrayList<>();
    rules.add(unrestricted("root", 0L));
    if (ownUid != 0) {
      rules.add(unrestricted("daemon-user", ownUid));
    }
    rules.add(
        new Rule(
            "group-sandboxd",
            Set.of(),
            Set.of(),
            Set.of(),
            Set.of(SYSTEM_GROUP),
            new Ceiling.Bounded(conservativeCeiling()),
            16L << 20,
            Math.min(2, maxConcurrentUnits),
            List.of(),
            Permission.defaults()));
    return new NodePolicy(rules, false);
  }

  /**
   * The system default's ceiling for group members: Cpu only, 60 s of CPU, 256 MiB, 600 J; logging,
   * clock and randomness; no storage, kv, network, exec, inference, browser or display (storage and
   * kv are shared by every caller of a module, so they are for callers an operator names).
   */
  public static Grants conservativeCeiling() {
    return new Grants(
        new ComputeGrant(Set.<DeviceClass>of(), 600_000_000L, 60_000, 256L << 20),
        StorageGrant.empty(),
        NetworkGrant.empty(),
        KvGrant.empty(),
        new HostGrant(true, true, true, false),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty());
  }

  /**
   * This policy, or the mode's default when the file has none. A default already chosen (rules but
   * not configured) stays: the daemon asks again after {@code serve} picked its mode's.
   */
  public NodePolicy orDefault(boolean dev, long ownUid, int maxConcurrentUnits) {
    if (configured || !rules.isEmpty()) {
      return this;
    }
    return dev ? dev(ownUid, maxConcurrentUnits) : system(ownUid, maxConcurrentUnits);
  }

  private static final Set<String> TOP = Set.of("rules");
  private static final Set<String> RULE =
      Set.of(
          "name",
          "uids",
          "users",
          "gids",
          "groups",
          "ceiling",
          "max_module_bytes",
          "max_concurrent_runs",
          "environments",
          "permissions");

  /** Reads the {@code policy} section strictly; {@code units} is the node's concurrency bound. */
  static NodePolicy parse(JsonNode node, int units) {
    if (node == null || node.isNull()) {
      return MODE_DEFAULT;
    }
    JsonReader f = JsonReader.of(node, "$.policy", TOP, ConfigException.FAULT);
    JsonNode list = f.required("rules");
    if (!list.isArray()) {
      throw new ConfigException("$.policy.rules: expected an array of rules");
    }
    if (list.size() > MAX_RULES) {
      throw new ConfigException("$.policy.rules: more than " + MAX_RULES + " rules");
    }
    List<Rule> rules = new ArrayList<>();
    Set<String> names = new java.util.HashSet<>();
    for (int i = 0; i < list.size(); i++) {
      Rule r = rule(list.get(i), "$.policy.rules[" + i + "]", units);
      if (!names.add(r.name())) {
        throw new ConfigException(
            "$.policy.rules[" + i + "].name: \"" + r.name() + "\" names an earlier rule too");
      }
      rules.add(r);
    }
    return new NodePolicy(rules, true);
  }

  private static Rule rule(JsonNode node, String at, int units) {
    JsonReader f = JsonReader.of(node, at, RULE, ConfigException.FAULT);
    String name = f.string("name", at.substring(2));
    if (name.isEmpty() || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw new ConfigException(at + ".name: a rule name is non-empty printable ASCII");
    }
    Set<Long> uids = ids(f, "uids");
    Set<Long> gids = ids(f, "gids");
    Set<String> users = names(f, "users");
    Set<String> groups = names(f, "groups");
    if (uids.isEmpty() && gids.isEmpty() && users.isEmpty() && groups.isEmpty()) {
      throw new ConfigException(at + ": a rule names at least one of uids, users, gids, groups");
    }
    JsonNode c = f.optional("ceiling").orElse(null);
    Ceiling ceiling;
    if (c == null) {
      throw new ConfigException(at + ".ceiling: missing (a Grants object, or \"unrestricted\")");
    } else if (c.isTextual() && c.textValue().equals("unrestricted")) {
      ceiling = new Ceiling.Unrestricted();
    } else if (c.isObject()) {
      try {
        ceiling = new Ceiling.Bounded(Grants.parse(c));
      } catch (GrantsException e) {
        // the grant's own path, under this rule's ceiling
        throw new ConfigException(
            at + ".ceiling" + e.path().substring(1) + e.getMessage().substring(e.path().length()),
            e);
      }
    } else {
      throw new ConfigException(at + ".ceiling: expected a Grants object or \"unrestricted\"");
    }
    List<String> environments = f.strings("environments", List.of());
    if (environments.size() > MAX_NAMES) {
      throw new ConfigException(at + ".environments: more than " + MAX_NAMES);
    }
    for (int i = 0; i < environments.size(); i++) {
      if (environments.get(i).isEmpty()) {
        throw new ConfigException(at + ".environments[" + i + "]: empty");
      }
    }
    return new Rule(
        name,
        uids,
        users,
        gids,
        groups,
        ceiling,
        f.integer("max_module_bytes", DEFAULT_MAX_MODULE_BYTES, 1, DEFAULT_MAX_MODULE_BYTES),
        (int) f.integer("max_concurrent_runs", units, 1, units),
        environments,
        permissions(f, at));
  }

  /** The rule's {@code permissions}; without the field, {@link Permission#defaults()}. */
  private static Set<Permission> permissions(JsonReader f, String at) {
    if (f.optional("permissions").isEmpty()) {
      return Permission.defaults();
    }
    List<String> keys = f.strings("permissions", List.of());
    Set<Permission> out = java.util.EnumSet.noneOf(Permission.class);
    for (int i = 0; i < keys.size(); i++) {
      Permission p = Permission.of(keys.get(i));
      if (p == null) {
        throw new ConfigException(
            at
                + ".permissions["
                + i
                + "]: \""
                + keys.get(i)
                + "\" is not a permission (one of "
                + String.join(
                    ", ",
                    java.util.Arrays.stream(Permission.values()).map(Permission::key).toList())
                + ")");
      }
      out.add(p);
    }
    return out;
  }

  private static Set<Long> ids(JsonReader f, String key) {
    List<Long> ids =
        f.list(key, (n, p) -> JsonReader.integer(n, p, 0, 0xFFFF_FFFEL, ConfigException.FAULT));
    if (ids.size() > MAX_NAMES) {
      throw new ConfigException(f.pathOf(key) + ": more than " + MAX_NAMES);
    }
    return new LinkedHashSet<>(ids);
  }

  private static Set<String> names(JsonReader f, String key) {
    List<String> names = f.strings(key, List.of());
    if (names.size() > MAX_NAMES) {
      throw new ConfigException(f.pathOf(key) + ": more than " + MAX_NAMES);
    }
    for (int i = 0; i < names.size(); i++) {
      String n = names.get(i);
      if (n.isEmpty() || !n.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != ':')) {
        throw new ConfigException(f.pathOf(key) + "[" + i + "]: not an account name");
      }
    }
    return new LinkedHashSet<>(names);
  }
}
