package io.sandboxd.daemon.run;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.enforcer.Acceptance;
import io.sandboxd.enforcer.GrantAcceptance;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import io.sandboxd.enforcer.HostProfile;
import io.sandboxd.enforcer.SecretBindings;
import io.sandboxd.enforcer.Tier;
import io.sandboxd.executor.CompiledUnit;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.executor.UnitException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decides whether a submission may run here: refuses malformed input with an error naming the
 * field, and declines (with a signed record) grants this node cannot honour: a device class it
 * cannot meter (rule 2) or a tier floor above S2. A grant that sends a node secret anywhere the
 * node's configuration did not bind it to is refused outright.
 */
public final class Admission {
  private final UnitCompiler compiler;
  private final HostProfile host;
  private final SecretBindings secrets;
  private final SubmitterPolicy policy;
  private final OfferedEnvironments environments;
  private final io.sandboxd.config.DaemonConfig.Io ioCaps;

  /**
   * Admission on a node that runs units at S2 and can meter {@code meterable}. A WASM unit can only
   * be confined to CPU work, so a class is grantable when it is metered (Cpu always is, at worst by
   * the labelled estimate).
   */
  public Admission(UnitCompiler compiler, Set<DeviceClass> meterable) {
    this(compiler, meterable, SecretBindings.none());
  }

  /** As above, on a node whose secrets may go only where {@code secrets} binds them. */
  public Admission(UnitCompiler compiler, Set<DeviceClass> meterable, SecretBindings secrets) {
    this(compiler, meterable, secrets, SubmitterPolicy.unrestricted());
  }

  /** As above, each caller held to the node {@code policy}. */
  public Admission(
      UnitCompiler compiler,
      Set<DeviceClass> meterable,
      SecretBindings secrets,
      SubmitterPolicy policy) {
    this(
        compiler,
        hostFor(meterable),
        secrets,
        policy,
        OfferedEnvironments.none(),
        io.sandboxd.config.DaemonConfig.Io.defaults());
  }

  private Admission(
      UnitCompiler compiler,
      HostProfile host,
      SecretBindings secrets,
      SubmitterPolicy policy,
      OfferedEnvironments environments,
      io.sandboxd.config.DaemonConfig.Io ioCaps) {
    this.compiler = compiler;
    this.host = host;
    this.secrets = secrets;
    this.policy = policy;
    this.environments = environments;
    this.ioCaps = ioCaps;
  }

  private static HostProfile hostFor(Set<DeviceClass> meterable) {
    java.util.EnumSet<DeviceClass> m = java.util.EnumSet.of(DeviceClass.Cpu);
    m.addAll(meterable);
    return new HostProfile(Tier.S2, java.util.EnumSet.allOf(DeviceClass.class), m);
  }

  /**
   * This admission on a node that offers {@code environments} and holds a WASI command's inputs and
   * outputs to {@code ioCaps}.
   */
  public Admission offering(
      OfferedEnvironments environments, io.sandboxd.config.DaemonConfig.Io ioCaps) {
    return new Admission(compiler, host, secrets, policy, environments, ioCaps);
  }

  /** The environments this node offers. */
  public OfferedEnvironments environments() {
    return environments;
  }

  /** The environment {@code env} names ({@code NAME} or {@code b3:<address>}), none when empty. */
  public java.util.Optional<OfferedEnvironments.Offer> offer(String env) {
    return env.isEmpty()
        ? java.util.Optional.empty()
        : java.util.Optional.of(environments.resolve(env));
  }

  /**
   * Every check on {@code s} from {@code caller}, in one place: the command input against the
   * node's io caps, the environment among those offered, then the node policy (a rule for the
   * caller, the module's size, the grants within its ceiling, the environment among its own, a
   * place among its runs in flight), the grants and secrets, the compiled module and its entry, and
   * that a unit given args or stdin can read them. The result holds the caller's run slot.
   */
  public AdmittedRun admit(Caller caller, Submission s) {
    return admit(java.util.Optional.of(caller), s);
  }

  /** As above without a caller (embedding, tools): no node policy applies and no slot is held. */
  public AdmittedRun admit(Submission s) {
    return admit(java.util.Optional.empty(), s);
  }

  private AdmittedRun admit(java.util.Optional<Caller> caller, Submission s) {
    io.sandboxd.executor.UnitIo io = s.input().check(ioCaps);
    java.util.Optional<OfferedEnvironments.Offer> offer = offer(s.env());
    Admitted a =
        caller.isPresent()
            ? admit(caller.get(), s.module(), s.moduleAddress(), s.grantsJson(), s.entry(), offer)
            : compile(parseGrants(s.grantsJson()), s.module(), s.moduleAddress(), s.entry(), null);
    try {
      CommandInput input = s.input();
      // argv[0] alone is a name (sandboxctl always sends one), not an input a unit could miss.
      if ((input.args().size() > 1 || input.hasStdin()) && !UnitCompiler.usesWasi(a.unit())) {
        throw new AdmissionException(
            (input.args().size() > 1 ? "args" : "stdin")
                + ": the unit imports no WASI, so it can read no arguments or stdin");
      }
      return new AdmittedRun(
          a,
          offer,
          input,
          io,
          s.jcp(),
          caller
              .filter(Caller::known)
              .map(c -> java.util.OptionalLong.of(c.uid()))
              .orElse(java.util.OptionalLong.empty()));
    } catch (RuntimeException e) {
      a.slot().close();
      throw e;
    }
  }

  /**
   * An admitted submission: parsed grants, a compiled unit, the CPU time compiling it took for this
   * submission (0 when the node had it compiled already), which this run pays for, and its place
   * among its caller's runs in flight (closed once the run is recorded).
   */
  public record Admitted(
      Grants grants,
      CompiledUnit unit,
      String entry,
      byte[] module,
      long compileCpuNanos,
      SubmitterPolicy.Slot slot,
      Grants.Canonical canonical) {
    /** Admitted outside any caller's run slot; the grants' canonical form taken here. */
    public Admitted(
        Grants grants, CompiledUnit unit, String entry, byte[] module, long compileCpuNanos) {
      this(grants, unit, entry, module, compileCpuNanos, () -> {}, grants.canonical());
    }

    /** The grants' canonical text, as the stored submission keeps it. */
    public String grantsCanonical() {
      return canonical.text();
    }

    /**
     * The grants' grants_id. Taken with the text once per grant document (see parseGrants): the
     * receipt, attestation, segment and stored submission of every run name it.
     */
    public String grantsId() {
      return canonical.id();
    }

    /** The same admission holding {@code taken}, the caller's run slot. */
    Admitted holding(SubmitterPolicy.Slot taken) {
      return new Admitted(grants, unit, entry, module, compileCpuNanos, taken, canonical);
    }

    /**
     * The same admitted unit under {@code amended} grants (an applied amendment), its slot kept.
     */
    public Admitted withGrants(Grants amended) {
      return new Admitted(amended, unit, entry, module, compileCpuNanos, slot, amended.canonical());
    }
  }

  /** The node policy this admission applies. */
  public SubmitterPolicy policy() {
    return policy;
  }

  /**
   * Admits {@code caller}'s submission: the node policy first (a rule for the caller, the module's
   * size, the grants within the rule's ceiling, the environment among the rule's, a place among its
   * runs in flight), then {@link #admit(byte[], String, String)}.
   */
  public Admitted admit(
      Caller caller,
      byte[] module,
      String grantsJson,
      String entry,
      java.util.Optional<OfferedEnvironments.Offer> environment) {
    return admit(caller, module, null, grantsJson, entry, environment);
  }

  private Admitted admit(
      Caller caller,
      byte[] module,
      String address,
      String grantsJson,
      String entry,
      java.util.Optional<OfferedEnvironments.Offer> environment) {
    io.sandboxd.config.NodePolicy.Rule rule = policy.ruleFor(caller);
    SubmitterPolicy.checkModule(rule, caller, module.length);
    ParsedGrants grants = parseGrants(grantsJson);
    SubmitterPolicy.checkGrants(rule, caller, grants.grants());
    SubmitterPolicy.checkEnvironment(rule, caller, environment);
    SubmitterPolicy.Slot slot = policy.acquire(rule, caller);
    try {
      return compile(grants, module, address, entry, compileShareOf(caller)).holding(slot);
    } catch (RuntimeException e) {
      slot.close();
      throw e;
    }
  }

  /** Admits a submission without a caller (a replay of a recorded run, embedding, tests). */
  public Admitted admit(byte[] module, String grantsJson, String entry) {
    return compile(parseGrants(grantsJson), module, null, entry, null);
  }

  /**
   * Whose share of the compile slots a caller's compilation takes: its process (uid and pid), so
   * one client compiling many modules leaves the other slots to other clients; a uid's processes
   * together are bounded by its node policy rule's runs in flight (taken before compiling).
   */
  public static Object compileShareOf(Caller caller) {
    return caller.known() ? "uid " + caller.uid() + " pid " + caller.pid() : "unknown callers";
  }

  // Parsed grant documents, with their canonical form, by their exact text: clients resubmit the
  // same grants run after run, parsing them was a tenth of admission, and every record of a run
  // names their grants_id. Bounded (a client sending endless new texts only churns
  // it); a refused text is never kept, so it is refused again with the same message.
  private static final int MAX_PARSED_GRANTS = 256;
  private static final int MAX_KEPT_GRANTS_CHARS = 64 << 10;
  // All kept texts together: a client sending large distinct grants holds at most this much.
  private static final long MAX_KEPT_CHARS_IN_ALL = 1L << 20;
  private final Map<String, ParsedGrants> parsedGrants = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicLong keptChars =
      new java.util.concurrent.atomic.AtomicLong();

  /** A grant document parsed, with its canonical form: both kept by the document's text. */
  private record ParsedGrants(Grants grants, Grants.Canonical canonical) {}

  private ParsedGrants parseGrants(String grantsJson) {
    ParsedGrants grants;
    try {
      grants = parsedGrants.get(grantsJson);
      if (grants == null) {
        Grants parsed = Grants.parse(grantsJson.getBytes(StandardCharsets.UTF_8));
        grants = new ParsedGrants(parsed, parsed.canonical());
        // What an entry holds: the client's text and the canonical one.
        long chars = (long) grantsJson.length() + grants.canonical().text().length();
        if (grantsJson.length() <= MAX_KEPT_GRANTS_CHARS) {
          if (parsedGrants.size() >= MAX_PARSED_GRANTS
              || keptChars.get() + chars > MAX_KEPT_CHARS_IN_ALL) {
            parsedGrants.clear();
            keptChars.set(0);
          }
          if (parsedGrants.put(grantsJson, grants) == null) {
            keptChars.addAndGet(chars);
          }
        }
      }
      secrets.check(grants.grants().network());
    } catch (GrantsException | io.sandboxd.attest.AttestException e) {
      throw new AdmissionException("grants: " + e.getMessage(), e);
    }
    return grants;
  }

  /** {@code address}: the module's, when already established (held bytes); null to hash them. */
  private Admitted compile(
      ParsedGrants grants, byte[] module, String address, String entry, Object share) {
    UnitCompiler.Compilation compiled;
    try {
      compiled =
          compiler.compileMetered(
              address != null ? address : UnitCompiler.addressOf(module), module, share);
    } catch (UnitException ex) {
      throw new AdmissionException(ex.getMessage(), ex);
    }
    CompiledUnit unit = compiled.unit();
    String chosen = defaultEntry(unit, entry);
    try {
      // The one place the entry is checked: the executor trusts what admission let through.
      UnitCompiler.checkEntry(unit, chosen);
    } catch (UnitException ex) {
      throw new AdmissionException(ex.getMessage(), ex);
    }
    return new Admitted(
        grants.grants(), unit, chosen, module, compiled.cpuNanos(), () -> {}, grants.canonical());
  }

  /** The entry to call: the one asked for, else `run` (our ABI), else `_start` (a WASI command). */
  static String defaultEntry(CompiledUnit unit, String entry) {
    if (entry != null && !entry.isEmpty()) {
      return entry;
    }
    List<String> exports = UnitCompiler.exportNames(unit);
    return exports.contains("_start") && !exports.contains("run") ? "_start" : "run";
  }

  /** Why this node declines the grant (rule 2, tier floors), or empty when it can run it. */
  public Optional<String> declineReason(Grants grants) {
    Acceptance a = GrantAcceptance.decide(grants, host);
    return a instanceof Acceptance.Declined d ? Optional.of(d.reason()) : Optional.empty();
  }
}
