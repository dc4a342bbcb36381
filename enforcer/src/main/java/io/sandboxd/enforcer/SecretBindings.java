package io.sandboxd.enforcer;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Where the node lets each of its secrets go, set by the operator (never by a grant): a secret
 * handle maps to the only {@link SecretTarget}s it may be injected into. A handle with no binding
 * cannot be used at all.
 */
public record SecretBindings(Map<String, List<SecretTarget>> targets) {

  public SecretBindings {
    Map<String, List<SecretTarget>> copy = new TreeMap<>();
    targets.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    targets = java.util.Collections.unmodifiableMap(copy);
  }

  /** No secret bound anywhere: every grant that names a secret is refused. */
  public static SecretBindings none() {
    return new SecretBindings(Map.of());
  }

  public Set<String> handles() {
    return targets.keySet();
  }

  /**
   * Refuses a network grant whose credential sends a secret somewhere the node did not bind it to.
   *
   * @throws GrantsException naming {@code $.network.credentials[i].secret_ref} (an unbound secret)
   *     or {@code .endpoint} (a bound secret, the wrong endpoint), and the secret handle
   */
  public void check(NetworkGrant network) {
    List<EgressCredential> credentials = network.credentials();
    for (int i = 0; i < credentials.size(); i++) {
      EgressCredential c = credentials.get(i);
      String at = "$.network.credentials[" + i + "]";
      List<SecretTarget> bound = targets.get(c.secretRef());
      if (bound == null) {
        throw new GrantsException(
            at + ".secret_ref",
            "secret \""
                + c.secretRef()
                + "\" is not bound to any endpoint by this node's configuration");
      }
      if (bound.stream().noneMatch(t -> t.endpoint().equals(c.endpoint()))) {
        throw new GrantsException(
            at + ".endpoint",
            "this node binds secret \""
                + c.secretRef()
                + "\" to "
                + bound
                + " only, not to "
                + c.endpoint());
      }
    }
  }

  /** Whether secret {@code handle} may ride on a request to {@code scheme://endpoint rawPath}. */
  public boolean permits(String handle, String scheme, Endpoint endpoint, String rawPath) {
    List<SecretTarget> bound = targets.get(handle);
    return bound != null && bound.stream().anyMatch(t -> t.admits(scheme, endpoint, rawPath));
  }
}
