package io.sandboxd.executor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * The node's secrets for egress credentials, looked up by handle (e.g. {@code vault:api-key}). The
 * guest never sees a secret: the host injects it after the request is journaled.
 */
public interface SecretStore {
  Optional<String> secret(String handle);

  static SecretStore empty() {
    return handle -> Optional.empty();
  }

  static SecretStore of(Map<String, String> secrets) {
    Map<String, String> copy = Map.copyOf(secrets);
    return handle -> Optional.ofNullable(copy.get(handle));
  }

  /**
   * Secrets as files in {@code dir}: handle {@code scheme:name} reads {@code dir/name}. Names are
   * plain file names; anything with a path separator is refused.
   */
  static SecretStore directory(Path dir) {
    return handle -> {
      String name = handle.contains(":") ? handle.substring(handle.indexOf(':') + 1) : handle;
      if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..")) {
        return Optional.empty();
      }
      Path f = dir.resolve(name);
      try {
        return Files.isRegularFile(f)
            ? Optional.of(Files.readString(f, StandardCharsets.UTF_8).strip())
            : Optional.empty();
      } catch (IOException e) {
        return Optional.empty();
      }
    };
  }
}
