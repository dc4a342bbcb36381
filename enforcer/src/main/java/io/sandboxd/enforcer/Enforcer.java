package io.sandboxd.enforcer;

import io.sandboxd.attest.DeviceClass;
import java.util.Set;

/**
 * Deny-by-default decisions for every query of WIRE.md §3.2, compiled once from a grant set. Pure
 * and deterministic: the answer is a function of the grants, the query and (for sinks) the run's
 * taint; no clock, no I/O, no floats, no ambient state. Thread-safe: immutable after construction
 * except for {@link #tighten}, which replaces the grant set in force for every later query.
 */
public final class Enforcer {
  private final Set<String> denylist;
  // The decisions in force: those of the grant set, or of the last accepted amendment (WIRE.md
  // §2.11); read once per query so a swap lands between two host calls.
  private volatile GrantDecisions current;

  /** An Enforcer for {@code grants} on a node with an empty exec denylist. */
  public Enforcer(Grants grants) {
    this(grants, Set.of());
  }

  /**
   * An Enforcer for {@code grants} on a node whose absolute exec denylist is {@code denylist}
   * ({@code b3:<64 hex>} entries, from the daemon configuration).
   */
  public Enforcer(Grants grants, Set<String> denylist) {
    this.denylist = Set.copyOf(denylist);
    this.current = new GrantDecisions(grants, this.denylist);
  }

  /**
   * Holds every later query to {@code newGrants}, which must be within the grant set in force
   * ({@link Attenuation}); a wider one is refused, since an amendment may only tighten.
   *
   * @throws IllegalArgumentException if {@code newGrants} is not within the grants in force
   */
  public synchronized void tighten(Grants newGrants) {
    if (Attenuation.check(newGrants, current.grants()) instanceof Attenuation.Wider w) {
      throw new IllegalArgumentException("an amendment may only tighten: " + w);
    }
    current = new GrantDecisions(newGrants, denylist);
  }

  /** The grant set this Enforcer decides for (the amended one after {@link #tighten}). */
  public Grants grants() {
    return current.grants();
  }

  /** Cpu always; any other class only if granted (Simd is not implicit). */
  public Decision mayDispatch(DeviceClass device) {
    return current.mayDispatch(device);
  }

  /** Some glob of the mode's list matches the normalized path. */
  public Decision mayPath(PathMode mode, String path) {
    return current.mayPath(mode, path);
  }

  /** Some glob of the mode's list matches {@code path}. */
  public Decision mayPath(PathMode mode, StoragePath path) {
    return current.mayPath(mode, path);
  }

  /** The normalized endpoint is in network.outbound (exact match). */
  public Decision mayEgress(String endpoint) {
    return current.mayEgress(endpoint);
  }

  /** {@code endpoint} is in network.outbound. */
  public Decision mayEgress(Endpoint endpoint) {
    return current.mayEgress(endpoint);
  }

  /** Capability first, then the run's taint against the egress sink (DENIED before TAINTED). */
  public Decision mayEgress(Endpoint endpoint, RunTaint taint) {
    return current.mayEgress(endpoint, taint);
  }

  /** The direction is granted and the key starts with a granted prefix (or prefixes is empty). */
  public Decision mayKv(KvDirection dir, byte[] key) {
    return current.mayKv(dir, key);
  }

  /**
   * The HostGrant flag for {@code service}. A denied clock is not an error for the guest: the
   * executor answers with the normalized constant instead (SPEC §7.5).
   */
  public Decision mayHost(HostService service) {
    return current.mayHost(service);
  }

  /** {@link #mayExec(ExecRequest, long)} for a program known by name only, no children running. */
  public Decision mayExec(String program) {
    return current.mayExec(program);
  }

  /**
   * Content-addressed exec control (WIRE.md §2.8): the node denylist first (absolute, by hash of
   * every program in the chain), then the grant: process present, exec true, every program in the
   * chain allowed by name or hash, fewer than max_processes children running.
   */
  public Decision mayExec(ExecRequest request, long runningChildren) {
    return current.mayExec(request, runningChildren);
  }

  /** Capability first, then the run's taint against the exec sink (DENIED before TAINTED). */
  public Decision mayExec(ExecRequest request, long runningChildren, RunTaint taint) {
    return current.mayExec(request, runningChildren, taint);
  }

  /** Browser present and enabled, and the origin of the target is on the allowlist. */
  public Decision mayNavigate(String url) {
    return current.mayNavigate(url);
  }

  /** Display present and enabled (no surface size asked). */
  public Decision mayDisplay() {
    return current.mayDisplay();
  }

  /** Display enabled and width ≤ max_width and height ≤ max_height (per dimension). */
  public Decision mayDisplay(long width, long height) {
    return current.mayDisplay(width, height);
  }

  /** Display enabled and vnc true. */
  public Decision mayVnc() {
    return current.mayVnc();
  }

  /**
   * The request stays within every ceiling that is set (equality allowed); an unset ceiling does
   * not bound its dimension. A grant with no storage path in any mode has no I/O to sustain, so it
   * is denied, which keeps "the empty grant allows only may_dispatch(Cpu)" true (WIRE.md §3.2).
   */
  public Decision maySustainIo(long iops, long readBps) {
    return current.maySustainIo(iops, readBps);
  }

  /** network.inbound is true. */
  public Decision mayInbound() {
    return current.mayInbound();
  }

  /**
   * The origin labels a read from {@code source} adds to the run: the untrusted patterns that match
   * it, sorted. Empty when the grant has no flow part.
   */
  public Set<String> taints(FlowSource source) {
    return current.taints(source);
  }

  /**
   * Allow when every label the run carries is opened to {@code sink} by some {@code open} entry
   * whose sink pattern matches it; otherwise TAINTED. Assumes the capability was already granted.
   */
  public Decision mayReach(FlowSink sink, RunTaint taint) {
    return current.mayReach(sink, taint);
  }
}
