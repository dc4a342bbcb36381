package io.sandboxd.enforcer;

import io.sandboxd.attest.DeviceClass;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Deny-by-default decisions for every query of WIRE.md §3.2, compiled once from a grant set. Pure
 * and deterministic: the answer is a function of the grants, the query and (for sinks) the run's
 * taint; no clock, no I/O, no floats, no ambient state. Thread-safe: immutable after construction
 * except for {@link #tighten}, which replaces the grant set in force for every later query.
 */
public final class Enforcer {
  private static final String[] NO_GLOB_MATCHES = {
    "no storage.read glob matches ",
    "no storage.write glob matches ",
    "no storage.delete glob matches "
  };

  private final Grants grants;
  private final EnumSet<DeviceClass> devices;
  private final Glob[][] globsByMode;
  private final Set<String> outbound;
  // The same endpoints as records: a parsed endpoint is looked up without re-spelling it.
  private final Set<Endpoint> outboundEndpoints;
  private final boolean kvRead;
  private final boolean kvWrite;
  private final byte[][] kvPrefixes;
  private final HostGrant host;
  private final Set<String> denylist;
  private final Set<String> origins;
  private final List<SourcePattern> untrusted;
  private final List<FlowOpening> openings;
  // An accepted amendment (WIRE.md §2.11): the Enforcer of the tighter grant every query defers
  // to from now on, read once per query so a swap lands between two host calls.
  private volatile Enforcer tightened;

  /** An Enforcer for {@code grants} on a node with an empty exec denylist. */
  public Enforcer(Grants grants) {
    this(grants, Set.of());
  }

  /**
   * An Enforcer for {@code grants} on a node whose absolute exec denylist is {@code denylist}
   * ({@code b3:<64 hex>} entries, from the daemon configuration).
   */
  public Enforcer(Grants grants, Set<String> denylist) {
    this.grants = grants;
    this.devices = EnumSet.of(DeviceClass.Cpu);
    this.devices.addAll(grants.compute().devices());
    this.globsByMode = new Glob[PathMode.values().length][];
    for (PathMode m : PathMode.values()) {
      globsByMode[m.ordinal()] = grants.storage().globs(m).toArray(new Glob[0]);
    }
    Set<String> out = new HashSet<>();
    grants.network().outbound().forEach(e -> out.add(e.toString()));
    this.outbound = Collections.unmodifiableSet(out);
    this.outboundEndpoints = Set.copyOf(grants.network().outbound());
    this.kvRead = grants.kv().read();
    this.kvWrite = grants.kv().write();
    this.kvPrefixes = grants.kv().prefixes().stream().map(Bytes::toArray).toArray(byte[][]::new);
    this.host = grants.host();
    Set<String> deny = new HashSet<>();
    for (String entry : denylist) {
      ProgramRef ref = new ProgramRef(entry);
      if (!ref.isHash()) {
        throw new IllegalArgumentException(
            "denylist entry \"" + entry + "\": the node denylist holds b3:<64 hex> hashes only");
      }
      deny.add(ref.hashHex());
    }
    this.denylist = Collections.unmodifiableSet(deny);
    Set<String> orig = new HashSet<>();
    grants.browser().ifPresent(b -> b.origins().forEach(o -> orig.add(o.toString())));
    this.origins = Collections.unmodifiableSet(orig);
    this.untrusted = grants.flow().map(FlowGrant::untrusted).orElse(List.of());
    this.openings = grants.flow().map(FlowGrant::open).orElse(List.of());
  }

  /**
   * Holds every later query to {@code newGrants}, which must be within the grant set in force
   * ({@link Attenuation}); a wider one is refused, since an amendment may only tighten.
   *
   * @throws IllegalArgumentException if {@code newGrants} is not within the grants in force
   */
  public synchronized void tighten(Grants newGrants) {
    Enforcer now = tightened == null ? this : tightened;
    if (Attenuation.check(newGrants, now.grants) instanceof Attenuation.Wider w) {
      throw new IllegalArgumentException("an amendment may only tighten: " + w);
    }
    tightened = new Enforcer(newGrants, denylist);
  }

  /** The grant set this Enforcer decides for (the amended one after {@link #tighten}). */
  public Grants grants() {
    Enforcer t = tightened;
    if (t != null) {
      return t.grants();
    }
    return grants;
  }

  /** Cpu always; any other class only if granted (Simd is not implicit). */
  public Decision mayDispatch(DeviceClass device) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayDispatch(device);
    }
    return devices.contains(device)
        ? Decision.ALLOW
        : Decision.denied("device class " + device.jsonName() + " is not in compute.devices");
  }

  /** Some glob of the mode's list matches the normalized path. */
  public Decision mayPath(PathMode mode, String path) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayPath(mode, path);
    }
    StoragePath p;
    try {
      p = StoragePath.parse(path);
    } catch (IllegalArgumentException e) {
      return Decision.denied("path refused: " + e.getMessage());
    }
    return mayPath(mode, p);
  }

  /** Some glob of the mode's list matches {@code path}. */
  public Decision mayPath(PathMode mode, StoragePath path) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayPath(mode, path);
    }
    for (Glob g : globsByMode[mode.ordinal()]) {
      if (g.matches(path)) {
        return Decision.ALLOW;
      }
    }
    return Decision.denied(NO_GLOB_MATCHES[mode.ordinal()] + path.text());
  }

  /** The normalized endpoint is in network.outbound (exact match). */
  public Decision mayEgress(String endpoint) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayEgress(endpoint);
    }
    // A string already in the set is normal (normalization is idempotent): skip re-parsing it.
    if (outbound.contains(endpoint)) {
      return Decision.ALLOW;
    }
    Endpoint e;
    try {
      e = Endpoint.parse(endpoint);
    } catch (IllegalArgumentException ex) {
      return Decision.denied("malformed endpoint: " + ex.getMessage());
    }
    return mayEgress(e);
  }

  /** {@code endpoint} is in network.outbound. */
  public Decision mayEgress(Endpoint endpoint) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayEgress(endpoint);
    }
    return outboundEndpoints.contains(endpoint)
        ? Decision.ALLOW
        : Decision.denied("endpoint " + endpoint + " is not in network.outbound");
  }

  /** Capability first, then the run's taint against the egress sink (DENIED before TAINTED). */
  public Decision mayEgress(Endpoint endpoint, RunTaint taint) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayEgress(endpoint, taint);
    }
    Decision d = mayEgress(endpoint);
    return d.allowed() ? mayReach(new FlowSink.Egress(endpoint), taint) : d;
  }

  /** The direction is granted and the key starts with a granted prefix (or prefixes is empty). */
  public Decision mayKv(KvDirection dir, byte[] key) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayKv(dir, key);
    }
    boolean granted = dir == KvDirection.READ ? kvRead : kvWrite;
    if (!granted) {
      return Decision.denied("kv." + dir.jsonName() + " is not granted");
    }
    if (kvPrefixes.length == 0) {
      return Decision.ALLOW;
    }
    for (byte[] prefix : kvPrefixes) {
      if (key.length >= prefix.length
          && Arrays.equals(prefix, 0, prefix.length, key, 0, prefix.length)) {
        return Decision.ALLOW;
      }
    }
    return Decision.denied("key matches no kv.prefixes entry");
  }

  /**
   * The HostGrant flag for {@code service}. A denied clock is not an error for the guest: the
   * executor answers with the normalized constant instead (SPEC §7.5).
   */
  public Decision mayHost(HostService service) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayHost(service);
    }
    return host.allows(service)
        ? Decision.ALLOW
        : Decision.denied("host." + service.jsonName() + " is not granted");
  }

  /** {@link #mayExec(ExecRequest, long)} for a program known by name only, no children running. */
  public Decision mayExec(String program) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayExec(program);
    }
    return mayExec(ExecRequest.named(program), 0);
  }

  /**
   * Content-addressed exec control (WIRE.md §2.8): the node denylist first (absolute, by hash of
   * every program in the chain), then the grant: process present, exec true, every program in the
   * chain allowed by name or hash, fewer than max_processes children running.
   */
  public Decision mayExec(ExecRequest request, long runningChildren) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayExec(request, runningChildren);
    }
    for (ExecStep step : request.steps()) {
      if (step.b3Hex().isPresent() && denylist.contains(step.b3Hex().get())) {
        return Decision.denied(
            "binary of "
                + step.name()
                + " (b3:"
                + step.b3Hex().get()
                + ") is on the node denylist");
      }
    }
    if (grants.process().isEmpty()) {
      return Decision.denied("no process grant");
    }
    ProcessGrant process = grants.process().get();
    if (!process.exec()) {
      return Decision.denied("process.exec is false");
    }
    if (!denylist.isEmpty()) {
      for (ExecStep step : request.steps()) {
        if (step.b3Hex().isEmpty()) {
          return Decision.denied(
              "binary of " + step.name() + " was not hashed; the node denylist cannot be checked");
        }
      }
    }
    if (request.unresolved().isPresent()) {
      return Decision.denied("cannot see what would run: " + request.unresolved().get());
    }
    for (ExecStep step : request.steps()) {
      if (process.programs().stream().noneMatch(p -> p.matches(step))) {
        return Decision.denied(
            "program "
                + step.name()
                + step.b3Hex().map(h -> " (b3:" + h + ")").orElse("")
                + " is not in process.programs");
      }
    }
    if (runningChildren >= process.maxProcesses()) {
      return Decision.denied(
          "max_processes " + process.maxProcesses() + " reached (" + runningChildren + " running)");
    }
    return Decision.ALLOW;
  }

  /** Capability first, then the run's taint against the exec sink (DENIED before TAINTED). */
  public Decision mayExec(ExecRequest request, long runningChildren, RunTaint taint) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayExec(request, runningChildren, taint);
    }
    Decision d = mayExec(request, runningChildren);
    return d.allowed() ? mayReach(new FlowSink.Exec(request), taint) : d;
  }

  /** Browser present and enabled, and the origin of the target is on the allowlist. */
  public Decision mayNavigate(String url) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayNavigate(url);
    }
    if (grants.browser().isEmpty() || !grants.browser().get().enabled()) {
      return Decision.denied("browser is not enabled");
    }
    Origin o;
    try {
      o = Origin.ofUrl(url);
    } catch (IllegalArgumentException e) {
      return Decision.denied("malformed origin: " + e.getMessage());
    }
    return origins.contains(o.toString())
        ? Decision.ALLOW
        : Decision.denied("origin " + o + " is not in browser.origins");
  }

  /** Display present and enabled (no surface size asked). */
  public Decision mayDisplay() {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayDisplay();
    }
    if (grants.display().isEmpty() || !grants.display().get().enabled()) {
      return Decision.denied("display is not enabled");
    }
    return Decision.ALLOW;
  }

  /** Display enabled and width ≤ max_width and height ≤ max_height (per dimension). */
  public Decision mayDisplay(long width, long height) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayDisplay(width, height);
    }
    Decision d = mayDisplay();
    if (!d.allowed()) {
      return d;
    }
    DisplayGrant g = grants.display().get();
    if (width < 0 || height < 0) {
      return Decision.denied("negative surface size");
    }
    if (width > g.maxWidth() || height > g.maxHeight()) {
      return Decision.denied(
          "surface " + width + "x" + height + " exceeds " + g.maxWidth() + "x" + g.maxHeight());
    }
    return Decision.ALLOW;
  }

  /** Display enabled and vnc true. */
  public Decision mayVnc() {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayVnc();
    }
    Decision d = mayDisplay();
    if (!d.allowed()) {
      return d;
    }
    return grants.display().get().vnc() ? Decision.ALLOW : Decision.denied("display.vnc is false");
  }

  /**
   * The request stays within every ceiling that is set (equality allowed); an unset ceiling does
   * not bound its dimension. A grant with no storage path in any mode has no I/O to sustain, so it
   * is denied, which keeps "the empty grant allows only may_dispatch(Cpu)" true (WIRE.md §3.2).
   */
  public Decision maySustainIo(long iops, long readBps) {
    Enforcer t = tightened;
    if (t != null) {
      return t.maySustainIo(iops, readBps);
    }
    if (iops < 0 || readBps < 0) {
      return Decision.denied("negative rate");
    }
    StorageGrant s = grants.storage();
    if (s.read().isEmpty() && s.write().isEmpty() && s.delete().isEmpty()) {
      return Decision.denied("no storage path is granted, so there is no I/O to sustain");
    }
    if (s.maxIops().isPresent() && iops > s.maxIops().getAsLong()) {
      return Decision.denied(iops + " iops exceeds max_iops " + s.maxIops().getAsLong());
    }
    if (s.maxReadBps().isPresent() && readBps > s.maxReadBps().getAsLong()) {
      return Decision.denied(
          readBps + " bytes/s exceeds max_read_bps " + s.maxReadBps().getAsLong());
    }
    return Decision.ALLOW;
  }

  /** network.inbound is true. */
  public Decision mayInbound() {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayInbound();
    }
    return grants.network().inbound()
        ? Decision.ALLOW
        : Decision.denied("network.inbound is false");
  }

  /**
   * The origin labels a read from {@code source} adds to the run: the untrusted patterns that match
   * it, sorted. Empty when the grant has no flow part.
   */
  public Set<String> taints(FlowSource source) {
    Enforcer t = tightened;
    if (t != null) {
      return t.taints(source);
    }
    if (untrusted.isEmpty()) {
      return Set.of();
    }
    Set<String> out = new TreeSet<>();
    for (SourcePattern p : untrusted) {
      if (p.matches(source)) {
        out.add(p.label());
      }
    }
    return Collections.unmodifiableSet(out);
  }

  /**
   * Allow when every label the run carries is opened to {@code sink} by some {@code open} entry
   * whose sink pattern matches it; otherwise TAINTED. Assumes the capability was already granted.
   */
  public Decision mayReach(FlowSink sink, RunTaint taint) {
    Enforcer t = tightened;
    if (t != null) {
      return t.mayReach(sink, taint);
    }
    if (taint.isEmpty()) {
      return Decision.ALLOW;
    }
    Set<String> opened = new HashSet<>();
    for (FlowOpening o : openings) {
      if (o.sink().matches(sink)) {
        opened.addAll(o.origins());
      }
    }
    Set<String> missing = new TreeSet<>();
    for (String label : taint.labels()) {
      if (!opened.contains(label)) {
        missing.add(label);
      }
    }
    return missing.isEmpty()
        ? Decision.ALLOW
        : Decision.tainted(
            "run carries " + String.join(", ", missing) + " not opened to this sink");
  }
}
