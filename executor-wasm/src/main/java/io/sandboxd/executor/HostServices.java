package io.sandboxd.executor;

import io.sandboxd.attest.DeviceClass;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * The node-side services the `sandbox` imports reach, configured once by the daemon: the kv store,
 * the secret store for egress credentials, the exec search path, denylist, timeout and the bounds
 * of an exec'd tree, the on-host inference endpoint and its meter, the node's cap on a unit's
 * memory, the room units' writes leave free on a disk, and where the node's own failures under a
 * host call are told.
 */
public record HostServices(
    Optional<KvStore> kv,
    SecretStore secrets,
    List<String> execSearchPath,
    Set<String> execDenylist,
    Duration execTimeout,
    TreeBounds execTree,
    List<Path> nodePrivate,
    Duration egressTimeout,
    Optional<URI> inferenceEndpoint,
    DeviceClass inferenceClass,
    long maxUnitMemoryBytes,
    LongSupplier inferenceEnergyUj,
    Journal.Limits journalLimits,
    long storageQuotaBytes,
    long kvQuotaBytes,
    DiskReserve reserve,
    HostFaults faults) {

  /** The node's default cap on one unit's linear memory, whatever its grant says. */
  public static final long DEFAULT_MAX_UNIT_MEMORY = 512L << 20;

  /** The node's default cap on the bytes one module keeps in its storage directory. */
  public static final long DEFAULT_STORAGE_QUOTA = 1L << 30;

  /**
   * The node's default cap on the kv bytes (keys, values, a small per-entry cost) of one module.
   */
  public static final long DEFAULT_KV_QUOTA = 64L << 20;

  public HostServices {
    execSearchPath = List.copyOf(execSearchPath);
    execDenylist = Set.copyOf(execDenylist);
    nodePrivate = List.copyOf(nodePrivate);
  }

  /** No kv store, no secrets, no inference: every such call answers UNAVAILABLE. */
  public static HostServices none() {
    return new Builder().build();
  }

  public Builder toBuilder() {
    return new Builder(this);
  }

  public HostServices withKv(KvStore store) {
    return toBuilder().kv(store).build();
  }

  public HostServices withSecrets(SecretStore store) {
    return toBuilder().secrets(store).build();
  }

  public HostServices withExecDenylist(Set<String> denylist) {
    return toBuilder().execDenylist(denylist).build();
  }

  public HostServices withInference(URI endpoint, DeviceClass servingClass) {
    return toBuilder().inference(endpoint, servingClass).build();
  }

  /**
   * The serving class's cumulative energy in µJ (-1 when unmetered): read before and after each
   * `infer` call, so the call's energy is charged to the class that served it.
   */
  public HostServices withInferenceMeter(LongSupplier cumulativeUj) {
    return toBuilder().inferenceMeter(cumulativeUj).build();
  }

  /** Caps every unit's memory at {@code bytes}: unit memory lives on the daemon's heap. */
  public HostServices withMaxUnitMemory(long bytes) {
    return toBuilder().maxUnitMemoryBytes(bytes).build();
  }

  /** Directory of secret files, for {@link SecretStore#directory}. */
  public static Path defaultSecretsDir(Path stateDir) {
    return stateDir.resolve("secrets");
  }

  /** Builds a {@link HostServices}, starting from the safe defaults. */
  public static final class Builder {
    private Optional<KvStore> kv = Optional.empty();
    private SecretStore secrets = SecretStore.empty();
    private List<String> execSearchPath = List.of("/usr/local/bin", "/usr/bin", "/bin");
    private Set<String> execDenylist = Set.of();
    private Duration execTimeout = Duration.ofSeconds(10);
    private TreeBounds execTree = TreeBounds.DEFAULT;
    private List<Path> nodePrivate = List.of();
    private Duration egressTimeout = Duration.ofSeconds(30);
    private Optional<URI> inferenceEndpoint = Optional.empty();
    private DeviceClass inferenceClass = DeviceClass.Cpu;
    private long maxUnitMemoryBytes = DEFAULT_MAX_UNIT_MEMORY;
    private LongSupplier inferenceEnergyUj = () -> -1;
    private Journal.Limits journalLimits = Journal.Limits.DEFAULT;
    private long storageQuotaBytes = DEFAULT_STORAGE_QUOTA;
    private long kvQuotaBytes = DEFAULT_KV_QUOTA;
    private DiskReserve reserve = DiskReserve.byDefault(HostFaults.UNHEARD);
    private HostFaults faults = HostFaults.UNHEARD;

    public Builder() {}

    private Builder(HostServices s) {
      kv = s.kv;
      secrets = s.secrets;
      execSearchPath = s.execSearchPath;
      execDenylist = s.execDenylist;
      execTimeout = s.execTimeout;
      execTree = s.execTree;
      nodePrivate = s.nodePrivate;
      egressTimeout = s.egressTimeout;
      inferenceEndpoint = s.inferenceEndpoint;
      inferenceClass = s.inferenceClass;
      maxUnitMemoryBytes = s.maxUnitMemoryBytes;
      inferenceEnergyUj = s.inferenceEnergyUj;
      journalLimits = s.journalLimits;
      storageQuotaBytes = s.storageQuotaBytes;
      kvQuotaBytes = s.kvQuotaBytes;
      reserve = s.reserve;
      faults = s.faults;
    }

    public Builder kv(KvStore store) {
      kv = Optional.of(store);
      return this;
    }

    public Builder secrets(SecretStore store) {
      secrets = store;
      return this;
    }

    public Builder execSearchPath(List<String> path) {
      execSearchPath = path;
      return this;
    }

    public Builder execDenylist(Set<String> denylist) {
      execDenylist = denylist;
      return this;
    }

    public Builder execTimeout(Duration timeout) {
      execTimeout = timeout;
      return this;
    }

    /** What one exec's process tree may hold at once: processes and their own memory. */
    public Builder execTree(TreeBounds bounds) {
      execTree = bounds;
      return this;
    }

    /**
     * The node's own files an exec'd program never reads, wherever they lie (its state directory,
     * its secrets), even beneath a system directory it may otherwise read.
     */
    public Builder nodePrivate(List<Path> paths) {
      nodePrivate = paths;
      return this;
    }

    public Builder egressTimeout(Duration timeout) {
      egressTimeout = timeout;
      return this;
    }

    public Builder inference(URI endpoint, DeviceClass servingClass) {
      inferenceEndpoint = Optional.of(endpoint);
      inferenceClass = servingClass;
      return this;
    }

    public Builder inferenceMeter(LongSupplier cumulativeUj) {
      inferenceEnergyUj = cumulativeUj;
      return this;
    }

    public Builder maxUnitMemoryBytes(long bytes) {
      maxUnitMemoryBytes = bytes;
      return this;
    }

    /** How much one run may journal (entries and bytes). */
    public Builder journalLimits(Journal.Limits limits) {
      journalLimits = limits;
      return this;
    }

    /** Per-module quotas: storage bytes and kv bytes; past them a write gets QUOTA / EDQUOT. */
    public Builder quotas(long storageBytes, long kvBytes) {
      storageQuotaBytes = storageBytes;
      kvQuotaBytes = kvBytes;
      return this;
    }

    /** The room units' storage writes leave free on each file system they write to. */
    public Builder reserve(DiskReserve kept) {
      reserve = kept;
      return this;
    }

    /** Where a host call that fails on the node's side (not the unit's) is told. */
    public Builder faults(HostFaults told) {
      faults = told;
      return this;
    }

    public HostServices build() {
      return new HostServices(
          kv,
          secrets,
          execSearchPath,
          execDenylist,
          execTimeout,
          execTree,
          nodePrivate,
          egressTimeout,
          inferenceEndpoint,
          inferenceClass,
          maxUnitMemoryBytes,
          inferenceEnergyUj,
          journalLimits,
          storageQuotaBytes,
          kvQuotaBytes,
          reserve,
          faults);
    }
  }
}
