package io.sandboxd.enforcer;

import java.util.Locale;

/** The lowercase spelling grant and query enums use in JSON, and reading it back strictly. */
final class LowercaseName {
  private LowercaseName() {}

  static String of(Enum<?> constant) {
    return constant.name().toLowerCase(Locale.ROOT);
  }

  /** The constant of {@code values} spelled {@code text}; else names {@code what} was unknown. */
  static <E extends Enum<E>> E parse(E[] values, String text, String what) {
    for (E e : values) {
      if (of(e).equals(text)) {
        return e;
      }
    }
    throw new IllegalArgumentException("unknown " + what + " \"" + text + "\"");
  }
}
