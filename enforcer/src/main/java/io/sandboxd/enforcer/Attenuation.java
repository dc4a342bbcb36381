package io.sandboxd.enforcer;

import io.sandboxd.attest.DeviceClass;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;
import java.util.function.Predicate;

/**
 * The attenuation order {@code child ⊑ parent} of WIRE.md §2.11, the one implementation every
 * caller uses (node policy ceilings, standing grants, amendments). It is fail-closed: a part it
 * cannot prove narrower counts as wider. Parts are compared in canonical key order, so the first
 * widening named is the first in the child's canonical bytes; list indexes in the path are indexes
 * into the child's canonical (sorted) lists.
 *
 * <p>Refinements of the §2.11 list, each sound: an absent optional part reads as its
 * deny-by-default value; sub-fields behind a switch the child leaves off ({@code process.exec},
 * {@code browser.enabled}, {@code display.enabled}) grant nothing and are not compared; a child kv
 * grant with a direction on and no prefixes (the whole keyspace) is wider than a parent with
 * prefixes; any flow part is narrower than none (a flow grant can only turn an allowed sink into
 * TAINTED); and {@code Cpu} is always in the parent's devices (it is implicit, Q4).
 */
public final class Attenuation {
  private Attenuation() {}

  /** The outcome of a comparison. */
  public sealed interface Verdict permits Narrower, Wider {}

  /** The child is provably within the parent. */
  public record Narrower() implements Verdict {}

  /** The first part of the child the parent does not provably allow: its JSON path and why. */
  public record Wider(String path, String reason) implements Verdict {
    @Override
    public String toString() {
      return path + ": " + reason;
    }
  }

  private static final Narrower NARROWER = new Narrower();

  /** True when {@code child ⊑ parent}. */
  public static boolean attenuates(Grants child, Grants parent) {
    return check(child, parent) instanceof Narrower;
  }

  /** Whether {@code child ⊑ parent}, or the first widening part of the child. */
  public static Verdict check(Grants child, Grants parent) {
    Optional<Wider> w =
        first(
            () -> browser(child.browser(), parent.browser()),
            () -> compute(child.compute(), parent.compute()),
            () -> display(child.display(), parent.display()),
            () -> flow(child.flow(), parent.flow()),
            () -> host(child.host(), parent.host()),
            () -> kv(child.kv(), parent.kv()),
            () -> network(child.network(), parent.network()),
            () -> process(child.process(), parent.process()),
            () -> storage(child.storage(), parent.storage()));
    return w.isPresent() ? w.get() : NARROWER;
  }

  @SafeVarargs
  private static Optional<Wider> first(java.util.function.Supplier<Optional<Wider>>... parts) {
    for (var p : parts) {
      Optional<Wider> w = p.get();
      if (w.isPresent()) {
        return w;
      }
    }
    return Optional.empty();
  }

  private static Optional<Wider> wider(String path, String reason) {
    return Optional.of(new Wider(path, reason));
  }

  private static Optional<Wider> flag(String path, boolean child, boolean parent) {
    return child && !parent ? wider(path, "true where the parent has false") : Optional.empty();
  }

  private static Optional<Wider> atMost(String path, long child, long parent) {
    return child > parent
        ? wider(path, child + " is more than the parent's " + parent)
        : Optional.empty();
  }

  /** Each element of {@code child} must be covered by some element of {@code parent}. */
  private static <T> Optional<Wider> eachCovered(
      String path, List<T> child, List<T> parent, BiPredicate<T, T> covers, String what) {
    for (int i = 0; i < child.size(); i++) {
      T c = child.get(i);
      boolean covered = false;
      for (T p : parent) {
        if (covers.test(p, c)) {
          covered = true;
          break;
        }
      }
      if (!covered) {
        return wider(path + "[" + i + "]", what + " " + c + " is not within the parent");
      }
    }
    return Optional.empty();
  }

  private static <T> Optional<Wider> subset(String path, List<T> child, List<T> parent) {
    Set<T> allowed = parent.size() > 8 ? new HashSet<>(parent) : null;
    for (int i = 0; i < child.size(); i++) {
      T c = child.get(i);
      if (!(allowed != null ? allowed.contains(c) : parent.contains(c))) {
        return wider(path + "[" + i + "]", c + " is not in the parent");
      }
    }
    return Optional.empty();
  }

  /**
   * An optional part switched {@code on} in the child must be on in the parent too, else it is
   * wider at {@code path}; a part off in the child is narrower. With both on, {@code within}
   * compares them.
   */
  private static <G> Optional<Wider> switched(
      Optional<G> child,
      Optional<G> parent,
      Predicate<G> on,
      String path,
      String part,
      BiFunction<G, G, Optional<Wider>> within) {
    if (child.isEmpty() || !on.test(child.get())) {
      return Optional.empty();
    }
    if (parent.isEmpty() || !on.test(parent.get())) {
      return wider(path, "true where the parent has no " + part);
    }
    return within.apply(child.get(), parent.get());
  }

  private static Optional<Wider> browser(
      Optional<BrowserGrant> child, Optional<BrowserGrant> parent) {
    return switched(
        child,
        parent,
        BrowserGrant::enabled,
        "$.browser.enabled",
        "browser",
        (c, p) ->
            first(
                () -> {
                  // headless is tighter: a headless parent allows only a headless child
                  return p.headless() && !c.headless()
                      ? wider("$.browser.headless", "false where the parent is headless")
                      : Optional.empty();
                },
                () -> subset("$.browser.origins", c.origins(), p.origins())));
  }

  private static Optional<Wider> compute(ComputeGrant c, ComputeGrant p) {
    return first(
        () -> atMost("$.compute.cpu_time_ms", c.cpuTimeMs(), p.cpuTimeMs()),
        () -> {
          int i = 0;
          for (DeviceClass d : c.devices()) {
            if (d != DeviceClass.Cpu && !p.devices().contains(d)) {
              return wider("$.compute.devices[" + i + "]", d.jsonName() + " is not in the parent");
            }
            i++;
          }
          return Optional.empty();
        },
        () -> atMost("$.compute.energy_budget_uj", c.energyBudgetUj(), p.energyBudgetUj()),
        () -> atMost("$.compute.memory_bytes", c.memoryBytes(), p.memoryBytes()));
  }

  private static Optional<Wider> display(
      Optional<DisplayGrant> child, Optional<DisplayGrant> parent) {
    return switched(
        child,
        parent,
        DisplayGrant::enabled,
        "$.display.enabled",
        "display",
        (c, p) ->
            first(
                () -> atMost("$.display.max_height", c.maxHeight(), p.maxHeight()),
                () -> atMost("$.display.max_width", c.maxWidth(), p.maxWidth()),
                () -> flag("$.display.vnc", c.vnc(), p.vnc())));
  }

  private static Optional<Wider> flow(Optional<FlowGrant> child, Optional<FlowGrant> parent) {
    if (parent.isEmpty()) {
      return Optional
          .empty(); // nothing is ever tainted under the parent: any flow part is narrower
    }
    FlowGrant p = parent.get();
    List<FlowOpening> childOpen = child.map(FlowGrant::open).orElse(List.of());
    List<SourcePattern> childUntrusted = child.map(FlowGrant::untrusted).orElse(List.of());
    // Each child opening needs a parent opening of the same sink with at least its origins.
    Map<SinkPattern, Set<String>> opened = new TreeMap<>();
    for (FlowOpening o : p.open()) {
      opened.computeIfAbsent(o.sink(), k -> new HashSet<>()).addAll(o.origins());
    }
    for (int i = 0; i < childOpen.size(); i++) {
      FlowOpening o = childOpen.get(i);
      Set<String> allowed = opened.get(o.sink());
      if (allowed == null || !allowed.containsAll(o.origins())) {
        return wider(
            "$.flow.open[" + i + "]",
            "sink " + o.sink().label() + " opened to origins the parent does not open it to");
      }
    }
    Set<String> untrusted = new HashSet<>();
    childUntrusted.forEach(s -> untrusted.add(s.label()));
    for (SourcePattern s : p.untrusted()) {
      if (!untrusted.contains(s.label())) {
        return wider(
            "$.flow.untrusted", "does not mark " + s.label() + " untrusted as the parent does");
      }
    }
    return Optional.empty();
  }

  private static Optional<Wider> host(HostGrant c, HostGrant p) {
    return first(
        () -> flag("$.host.clock", c.clock(), p.clock()),
        () -> flag("$.host.inference", c.inference(), p.inference()),
        () -> flag("$.host.logging", c.logging(), p.logging()),
        () -> flag("$.host.random", c.random(), p.random()));
  }

  private static Optional<Wider> kv(KvGrant c, KvGrant p) {
    return first(
        () -> {
          if (!(c.read() || c.write()) || p.prefixes().isEmpty()) {
            return Optional.empty(); // no direction granted, or the parent allows any key
          }
          if (c.prefixes().isEmpty()) {
            return wider("$.kv.prefixes", "the whole keyspace where the parent names prefixes");
          }
          return eachCovered(
              "$.kv.prefixes",
              c.prefixes(),
              p.prefixes(),
              (pp, cp) -> pp.isPrefixOf(cp.toArray()),
              "prefix");
        },
        () -> flag("$.kv.read", c.read(), p.read()),
        () -> flag("$.kv.write", c.write(), p.write()));
  }

  private static Optional<Wider> network(NetworkGrant c, NetworkGrant p) {
    return first(
        () -> subset("$.network.credentials", c.credentials(), p.credentials()),
        () -> flag("$.network.inbound", c.inbound(), p.inbound()),
        () -> subset("$.network.outbound", c.outbound(), p.outbound()));
  }

  private static Optional<Wider> process(
      Optional<ProcessGrant> child, Optional<ProcessGrant> parent) {
    return switched(
        child,
        parent,
        ProcessGrant::exec,
        "$.process.exec",
        "exec",
        (c, p) ->
            first(
                () -> atMost("$.process.max_processes", c.maxProcesses(), p.maxProcesses()),
                () -> subset("$.process.programs", c.programs(), p.programs())));
  }

  private static Optional<Wider> storage(StorageGrant c, StorageGrant p) {
    return first(
        () -> globs("$.storage.delete", c.delete(), p.delete()),
        () -> ceiling("$.storage.max_iops", c.maxIops(), p.maxIops()),
        () -> ceiling("$.storage.max_read_bps", c.maxReadBps(), p.maxReadBps()),
        () -> globs("$.storage.read", c.read(), p.read()),
        () -> globs("$.storage.write", c.write(), p.write()));
  }

  private static Optional<Wider> globs(String path, List<Glob> child, List<Glob> parent) {
    return eachCovered(path, child, parent, Glob::covers, "glob");
  }

  /** An io ceiling the parent sets must be set by the child, no higher. */
  private static Optional<Wider> ceiling(String path, OptionalLong child, OptionalLong parent) {
    if (parent.isEmpty()) {
      return Optional.empty();
    }
    if (child.isEmpty()) {
      return wider(path, "unset (unbounded) where the parent sets " + parent.getAsLong());
    }
    return atMost(path, child.getAsLong(), parent.getAsLong());
  }
}
