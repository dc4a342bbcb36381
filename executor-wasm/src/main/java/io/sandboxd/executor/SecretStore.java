package io.sandboxd.executor;

import io.sandboxd.enforcer.SecretBindings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The node's secrets for egress credentials, looked up by handle (e.g. {@code vault:api-key}), and
 * where the operator bound each one. The guest never sees a secret: the host injects it after the
 * request is journaled and redacts it from what comes back.
 */
public interface SecretStore {
  /** Longest secret read from a file or the environment. */
  int MAX_SECRET_BYTES = 16 * 1024;

  /** The secret's value, when {@code handle} is bound and readable. */
  Optional<String> secret(String handle);

  /** Where each secret may be sent; a handle not in it is never injected. */
  SecretBindings bindings();

  static SecretStore empty() {
    return of(SecretBindings.none(), Map.<String, String>of());
  }

  /** Fixed values (tests, embedding); only handles in {@code bindings} are answered. */
  static SecretStore of(SecretBindings bindings, Map<String, String> values) {
    Map<String, String> copy = Map.copyOf(values);
    return reading(bindings, handle -> Optional.ofNullable(copy.get(handle)));
  }

  /** Values read at each use by {@code readers} (one per handle); unbound handles never answer. */
  static SecretStore readers(
      SecretBindings bindings, Map<String, Supplier<Optional<String>>> readers) {
    Map<String, Supplier<Optional<String>>> copy = Map.copyOf(readers);
    return reading(
        bindings,
        handle -> copy.containsKey(handle) ? copy.get(handle).get() : Optional.<String>empty());
  }

  private static SecretStore reading(
      SecretBindings bindings, java.util.function.Function<String, Optional<String>> read) {
    return new SecretStore() {
      @Override
      public Optional<String> secret(String handle) {
        if (!bindings.handles().contains(handle)) {
          return Optional.empty();
        }
        return read.apply(handle).filter(s -> !s.isEmpty());
      }

      @Override
      public SecretBindings bindings() {
        return bindings;
      }
    };
  }

  /**
   * A secret file's stripped UTF-8 text: a regular file (not followed through a link), at most
   * {@link #MAX_SECRET_BYTES}; empty when it is missing, too large or unreadable.
   */
  static Optional<String> readFile(Path file) {
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      return Optional.empty();
    }
    try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
      byte[] bytes = in.readNBytes(MAX_SECRET_BYTES + 1);
      if (bytes.length > MAX_SECRET_BYTES) {
        return Optional.empty();
      }
      return Optional.of(new String(bytes, StandardCharsets.UTF_8).strip());
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** An environment variable's stripped value, when set and at most {@link #MAX_SECRET_BYTES}. */
  static Optional<String> readEnv(String name) {
    String v = System.getenv(name);
    return v == null || v.length() > MAX_SECRET_BYTES ? Optional.empty() : Optional.of(v.strip());
  }
}
