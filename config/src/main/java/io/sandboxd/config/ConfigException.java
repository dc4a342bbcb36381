package io.sandboxd.config;

import io.sandboxd.attest.JsonReader;

/** A configuration file that cannot be used: the message names the file and JSON path at fault. */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** How the strict JSON reader reports a configuration field at fault. */
  public static final JsonReader.Fault FAULT =
      (path, problem) -> new ConfigException(path + ": " + problem);

  public ConfigException(String message) {
    super(message);
  }

  public ConfigException(String message, Throwable cause) {
    super(message, cause);
  }
}
