package io.sandboxd.daemon.run;

import io.sandboxd.config.ConfigException;
import io.sandboxd.config.NodePolicy;
import io.sandboxd.enforcer.Attenuation;
import io.sandboxd.enforcer.Grants;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;

/**
 * The node policy as admission applies it: rules with their account names resolved to ids at start,
 * the first rule matching a caller's uid or primary gid (or a group it belongs to) decides, and the
 * runs each uid has in flight are counted. Every refusal names the rule.
 */
public final class SubmitterPolicy {
  private static final Logger LOG = Logger.getLogger(SubmitterPolicy.class.getName());

  /** A rule and the ids it matches ({@code anyone}: every caller, known or not). */
  private record Resolved(NodePolicy.Rule rule, Set<Long> uids, Set<Long> gids, boolean anyone) {
    boolean matches(Caller c) {
      return anyone || (c.known() && (uids.contains(c.uid()) || gids.contains(c.gid())));
    }
  }

  private final List<Resolved> rules;
  private final Map<Long, AtomicInteger> inFlight = new ConcurrentHashMap<>();

  private SubmitterPolicy(List<Resolved> rules) {
    this.rules = List.copyOf(rules);
  }

  /**
   * Resolves {@code policy}'s names against {@code accounts}. A configured name that does not
   * resolve refuses the start (a typo must not silently refuse or admit someone); the system
   * default's group may be absent (then no one is admitted through it).
   */
  public static SubmitterPolicy resolve(NodePolicy policy, Accounts accounts) {
    List<Resolved> out = new ArrayList<>();
    for (int i = 0; i < policy.rules().size(); i++) {
      NodePolicy.Rule r = policy.rules().get(i);
      String at = "$.policy.rules[" + i + "]";
      Set<Long> uids = new HashSet<>(r.uids());
      for (String user : r.users()) {
        Long uid = accounts.userIds().get(user);
        if (uid == null) {
          throw new ConfigException(at + ".users: no user \"" + user + "\" in /etc/passwd");
        }
        uids.add(uid);
      }
      Set<Long> gids = new HashSet<>(r.gids());
      for (String group : r.groups()) {
        Long gid = accounts.groupIds().get(group);
        if (gid == null) {
          if (!policy.configured()) {
            LOG.warning(
                "node policy: default rule "
                    + r.name()
                    + ": no group "
                    + group
                    + "; it admits no one");
            continue;
          }
          throw new ConfigException(at + ".groups: no group \"" + group + "\" in /etc/group");
        }
        gids.add(gid);
      }
      for (long gid : gids) {
        uids.addAll(accounts.membersOf(gid));
      }
      out.add(new Resolved(r, uids, gids, false));
    }
    return new SubmitterPolicy(out);
  }

  /** Admits every caller, known or not, without a ceiling (embedding and unit tests). */
  public static SubmitterPolicy unrestricted() {
    NodePolicy.Rule any =
        new NodePolicy.Rule(
            "unrestricted",
            Set.of(),
            Set.of(),
            Set.of(),
            Set.of(),
            new NodePolicy.Ceiling.Unrestricted(),
            NodePolicy.DEFAULT_MAX_MODULE_BYTES,
            Integer.MAX_VALUE,
            List.of(NodePolicy.ANY_ENVIRONMENT),
            io.sandboxd.config.Permission.all());
    return new SubmitterPolicy(List.of(new Resolved(any, Set.of(), Set.of(), true)));
  }

  /** The first rule matching {@code caller}; refused when none does. */
  public NodePolicy.Rule ruleFor(Caller caller) {
    for (Resolved r : rules) {
      if (r.matches(caller)) {
        return r.rule();
      }
    }
    throw new PolicyDeniedException(
        "node policy: "
            + caller
            + " matches no rule"
            + (rules.isEmpty()
                ? ""
                : " (rules: "
                    + String.join(", ", rules.stream().map(r -> r.rule().name()).toList())
                    + ")"));
  }

  /** Refuses a module larger than the rule allows. */
  public static void checkModule(NodePolicy.Rule rule, Caller caller, long bytes) {
    if (bytes > rule.maxModuleBytes()) {
      throw refusal(
          rule, caller, "module: " + bytes + " bytes, the rule allows " + rule.maxModuleBytes());
    }
  }

  /** Refuses grants that do not attenuate the rule's ceiling, naming the first widening part. */
  public static void checkGrants(NodePolicy.Rule rule, Caller caller, Grants grants) {
    if (rule.ceiling() instanceof NodePolicy.Ceiling.Bounded b
        && Attenuation.check(grants, b.grants()) instanceof Attenuation.Wider w) {
      throw refusal(rule, caller, "grants: " + w + " (beyond the rule's ceiling)");
    }
  }

  /** Refuses an environment (by name or manifest address) the rule does not list. */
  public static void checkEnvironment(NodePolicy.Rule rule, Caller caller, String environment) {
    if (!environment.isEmpty() && !rule.allowsEnvironment(environment)) {
      throw refusal(
          rule, caller, "env: \"" + environment + "\" is not among the rule's environments");
    }
  }

  /**
   * Refuses a resolved environment unless the rule lists it by name, by address or by {@code
   * b3:<address>}: a caller cannot reach a refused environment by spelling it the other way.
   */
  public static void checkEnvironment(
      NodePolicy.Rule rule, Caller caller, Optional<OfferedEnvironments.Offer> offer) {
    if (offer.isEmpty()) {
      return;
    }
    OfferedEnvironments.Offer o = offer.get();
    if (!rule.allowsEnvironment(o.name())
        && !rule.allowsEnvironment(o.address())
        && !rule.allowsEnvironment("b3:" + o.address())) {
      throw refusal(
          rule,
          caller,
          "env: \""
              + o.name()
              + "\" (b3:"
              + o.address()
              + ") is not among the rule's environments");
    }
  }

  private static PolicyDeniedException refusal(NodePolicy.Rule rule, Caller caller, String why) {
    return new PolicyDeniedException(
        "node policy rule \"" + rule.name() + "\" refuses " + caller + ": " + why);
  }

  /** One run in flight for a uid; closing it (once) frees the place. */
  public interface Slot extends AutoCloseable {
    @Override
    void close();
  }

  /** Takes a place among the caller's runs in flight, or refuses past the rule's bound. */
  public Slot acquire(NodePolicy.Rule rule, Caller caller) {
    AtomicInteger n = inFlight.computeIfAbsent(caller.uid(), k -> new AtomicInteger());
    if (n.incrementAndGet() > rule.maxConcurrentRuns()) {
      n.decrementAndGet();
      throw new PolicyLimitException(
          "node policy rule \""
              + rule.name()
              + "\": "
              + caller
              + " already has "
              + rule.maxConcurrentRuns()
              + " runs in flight, the most the rule allows");
    }
    AtomicBoolean open = new AtomicBoolean(true);
    return () -> {
      if (open.compareAndSet(true, false)) {
        n.decrementAndGet();
      }
    };
  }

  /** One line per rule: its name, whom it matches, ceiling and bounds (for logs and status). */
  public List<String> summary() {
    List<String> out = new ArrayList<>();
    for (Resolved r : rules) {
      NodePolicy.Rule x = r.rule();
      out.add(
          x.name()
              + ": uids "
              + new java.util.TreeSet<>(r.uids())
              + " gids "
              + new java.util.TreeSet<>(r.gids())
              + ", ceiling "
              + (x.ceiling() instanceof NodePolicy.Ceiling.Bounded b
                  ? b.grants().grantsId().substring(0, 12)
                  : "unrestricted")
              + ", modules <= "
              + x.maxModuleBytes()
              + " B, "
              + x.maxConcurrentRuns()
              + " runs in flight, environments "
              + x.environments()
              + ", permissions "
              + x.permissions().stream().map(io.sandboxd.config.Permission::key).sorted().toList());
    }
    return out;
  }
}
