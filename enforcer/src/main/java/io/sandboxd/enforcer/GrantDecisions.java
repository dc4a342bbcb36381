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
 * The decisions of one grant set, compiled once: the rules behind each {@link Enforcer} query
 * (whose methods document them). Immutable, so an amendment swaps in a new one instead of changing
 * it.
 */
final class GrantDecisions {
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

  /** The decisions for {@code grants} under the node's exec {@code denylist} of b3: hashes. */
  GrantDecisions(Grants grants, Set<String> denylist) {
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

  Grants grants() {
    return grants;
  }

  Decision mayDispatch(DeviceClass device) {
    return devices.contains(device)
        ? Decision.ALLOW
        : Decision.denied("device class " + device.jsonName() + " is not in compute.devices");
  }

  Decision mayPath(PathMode mode, String path) {
    StoragePath p;
    try {
      p = StoragePath.parse(path);
    } catch (IllegalArgumentException e) {
      return Decision.denied("path refused: " + e.getMessage());
    }
    return mayPath(mode, p);
  }

  Decision mayPath(PathMode mode, StoragePath path) {
    for (Glob g : globsByMode[mode.ordinal()]) {
      if (g.matches(path)) {
        return Decision.ALLOW;
      }
    }
    return Decision.denied(NO_GLOB_MATCHES[mode.ordinal()] + path.text());
  }

  Decision mayEgress(String endpoint) {
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

  Decision mayEgress(Endpoint endpoint) {
    return outboundEndpoints.contains(endpoint)
        ? Decision.ALLOW
        : Decision.denied("endpoint " + endpoint + " is not in network.outbound");
  }

  Decision mayEgress(Endpoint endpoint, RunTaint taint) {
    Decision d = mayEgress(endpoint);
    return d.allowed() ? mayReach(new FlowSink.Egress(endpoint), taint) : d;
  }

  Decision mayKv(KvDirection dir, byte[] key) {
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

  Decision mayHost(HostService service) {
    return host.allows(service)
        ? Decision.ALLOW
        : Decision.denied("host." + service.jsonName() + " is not granted");
  }

  Decision mayExec(String program) {
    return mayExec(ExecRequest.named(program), 0);
  }

  Decision mayExec(ExecRequest request, long runningChildren) {
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

  Decision mayExec(ExecRequest request, long runningChildren, RunTaint taint) {
    Decision d = mayExec(request, runningChildren);
    return d.allowed() ? mayReach(new FlowSink.Exec(request), taint) : d;
  }

  Decision mayNavigate(String url) {
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

  Decision mayDisplay() {
    if (grants.display().isEmpty() || !grants.display().get().enabled()) {
      return Decision.denied("display is not enabled");
    }
    return Decision.ALLOW;
  }

  Decision mayDisplay(long width, long height) {
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

  Decision mayVnc() {
    Decision d = mayDisplay();
    if (!d.allowed()) {
      return d;
    }
    return grants.display().get().vnc() ? Decision.ALLOW : Decision.denied("display.vnc is false");
  }

  Decision maySustainIo(long iops, long readBps) {
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

  Decision mayInbound() {
    return grants.network().inbound()
        ? Decision.ALLOW
        : Decision.denied("network.inbound is false");
  }

  Set<String> taints(FlowSource source) {
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

  Decision mayReach(FlowSink sink, RunTaint taint) {
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
