package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.JsonReader;
import java.util.function.BiFunction;
import java.util.function.Function;

/** A grant document that cannot be accepted; the message starts with the JSON path at fault. */
public final class GrantsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** How the strict JSON reader reports a grant field at fault. */
  public static final JsonReader.Fault FAULT = GrantsException::new;

  private final String path;

  public GrantsException(String path, String problem) {
    super(path + ": " + problem);
    this.path = path;
  }

  public GrantsException(String path, String problem, Throwable cause) {
    super(path + ": " + problem, cause);
    this.path = path;
  }

  /**
   * {@code text} read by {@code parse}, whose IllegalArgumentException is a fault at {@code path}.
   */
  static <T> T parsed(String path, String text, Function<String, T> parse) {
    try {
      return parse.apply(text);
    } catch (IllegalArgumentException e) {
      throw new GrantsException(path, e.getMessage(), e);
    }
  }

  /** A {@link JsonReader#list} element: a string read by {@code parse}, faults at the element. */
  static <T> BiFunction<JsonNode, String, T> element(Function<String, T> parse) {
    return (n, p) -> parsed(p, JsonReader.text(n, p, FAULT), parse);
  }

  /** The JSON path at fault, e.g. {@code $.storage.read[2]}. */
  public String path() {
    return path;
  }
}
