package io.sandboxd.executor;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The node-side services the `sandbox` imports reach, configured once by the daemon: the kv store,
 * the secret store for egress credentials, the exec search path and denylist, and the on-host
 * inference endpoint.
 */
public record HostServices(
    Optional<KvStore> kv,
    SecretStore secrets,
    List<String> execSearchPath,
    Set<String> execDenylist,
    Duration execTimeout,
    Duration egressTimeout,
    Optional<URI> inferenceEndpoint,
    String inferenceClass,
    long maxUnitMemoryBytes,
    java.util.function.LongSupplier inferenceEnergyUj) {

  /** The node's default cap on one unit's linear memory, whatever its grant says. */
  public static final long DEFAULT_MAX_UNIT_MEMORY = 512L << 20;

  public HostServices {
    execSearchPath = List.copyOf(execSearchPath);
    execDenylist = Set.copyOf(execDenylist);
  }

  /** No kv store, no secrets, no inference: every such call answers UNAVAILABLE. */
  public static HostServices none() {
    return new HostServices(
        Optional.empty(),
        SecretStore.empty(),
        List.of("/usr/local/bin", "/usr/bin", "/bin"),
        Set.of(),
        Duration.ofSeconds(10),
        Duration.ofSeconds(30),
        Optional.empty(),
        "Cpu",
        DEFAULT_MAX_UNIT_MEMORY,
        () -> -1);
  }

  public HostServices withKv(KvStore store) {
    return new HostServices(
        Optional.of(store),
        secrets,
        execSearchPath,
        execDenylist,
        execTimeout,
        egressTimeout,
        inferenceEndpoint,
        inferenceClass,
        maxUnitMemoryBytes,
        inferenceEnergyUj);
  }

  public HostServices withSecrets(SecretStore store) {
    return new HostServices(
        kv,
        store,
        execSearchPath,
        execDenylist,
        execTimeout,
        egressTimeout,
        inferenceEndpoint,
        inferenceClass,
        maxUnitMemoryBytes,
        inferenceEnergyUj);
  }

  public HostServices withExecDenylist(Set<String> denylist) {
    return new HostServices(
        kv,
        secrets,
        execSearchPath,
        denylist,
        execTimeout,
        egressTimeout,
        inferenceEndpoint,
        inferenceClass,
        maxUnitMemoryBytes,
        inferenceEnergyUj);
  }

  public HostServices withInference(URI endpoint, String servingClass) {
    return new HostServices(
        kv,
        secrets,
        execSearchPath,
        execDenylist,
        execTimeout,
        egressTimeout,
        Optional.of(endpoint),
        servingClass,
        maxUnitMemoryBytes,
        inferenceEnergyUj);
  }

  /**
   * The serving class's cumulative energy in µJ (-1 when unmetered): read before and after each
   * `infer` call, so the call's energy is charged to the class that served it.
   */
  public HostServices withInferenceMeter(java.util.function.LongSupplier cumulativeUj) {
    return new HostServices(
        kv,
        secrets,
        execSearchPath,
        execDenylist,
        execTimeout,
        egressTimeout,
        inferenceEndpoint,
        inferenceClass,
        maxUnitMemoryBytes,
        cumulativeUj);
  }

  /** Caps every unit's memory at {@code bytes}: unit memory lives on the daemon's heap. */
  public HostServices withMaxUnitMemory(long bytes) {
    return new HostServices(
        kv,
        secrets,
        execSearchPath,
        execDenylist,
        execTimeout,
        egressTimeout,
        inferenceEndpoint,
        inferenceClass,
        bytes,
        inferenceEnergyUj);
  }

  /** Directory of secret files, for {@link SecretStore#directory}. */
  public static Path defaultSecretsDir(Path stateDir) {
    return stateDir.resolve("secrets");
  }
}
