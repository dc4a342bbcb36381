package io.sandboxd.enforcer;

/**
 * A device class a unit may dispatch work to; constants are spelled as in JSON (PascalCase) and
 * declared in canonical sort order (WIRE.md §2.0.7).
 */
public enum DeviceClass {
  Cpu,
  Simd,
  Gpu,
  Npu,
  Tpu,
  Lpu,
  Photonic,
  Quantum;

  /** The JSON spelling of this class. */
  public String jsonName() {
    return name();
  }

  /** Parses the exact JSON spelling; throws {@link IllegalArgumentException} otherwise. */
  public static DeviceClass fromJson(String text) {
    for (DeviceClass c : values()) {
      if (c.name().equals(text)) {
        return c;
      }
    }
    throw new IllegalArgumentException("unknown device class \"" + text + "\"");
  }
}
