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
    String inferenceClass) {

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
        "Cpu");
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
        inferenceClass);
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
        inferenceClass);
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
        inferenceClass);
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
        servingClass);
  }

  /** Directory of secret files, for {@link SecretStore#directory}. */
  public static Path defaultSecretsDir(Path stateDir) {
    return stateDir.resolve("secrets");
  }
}
